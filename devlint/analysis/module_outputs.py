"""Which module classes of a file return one tensor from `forward`.

Calling a module of unknown code may give anything (a pipeline's images, a model's output object,
a tuple), so the flow treats its output as a tensor only once a tensor's own method proves it
(see `values.Value.module_output`). A class of the file shows what its `forward` returns: where
every `return` gives a tensor for certain (a tensor-only method's result, a torch function's, a
torch layer's that returns one tensor, arithmetic with one of those), `np.mean(model(x))` is
numpy on a tensor that lives where the model does.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Optional, Union

from devlint.analysis.parameters import TENSOR_ONLY_ATTRIBUTES
from devlint.analysis.summaries import own_nodes
from devlint.analysis.syntax import self_attribute
from devlint.analysis.torch_api import (
    COMBINING_FUNCTIONS,
    KEEPING_FUNCTIONS,
    is_torch_nn_class,
    returns_one_tensor,
)

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Qualify = Callable[[ast.expr], Optional[str]]

# Tensor-only methods whose result is one tensor (not a number, an array or a tuple).
_TENSOR_RESULT_METHODS = TENSOR_ONLY_ATTRIBUTES - {
    "device", "is_cuda", "numel", "dim", "numpy", "unbind", "requires_grad_",
}  # fmt: skip
_MAX_DEPTH = 4  # names followed back to what they were assigned


def forward_returns_tensor(
    forward: FunctionNode, init: Optional[FunctionNode], qualify: Qualify
) -> bool:
    """Whether every `return` of ``forward`` gives a tensor for certain."""
    returned = [node.value for node in _own_returns(forward)]
    if not returned or any(value is None for value in returned):
        return False
    layers = _one_tensor_layers(init, qualify) if init is not None else frozenset()
    assigned = _assigned_once(forward)
    return all(
        value is not None and _surely_tensor(value, layers, assigned, qualify, 0)
        for value in returned
    )


def _surely_tensor(
    value: ast.expr,
    layers: frozenset[str],
    assigned: dict[str, ast.expr],
    qualify: Qualify,
    depth: int,
) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(value, ast.BinOp):
        return any(
            _surely_tensor(side, layers, assigned, qualify, depth + 1)
            for side in (value.left, value.right)
        )
    if isinstance(value, ast.Name):
        held = assigned.get(value.id)
        return held is not None and _surely_tensor(held, layers, assigned, qualify, depth + 1)
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in _TENSOR_RESULT_METHODS:
        return True
    if self_attribute(func) in layers:
        return True
    return (qualify(func) or "") in KEEPING_FUNCTIONS | COMBINING_FUNCTIONS


def _one_tensor_layers(init: FunctionNode, qualify: Qualify) -> frozenset[str]:
    """`self.fc = nn.Linear(...)` in ``init``: torch layers whose forward returns one tensor."""
    layers: set[str] = set()
    for statement in init.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        name, value = self_attribute(statement.targets[0]), statement.value
        if name is None or not isinstance(value, ast.Call):
            continue
        qualified = qualify(value.func) or ""
        if is_torch_nn_class(qualified) and returns_one_tensor(qualified):
            layers.add(name)
    return frozenset(layers)


def _assigned_once(function: FunctionNode) -> dict[str, ast.expr]:
    """The names ``function`` assigns exactly once, each with its value."""
    values: dict[str, ast.expr] = {}
    counts: dict[str, int] = {}
    for node in own_nodes(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                values[target.id] = node.value
    return {name: value for name, value in values.items() if counts.get(name) == 1}


def _own_returns(function: FunctionNode) -> Iterator[ast.Return]:
    return (node for node in own_nodes(function) if isinstance(node, ast.Return))
