"""Tensors a module caches on a plain attribute, made on its inputs' device.

`self.mask = None` in `__init__`, then in `forward` (or a method it runs), under a condition that
never asks where the cached tensor is:

    if batch_size != self.last_batch_size:
        self.mask = make_mask(n, device=x.device)
    ... self.mask ...

`model.to(device)` moves parameters and buffers, not this attribute: after a move, `forward`
reuses the tensor on the old device until the condition happens to hold again. Only definite
evidence counts: the cache starts as `None`, the stored value names the input's device (a
`device=` argument, or a move, given `<tensor>.device` or a name holding it), a later read uses
the cached tensor, and nothing in the class reads its device, moves it or registers it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

from devlint.analysis.syntax import (
    dotted_name,
    keyword_value,
    last_name,
    nodes_below,
    self_attribute,
)
from devlint.analysis.units import FunctionNode

# Reads of a tensor that say where it is or put it elsewhere: a cache read so is checked.
_DEVICE_READS = frozenset({"device", "is_cuda", "get_device", "to", "cuda", "cpu", "type_as"})
_MOVES = frozenset({"to", "cuda", "type_as"})
# Functions that return the layer they are given (`torch.nn.utils.parametrizations`' too).
_LAYER_WRAPPERS = frozenset(
    {"weight_norm", "spectral_norm", "orthogonal", "remove_weight_norm", "deepcopy", "compile"}
)


@dataclass(frozen=True)
class CachedTensor:
    attribute: str
    initialised: ast.Assign  # `self.<attribute> = None` in `__init__`
    stored: ast.Assign  # the conditional store of a tensor made on the inputs' device
    read: ast.Attribute  # a use of the cached tensor in a method `forward` runs


def cached_tensors(
    init: FunctionNode, run_by_forward: Sequence[FunctionNode], class_body: Sequence[ast.stmt]
) -> list[CachedTensor]:
    """The attributes `__init__` sets to `None` that ``run_by_forward`` caches a tensor in,
    made on its inputs' device, under conditions that ignore devices."""
    found = []
    for attribute, initialised in _set_to_none(init).items():
        if _device_aware(attribute, class_body) or _stored_every_call(attribute, run_by_forward):
            continue
        store = _conditional_device_store(attribute, run_by_forward)
        read = _cached_read(attribute, run_by_forward)
        if store is not None and read is not None:
            found.append(CachedTensor(attribute, initialised, store, read))
    return found


def _set_to_none(init: FunctionNode) -> dict[str, ast.Assign]:
    stores: dict[str, ast.Assign] = {}
    for statement in init.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            name = self_attribute(statement.targets[0])
            value = statement.value
            if name and isinstance(value, ast.Constant) and value.value is None:
                stores.setdefault(name, statement)
    return stores


def _device_aware(attribute: str, class_body: Sequence[ast.stmt]) -> bool:
    """Whether the class reads the attribute's device, moves it, or registers it."""
    for statement in class_body:
        for node in nodes_below(statement):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in _DEVICE_READS
                and self_attribute(node.value) == attribute
            ):
                return True
            if isinstance(node, ast.Call) and _registers(node, attribute):
                return True
    return False


def _registers(call: ast.Call, attribute: str) -> bool:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    first = call.args[0] if call.args else None
    return (
        name in ("register_buffer", "register_parameter")
        and isinstance(first, ast.Constant)
        and first.value == attribute
    )


def _stored_every_call(attribute: str, run_by_forward: Sequence[FunctionNode]) -> bool:
    """A store at a method's top level: the tensor is made again on every call."""
    return any(
        isinstance(statement, ast.Assign) and _stores(statement, attribute)
        for method in run_by_forward
        for statement in method.body
    )


def _stores(statement: ast.Assign, attribute: str) -> bool:
    return any(self_attribute(target) == attribute for target in statement.targets)


