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
from typing import Optional

from devlint.analysis.parameters import TENSOR_ONLY_ATTRIBUTES
from devlint.analysis.syntax import (
    dotted_name,
    keyword_value,
    nodes_below,
    own_nodes,
    self_attribute,
)
from devlint.analysis.torch_api import (
    WRAPPER_MODULES,
    is_torch_nn_class,
    nn_class_name,
    returns_one_tensor,
)
from devlint.analysis.units import FunctionNode

Qualify = Callable[[ast.expr], Optional[str]]

# Tensor-only methods whose result is one tensor (not a number, an array or a tuple).
_TENSOR_RESULT_METHODS = (TENSOR_ONLY_ATTRIBUTES | {"half", "bfloat16"}) - {
    "is_cuda", "numel", "dim", "numpy", "unbind",
}  # fmt: skip
_MAX_DEPTH = 4  # names followed back to what they were assigned
# torch functions (and `torch.nn.functional`'s) whose result is one tensor where their inputs
# are: not `split`, `max(dim=)`, `topk` (tuples) or `equal`, `allclose` (a bool).
_ONE_TENSOR_FUNCTIONS = frozenset(
    (
        "cat concat stack hstack vstack sigmoid tanh relu gelu silu softplus softmax "
        "log_softmax matmul mm bmm einsum flatten exp log sqrt abs clamp where add mul sub div "
        "neg pow transpose permute reshape squeeze unsqueeze cumsum dropout linear conv1d "
        "conv2d conv3d normalize interpolate pad layer_norm batch_norm group_norm embedding "
        "leaky_relu elu hardtanh logsigmoid"
    ).split()
)
# Layers `returns_one_tensor` lets through whose output is not one tensor of theirs.
_NOT_ONE_TENSOR = frozenset({"Identity", "LSTMCell", "FractionalMaxPool2d", "FractionalMaxPool3d"})
# What takes a result off the module's device, or out of torch: `forward` then says nothing of
# where its output lives.
_LEAVING_METHODS = frozenset({"cpu", "to", "cuda", "numpy", "tolist", "item", "type"})
_HOST_CONSTRUCTORS = frozenset({"torch.from_numpy", "torch.tensor", "torch.as_tensor"})


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
        value is not None
        and _surely_tensor(value, layers, assigned, qualify, 0)
        and not _leaves_the_device(value, assigned, qualify, 0)
        for value in returned
    )


def _leaves_the_device(
    value: ast.expr, assigned: dict[str, ast.expr], qualify: Qualify, depth: int
) -> bool:
    """Whether ``value`` (or a name it reads, followed back) moves or converts a tensor
    (`.cpu()`, `.to(...)`, `.numpy()`, `torch.from_numpy(...)`): where the output then lives
    is not the module's device. Unknown beyond the depth."""
    if depth > _MAX_DEPTH:
        return True
    for node in nodes_below(value):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _LEAVING_METHODS:
                return True
            if (qualify(func) or "") in _HOST_CONSTRUCTORS:
                return True
        elif (
            isinstance(node, ast.Name)
            and node.id in assigned
            and _leaves_the_device(assigned[node.id], assigned, qualify, depth + 1)
        ):
            return True
    return False


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
        # not a layer's own method: `self.fc.half()` returns the layer
        return self_attribute(func.value) not in layers and dotted_name(func.value) != "self"
    if self_attribute(func) in layers:
        return True
    qualified = qualify(func) or ""
    head, _, last = qualified.rpartition(".")
    return head in ("torch", "torch.nn.functional") and last in _ONE_TENSOR_FUNCTIONS


def _one_tensor_layers(init: FunctionNode, qualify: Qualify) -> frozenset[str]:
    """`self.fc = nn.Linear(...)` in ``init``, assigned there once: torch layers whose forward
    returns one tensor of theirs."""
    layers: set[str] = set()
    assigned: dict[str, int] = {}
    for node in nodes_below(init):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                name = self_attribute(target)
                if name is not None:
                    assigned[name] = assigned.get(name, 0) + 1
    for statement in init.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        name, value = self_attribute(statement.targets[0]), statement.value
        if name is None or not isinstance(value, ast.Call):
            continue
        if _one_tensor_layer(value, qualify(value.func) or ""):
            layers.add(name)
    return frozenset(name for name in layers if assigned.get(name) == 1)


def _one_tensor_layer(call: ast.Call, qualified: str) -> bool:
    return (
        is_torch_nn_class(qualified)
        and returns_one_tensor(qualified)
        and qualified not in WRAPPER_MODULES
        and nn_class_name(qualified) not in _NOT_ONE_TENSOR
        and keyword_value(call, "return_indices") is None
    )


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
