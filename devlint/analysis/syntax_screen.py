"""Structural facts, read off CPython's syntax tree, that prove a device-flow rule cannot fire.

The text tests of `prefilter` admit nearly every file of model code: "device" and `torch.zeros`
occur everywhere. What the interpreter needs to report is stricter: a place where a value is put
on a device, and a tensor it places on the CPU. Both show in the tree the flow rules read anyway,
and one walk of it finds them: where no flow rule can fire, the interpreter does not run.

Each fact is a necessary condition read off `calls.py`: where the interpreter creates a device
or CPU placement, a fact here is set. The facts are deliberately loose (a factory call anywhere,
in any function, counts): they must never reject a file a rule would report on.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from devlint.analysis.prefilter import LOADER_NAME
from devlint.analysis.syntax import nodes_below
from devlint.analysis.torch_api import DEVICE_MOVES, FACTORY_NAMES


@dataclass(frozen=True)
class SyntaxFacts:
    # `.cuda(...)`, `.to(target)`, `device=` something other than None or "cpu", a "cuda" string.
    device_source: bool = False
    # A factory call without `device=` (or `**kwargs`, which may hold one), `.cpu()`, a "cpu"
    # string, a name like a data loader's.
    cpu_tensor_source: bool = False
    forward_method: bool = False  # `def forward`: its inputs are on the module's device
    discarded_move: bool = False  # a statement that is only `x.to(...)`, `x.cuda()` or `x.cpu()`


def syntax_facts(tree: ast.Module, source: str) -> SyntaxFacts:
    forward = discarded = imports_factory = False
    kind: type
    for statement in _statements(tree.body):  # a tenth of the nodes: looked at first
        kind = type(statement)
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            forward = forward or cast(ast.FunctionDef, statement).name == "forward"
        elif kind is ast.Expr:
            discarded = discarded or _is_move(cast(ast.Expr, statement).value)
        elif kind is ast.ImportFrom:
            imports_factory = imports_factory or _imports_factory(cast(ast.ImportFrom, statement))
    # A factory imported under another name (`zeros as z`, or `range`) makes calls no name test
    # recognises: the import alone counts. So does a loader's name (its batches are on the CPU).
    cpu = imports_factory or bool(LOADER_NAME.search(source))
    device = False
    for node in nodes_below(tree):
        kind = type(node)  # exact types: cheaper than isinstance in the screen's hot loop
        if kind is ast.Call:
            call = cast(ast.Call, node)
            device = device or _places_on_device(call)
            cpu = cpu or _creates_on_cpu(call)
        elif kind is ast.Constant:
            value = cast(ast.Constant, node).value
            if type(value) is str:
                device = device or value.startswith("cuda")
                cpu = cpu or value == "cpu"
        else:
            continue
        if device and cpu:
            break
    return SyntaxFacts(device, cpu, forward, discarded)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in a block, those in nested blocks too."""
    stack = list(body)
    while stack:
        statement = stack.pop()
        yield statement
        for field in _BLOCKS:
            block = getattr(statement, field, None)
            if block:
                stack.extend(block)
        parts: list[Any] = getattr(statement, "handlers", []) + getattr(statement, "cases", [])
        for part in parts:  # `except` clauses, `match` cases
            stack.extend(part.body)


_BLOCKS = ("body", "orelse", "finalbody")


def _method(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def _is_move(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _method(node) in DEVICE_MOVES


def _places_on_device(call: ast.Call) -> bool:
    method = _method(call)
    if method == "cuda" or (method == "to" and (call.args or call.keywords)):
        return True
    return any(
        keyword.arg == "device" and not _is_none_or_cpu(keyword.value) for keyword in call.keywords
    )


def _is_none_or_cpu(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in (None, "cpu")


def _creates_on_cpu(call: ast.Call) -> bool:
    if _method(call) == "cpu":
        return True
    func = call.func
    name = func.id if isinstance(func, ast.Name) and func.id != "range" else _method(call)
    if name not in FACTORY_NAMES:
        return False
    return not any(keyword.arg in ("device", None) for keyword in call.keywords)


def _imports_factory(node: ast.ImportFrom) -> bool:
    """`from torch import range`, `from torch import zeros as z`: calls no name test can spot."""
    return any(
        alias.name in FACTORY_NAMES and (alias.asname is not None or alias.name == "range")
        for alias in node.names
    )