def _conditional_device_store(
    attribute: str, run_by_forward: Sequence[FunctionNode]
) -> Optional[ast.Assign]:
    for method in run_by_forward:
        device_names = _device_holders(method)
        for statement, tests in _guarded_statements(method.body, ()):
            if (
                isinstance(statement, ast.Assign)
                and _stores(statement, attribute)
                and tests
                and not any(_may_ask_devices(test) for test in tests)
                and _made_on_a_device(statement.value, device_names)
                and not _registers_itself(statement.value)
            ):
                return statement
    return None


def _guarded_statements(
    body: Sequence[ast.stmt], tests: tuple[ast.expr, ...]
) -> Iterator[tuple[ast.stmt, tuple[ast.expr, ...]]]:
    """Each statement of ``body`` with the `if` tests it runs under (loops and `with` blocks
    add none; nested functions and `else` branches, whose condition is a test's negation, are
    not entered)."""
    for statement in body:
        yield statement, tests
        if isinstance(statement, ast.If):
            yield from _guarded_statements(statement.body, (*tests, statement.test))
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            yield from _guarded_statements(statement.body, tests)


def _may_ask_devices(test: ast.expr) -> bool:
    """A test that reads a device, or calls a method of the object, which may (`if not
    self._valid(x):`)."""
    for node in nodes_below(test):
        if isinstance(node, ast.Attribute) and node.attr in _DEVICE_READS:
            return True
        if isinstance(node, ast.Name) and "device" in node.id.lower():
            return True
        if isinstance(node, ast.Call) and dotted_name(node.func) == f"self.{last_name(node.func)}":
            return True
    return False


def _registers_itself(value: ast.expr) -> bool:
    """A layer or a parameter (`nn.Linear(...).to(x.device)`, `nn.Parameter(...)`), or a layer
    passed through a wrapper: stored on a module, it is registered, and `.to()` moves it."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _MOVES | {"float", "half", "double", "requires_grad_"}
    ):
        value = value.func.value
    if not isinstance(value, ast.Call):
        return False
    name = last_name(value.func)
    if name in _LAYER_WRAPPERS and value.args:
        # a layer's wrapper returns the layer: `weight_norm(nn.Linear(...))`, `spectral_norm`
        return _registers_itself(value.args[0])
    return name[:1].isupper() and not name.endswith("Tensor")


def _device_holders(method: FunctionNode) -> set[str]:
    """Local names a method assigns `<tensor>.device` (`device = x[0].device`)."""
    return {
        target.id
        for node in nodes_below(method)
        if isinstance(node, ast.Assign) and _is_a_device_read(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _is_a_device_read(value: ast.expr, device_names: set[str]) -> bool:
    if isinstance(value, ast.Attribute) and value.attr == "device":
        return dotted_name(value.value) != "self"  # a module's own `.device` is no input's
    return isinstance(value, ast.Name) and value.id in device_names


def _made_on_a_device(value: ast.expr, device_names: set[str]) -> bool:
    """A call given an input's device (`device=x.device`), or a move to one (`.to(device)`,
    `.type_as(x)`)."""
    for node in nodes_below(value):
        if not isinstance(node, ast.Call):
            continue
        given = keyword_value(node, "device")
        if given is not None and _is_a_device_read(given, device_names):
            return True
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if method in _MOVES and node.args:
            first = node.args[0]
            if method == "type_as" or _is_a_device_read(first, device_names):
                return True
    return False


def _cached_read(attribute: str, run_by_forward: Sequence[FunctionNode]) -> Optional[ast.Attribute]:
    """The first read of `self.<attribute>` that uses the tensor: not a store, nor a test
    against `None`."""
    for method in run_by_forward:
        tested = {
            id(side)
            for node in nodes_below(method)
            if isinstance(node, ast.Compare)
            for side in (node.left, *node.comparators)
        }
        reads = [
            node
            for node in nodes_below(method)
            if isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and self_attribute(node) == attribute
            and id(node) not in tested
        ]
        if reads:
            return min(reads, key=lambda read: (read.lineno, read.col_offset))
    return None
