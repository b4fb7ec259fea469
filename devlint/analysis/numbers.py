"""Which attributes of a module hold plain Python numbers, and which hold lists.

A module's configuration (`self.eps = eps`, `self.scale = dim ** -0.5`) is read in `forward`
beside its tensors: `self.eps * noise` keeps `noise` where it is. Without knowing that
`self.eps` is a number, an operation on it has an unknown result and the placement of
everything computed from it is lost.

Only what ``__init__`` shows counts: numeric literals, the parameters it shows to be numbers
(`parameters.numeric_parameters`), locals computed from those, and arithmetic,
`abs`/`int`/`float`/`round`/`min`/`max` and `math` functions of them.

A list is never a number: `torch.tensor(self.freqs)` of `self.freqs = [0.5, 1.0]` has a
dimension, where `torch.tensor(x)` of an unknown `x` may be a 0-dim tensor (which mixes with
tensors on any device).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from devlint.analysis.syntax import dotted_name, self_attribute
from devlint.analysis.units import FunctionNode

_NUMBER_FUNCTIONS = frozenset({"abs", "int", "float", "round", "min", "max", "pow"})
_LIST_FUNCTIONS = frozenset({"list", "tuple", "sorted"})


def is_number(node: ast.expr, numbers: set[str]) -> bool:
    """Whether ``node`` computes a plain number, given the names known to hold one."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float, bool)
    if isinstance(node, ast.Name):
        return node.id in numbers
    if isinstance(node, ast.UnaryOp):
        return not isinstance(node.op, ast.Not) and is_number(node.operand, numbers)
    if isinstance(node, ast.BinOp):
        return is_number(node.left, numbers) and is_number(node.right, numbers)
    if isinstance(node, ast.Call) and not node.keywords and node.args:
        name = dotted_name(node.func) or ""
        known = name in _NUMBER_FUNCTIONS or name.startswith("math.")
        return known and all(is_number(argument, numbers) for argument in node.args)
    return False


def is_list(node: ast.expr, lists: set[str]) -> bool:
    """Whether ``node`` makes a list or tuple, given the names known to hold one."""
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    if isinstance(node, ast.Name):
        return node.id in lists
    return isinstance(node, ast.Call) and dotted_name(node.func) in _LIST_FUNCTIONS


def number_attributes(init: FunctionNode, parameters: frozenset[str]) -> frozenset[str]:
    """`self.name` attributes the top level of ``init`` sets only to plain numbers, given the
    parameters that hold one (`parameters.numeric_parameters`)."""
    return _attributes_set_to(init, parameters, is_number)


def list_attributes(init: FunctionNode, parameters: frozenset[str]) -> frozenset[str]:
    """`self.name` attributes the top level of ``init`` sets only to lists or tuples, given
    the parameters annotated as one (`parameters.annotated_as_list`)."""
    return _attributes_set_to(init, parameters, is_list)


def _attributes_set_to(
    init: FunctionNode, parameters: frozenset[str], holds: Callable[[ast.expr, set[str]], bool]
) -> frozenset[str]:
    known = set(parameters)
    found: set[str] = set()
    other: set[str] = set()
    for statement in init.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target = statement.targets[0]
        held = holds(statement.value, known)
        if isinstance(target, ast.Name):
            (known.add if held else known.discard)(target.id)
            continue
        name = self_attribute(target)
        if name is not None:
            (found if held else other).add(name)
        else:
            other.update(_self_attributes_in(target))
    return frozenset(found - other - _assigned_below_top(init))


def _assigned_below_top(init: FunctionNode) -> set[str]:
    """Attributes ``init`` sets anywhere but in a plain top-level assignment."""
    names: set[str] = set()
    for statement in init.body:
        plain = isinstance(statement, ast.Assign) and len(statement.targets) == 1
        for node in ast.walk(statement):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign) and not (plain and node is statement):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                names.update(_self_attributes_in(target))
    return names


def _self_attributes_in(target: ast.expr) -> set[str]:
    return {name for part in ast.walk(target) if (name := self_attribute(part)) is not None}
