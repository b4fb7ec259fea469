"""Names code coerces into tensors: `if not isinstance(v, torch.Tensor): v = torch.tensor(v)`.

After the idiom `v` is a tensor on every path: the one its caller gave, or one made on the CPU
from a number or a list (so 0-dim, perhaps). Later statements may convert it where it is
(`if not v.dtype.is_floating_point: v = v.float()`), and nothing else may rebind it. A function
that returns such a name (`return v, eps, ext`, beside `return None, None, ext`) returns a tensor
at that position wherever it returns anything there but None:

    def check_val(val):
        if val is None:
            return None, None, 1.0
        if not isinstance(val, torch.Tensor):
            val = torch.tensor(val)
        return val, torch.finfo(val.dtype).eps, 1.0
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Optional

from devlint.analysis.names import ImportMap
from devlint.analysis.narrowing import type_test
from devlint.analysis.syntax import keyword_value, own_nodes, parameters_of
from devlint.analysis.torch_api import PLACEMENT_KEEPING_METHODS, SCALAR_CAPABLE_FACTORIES
from devlint.analysis.units import FunctionNode

_CONSTRUCTORS = SCALAR_CAPABLE_FACTORIES | {"torch.Tensor", "torch.FloatTensor"}


def cpu_data_constructor(call: ast.Call, names: ImportMap) -> bool:
    """`torch.tensor(low)`: a data constructor of torch given no `device=` (nor `**options`,
    which may hold one), so a CPU tensor made of a number or a list."""
    return (
        keyword_value(call, "device") is None
        and all(keyword.arg is not None for keyword in call.keywords)
        and names.qualified_syntax_name(call.func) in _CONSTRUCTORS
    )


def coerced_value(
    value: ast.expr,
    function: FunctionNode,
    index: int,
    names: ImportMap,
    functions: Mapping[str, FunctionNode],
) -> bool:
    """Whether ``value``, read by ``function.body[index]``, is a coerced tensor: a name coerced
    before it (see `tensor_from`), or what a helper returns coerced, called there
    (`self.low = check_val(low)`) or unpacked before (`low, eps = check_val(low)`). A helper is
    a function defined in ``function``'s body or one of ``functions``, the file's."""
    if isinstance(value, ast.Call):
        helper = _helper_called(value, function, functions)
        return helper is not None and ALONE in coerced_returns(helper, names)
    if not isinstance(value, ast.Name):
        return False
    if tensor_from(function.body, value.id, index, names):
        return True
    for earlier in range(index - 1, -1, -1):
        statement = function.body[earlier]
        position = _unpacked_position(statement, value.id)
        if position is not None:
            assert isinstance(statement, ast.Assign)
            helper = _helper_called(statement.value, function, functions)
            return helper is not None and position in coerced_returns(helper, names)
        if any(
            isinstance(node, ast.Name) and node.id == value.id and isinstance(node.ctx, ast.Store)
            for node in ast.walk(statement)
        ):
            return False
    return False


def _helper_called(
    call: ast.expr, function: FunctionNode, functions: Mapping[str, FunctionNode]
) -> Optional[FunctionNode]:
    """The function ``call`` calls by name (`check_val(low)`): one defined in ``function``'s
    body, else one of ``functions``."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    called = call.func.id
    nested = (
        candidate
        for candidate in function.body
        if isinstance(candidate, (ast.FunctionDef, ast.AsyncFunctionDef))
        and candidate.name == called
    )
    return next(nested, None) or functions.get(called)


def _unpacked_position(statement: ast.stmt, name: str) -> Optional[int]:
    """Where an assignment binds ``name`` from a call's result: `ALONE` for `name = f()`, the
    place in the tuple for `a, name = f()`."""
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.value, ast.Call)
    ):
        return None
    target = statement.targets[0]
    if isinstance(target, ast.Name):
        return ALONE if target.id == name else None
    if isinstance(target, ast.Tuple):
        for position, element in enumerate(target.elts):
            if isinstance(element, ast.Name) and element.id == name:
                return position
    return None


