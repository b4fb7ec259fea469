"""How a file uses plain names: which it calls, which it reads, which its methods call.

The device flow takes a helper's callers at their word only when it has met every call the file
writes (see `flow.DeviceFlow._placed_by_callers`); these counts say how many there are, and a
helper only methods call runs after the classes, so that their calls are met first.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Optional, cast

from devlint.analysis.syntax import handed_over, nodes_below
from devlint.analysis.units import FunctionNode

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class NameUses:
    """How the file uses plain names (`helper(...)`, `Trainer(...)`, `self.post = helper`)."""

    calls: Counter[str]  # the calls of each name
    loads: Counter[str]  # every read of each name, calls included
    # the calls of each method name by `self.name(...)`, or `Cls.name(...)` of a class `Cls` of
    # the file (its static and class methods)
    self_calls: Counter[str]
    attributes: Counter[str]  # every `.name` read, whatever its object, calls included
    # The methods of the file's classes calling each name, once per call.
    method_callers: dict[str, list[FunctionNode]]


def name_uses(module: ast.Module, classes: Collection[str]) -> NameUses:
    """One walk of ``module``: its methods (the functions of its classes' bodies) apart."""
    uses = NameUses(Counter(), Counter(), Counter(), Counter(), {})
    for statement in module.body:
        if isinstance(statement, ast.ClassDef) and statement.name in classes:
            for written in (*statement.decorator_list, *statement.bases, *statement.keywords):
                _count_uses(written, uses, None, classes)
            for item in statement.body:
                method = item if isinstance(item, _FUNCTION_TYPES) else None
                _count_uses(item, uses, method, classes)
        else:
            _count_uses(statement, uses, None, classes)
    return uses


def _count_uses(
    tree: ast.AST, uses: NameUses, method: Optional[FunctionNode], classes: Collection[str]
) -> None:
    for node in nodes_below(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            uses.loads[node.id] += 1
        elif isinstance(node, ast.Attribute):
            uses.attributes[node.attr] += 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            uses.calls[node.func.id] += 1
            if method is not None:
                uses.method_callers.setdefault(node.func.id, []).append(method)
        elif isinstance(node, ast.Call) and handed_over(node) is not None:
            uses.calls[cast(ast.Name, node.args[0]).id] += 1  # `pool.submit(fn, x)` calls `fn`
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            if isinstance(receiver, ast.Name) and (receiver.id == "self" or receiver.id in classes):
                uses.self_calls[node.func.attr] += 1


def constructs(function: FunctionNode, classes: Collection[str]) -> bool:
    """Whether ``function`` calls one of ``classes`` by name."""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes
        for node in nodes_below(function)
    )
