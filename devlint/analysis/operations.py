"""The operand lists of tensor operations, shared by the rules that compare operand devices."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Optional

from devlint.analysis.flow import DeviceFlow
from devlint.analysis.syntax import no_elements
from devlint.analysis.torch_api import (
    OPERAND_KEYWORDS,
    OPERAND_METHODS,
    combines_operands,
    device_compared,
    refuses_cpu_scalars,
)
from devlint.analysis.values import (
    Kind,
    Placement,
    Value,
    Where,
    as_compared_by_device,
    made_by_factory,
    mismatch,
    sequence_items,
)


def operands(node: ast.AST, flow: DeviceFlow) -> list[tuple[ast.expr, Value]]:
    """The tensor operands of a binary operation, a comparison, an augmented assignment or a
    combining call."""
    if isinstance(node, ast.Call):
        return _call_operand_pairs(node, flow)
    if isinstance(node, ast.BinOp):
        parts: list[ast.expr] = [node.left, node.right]
    elif isinstance(node, ast.AugAssign):
        return _in_place(_read(flow, [node.target, node.value]))
    elif isinstance(node, ast.Compare):
        parts = [node.left, *node.comparators]
    else:
        return []
    return _read(flow, parts)


def _call_operand_pairs(call: ast.Call, flow: DeviceFlow) -> list[tuple[ast.expr, Value]]:
    qualified = flow.names.qualified_syntax_name(call.func)
    compared = device_compared(call, qualified or "")
    if compared:
        return _same_device(compared, flow)
    if combines_operands(qualified):
        parts = list(_call_operands(call))
    elif (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in OPERAND_METHODS
        and qualified is None
    ):
        # `a.lt(b)`, `a.masked_fill(mask, v)`: the receiver and its tensor arguments.
        parts = [call.func.value, *_call_operands(call)]
    else:
        return []
    pairs = _read(flow, parts)
    # `x.clamp(low, high)`, `x.masked_fill(mask, v)`: a 0-dim CPU tensor is no number there.
    refusing = refuses_cpu_scalars(call, qualified)
    if not refusing:
        return pairs
    return [
        (part, as_compared_by_device(value) if any(part is r for r in refusing) else value)
        for part, value in pairs
    ]


def _read(flow: DeviceFlow, parts: list[ast.expr]) -> list[tuple[ast.expr, Value]]:
    """A name a loop changes is read as on its first iteration, where that is known: a CPU
    accumulator meets the device on the first pass, even if the sum then moves it there; and
    as after an iteration that reset it on the CPU."""
    return [(part, iteration_value(flow, part)) for part in parts]


def iteration_value(flow: DeviceFlow, part: ast.expr) -> Value:
    """The value a loop's first iteration reads, or one after a reset on the CPU where the
    first iteration's is not on the CPU (a sum made on the device, reset on the CPU)."""
    first, later = flow.first_values.get(part), flow.later_values.get(part)
    if later is not None and (first is None or first.where is not Where.CPU):
        return later
    return first or flow.value_of(part)


def _same_device(compared: list[ast.expr], flow: DeviceFlow) -> list[tuple[ast.expr, Value]]:
    """`assert_close(actual, expected)`: a 0-dim CPU tensor fails it as much as any other."""
    return [(part, as_compared_by_device(value)) for part, value in _read(flow, compared)]


def _in_place(pairs: list[tuple[ast.expr, Value]]) -> list[tuple[ast.expr, Value]]:
    """`total += p.sum()`: the target is the output, which a 0-dim CPU tensor cannot be for an
    operand on a device (only a CPU scalar *input* mixes with other devices)."""
    (target, held), (operand, added) = pairs
    if not (held.kind is Kind.TENSOR and held.where is Where.CPU):
        return pairs
    if added.kind is not Kind.TENSOR or added.where not in (Where.DEVICE, Where.INPUT):
        return pairs
    return [(target, replace(held, scalar=False)), (operand, replace(added, scalar=False))]


def _call_operands(node: ast.Call) -> Iterator[ast.expr]:
    passed = [arg.value if isinstance(arg, ast.Starred) else arg for arg in node.args]
    passed.extend(keyword.value for keyword in node.keywords if keyword.arg in OPERAND_KEYWORDS)
    for value in passed:
        if isinstance(value, (ast.List, ast.Tuple)):
            yield from (item for item in value.elts if not isinstance(item, ast.Starred))
        elif not no_elements(value):  # `torch.empty([0])`, a placeholder for an unused weight
            yield value


def cpu_factory(value: Value, operand: ast.expr) -> Optional[ast.Call]:
    """The torch factory that made ``value`` on the CPU, where it is not ``operand`` itself:
    where `device=` goes, so where a finding about the operand is best reported."""
    origin = value.placement.origin
    if made_by_factory(value) and isinstance(origin, ast.Call) and origin is not operand:
        return origin
    return None


class Citations:
    """Evidence phrases for a message, each citing the line of the node it points at."""

    def __init__(self) -> None:
        self.nodes: list[ast.AST] = []

    def of(self, placement: Placement, fallback: str = "") -> str:
        evidence = placement.evidence or fallback
        if placement.origin is None or not evidence:
            return evidence
        return f"{evidence} at line {self.line_of(placement.origin)}"

    def line_of(self, node: ast.AST) -> str:
        """The placeholder for ``node``'s line in a message."""
        self.nodes.append(node)
        return f"{{line{len(self.nodes) - 1}}}"

    def cited(self) -> tuple[ast.AST, ...]:
        return tuple(self.nodes)


def where_text(placement: Placement) -> str:
    return (
        "the CPU"
        if placement.device == "" and placement.where.value == "cpu"
        else (f"`{placement.device}`" if placement.device else "a device")
    )


@dataclass(frozen=True)
class Mismatch:
    """A tensor on a device and a non-scalar CPU tensor among one operation's operands."""

    device_node: ast.expr
    device_value: Value
    cpu_node: ast.expr
    cpu_value: Value


def find_mismatch(pairs: list[tuple[ast.expr, Value]], proven: bool = False) -> Optional[Mismatch]:
    """The first tensor on a device and CPU tensor among the operands (see `mismatch`)."""
    found = mismatch((value for _, value in pairs), proven)
    if found is None:
        return None
    on_device, on_cpu = found
    device_node = next(part for part, value in pairs if value is on_device)
    cpu_node = next(part for part, value in pairs if value is on_cpu)
    return Mismatch(device_node, on_device, cpu_node, on_cpu)


def first_cpu_operand(
    pairs: list[tuple[ast.expr, Value]],
) -> Optional[tuple[ast.expr, Value]]:
    for node, value in pairs:
        if value.is_cpu_tensor():
            return node, value
    return None


def first_cpu_sequence(
    pairs: list[tuple[ast.expr, Value]],
) -> Optional[tuple[ast.expr, Value]]:
    """A tuple or list all of whose tensors are on the CPU (an LSTM's `(h0, c0)`), with the
    first of them."""
    for node, value in pairs:
        if value.kind is not Kind.SEQUENCE:
            continue
        items = sequence_items(value)
        if items and all(item.is_cpu_tensor() for item in items):
            return node, items[0]
    return None