def coerced_name(statement: ast.stmt, names: ImportMap) -> Optional[str]:
    """The name an `if` coerces into a CPU tensor where it is no tensor: the test proves it is
    none in the body (`not isinstance(v, torch.Tensor)`, `not torch.is_tensor(v)`), which ends
    by rebinding it to a data constructor of torch given no `device=`, and there is no `else`."""
    if not isinstance(statement, ast.If) or statement.orelse:
        return None
    tested = type_test(statement.test)
    if tested is None or tested.tensor_if_true or not tested.tensor_if_false:
        return None
    last = statement.body[-1]
    if not (
        isinstance(last, ast.Assign)
        and len(last.targets) == 1
        and isinstance(last.targets[0], ast.Name)
        and last.targets[0].id == tested.name
        and isinstance(last.value, ast.Call)
        and cpu_data_constructor(last.value, names)
    ):
        return None
    return tested.name


def tensor_from(body: Sequence[ast.stmt], name: str, end: int, names: ImportMap) -> bool:
    """Whether ``name`` is a coerced tensor before ``body[end]``: a statement before it coerces
    the name, and those between only convert it where it is (`v = v.float()`)."""
    for index in range(end - 1, -1, -1):
        statement = body[index]
        if coerced_name(statement, names) == name:
            return True
        if not _keeps_placement(statement, name):
            return False
    return False


def _keeps_placement(statement: ast.stmt, name: str) -> bool:
    """Whether ``statement`` binds ``name`` only to a placement-keeping method of itself."""
    for node in ast.walk(statement):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False  # a nested scope may say `nonlocal`; nothing to gain reading it
        if (
            isinstance(node, ast.Name)
            and node.id == name
            and isinstance(node.ctx, ast.Store)
            and not _rebound_by_own_method(statement, node)
        ):
            return False
    return True


def _rebound_by_own_method(statement: ast.stmt, target: ast.Name) -> bool:
    """Whether ``target`` is bound by `name = name.method(...)`, a method keeping placement."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Assign) and node.targets == [target]:
            value = node.value
            return (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in PLACEMENT_KEEPING_METHODS
                and isinstance(value.func.value, ast.Name)
                and value.func.value.id == target.id
            )
    return False


# The position of a value returned alone (`return val`), not in a tuple.
ALONE = -1


def coerced_returns(function: FunctionNode, names: ImportMap) -> frozenset[int]:
    """The positions of the tuple ``function`` returns (`ALONE` for a value returned alone)
    that hold a coerced tensor of one of its parameters on every return but those giving None
    there. Every `return` must be a statement of the function's top level, or of the body of an
    `if` there (`if val is None: return None, None, ext`)."""
    parameters = {parameter.arg for parameter in parameters_of(function)}
    returns = [node for node in own_nodes(function) if isinstance(node, ast.Return)]
    placed = _top_level_index(function.body)
    found: Optional[set[int]] = None
    for returned in returns:
        index = placed.get(id(returned))
        if index is None:
            return frozenset()
        values = _returned_values(returned)
        if values is None:
            continue  # `return None`: nothing at any position
        here = {
            position
            for position, value in values.items()
            if (isinstance(value, ast.Constant) and value.value is None)
            or (
                isinstance(value, ast.Name)
                and value.id in parameters
                and tensor_from(function.body, value.id, index, names)
            )
        }
        found = here if found is None else found & here
    # A position that is None on every path holds no tensor.
    return frozenset(
        position
        for position in found or ()
        if any(
            isinstance((_returned_values(returned) or {}).get(position), ast.Name)
            for returned in returns
        )
    )


def _returned_values(returned: ast.Return) -> Optional[dict[int, ast.expr]]:
    """What a `return` gives at each position; None for `return` and `return None`."""
    value = returned.value
    if value is None or (isinstance(value, ast.Constant) and value.value is None):
        return None
    if isinstance(value, ast.Tuple):
        return dict(enumerate(value.elts))
    return {ALONE: value}


def _top_level_index(body: Sequence[ast.stmt]) -> dict[int, int]:
    """For a `return` of the top level, or the first statement of the body of a top-level
    `if` without `else` (nothing before it rebinds what it returns), the index of that
    top-level statement."""
    placed: dict[int, int] = {}
    for index, statement in enumerate(body):
        if isinstance(statement, ast.Return):
            placed[id(statement)] = index
        elif (
            isinstance(statement, ast.If)
            and not statement.orelse
            and isinstance(statement.body[0], ast.Return)
        ):
            placed[id(statement.body[0])] = index
    return placed
