"""The operand lists of tensor operations, shared by the rules that compare operand devices."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devlint.analysis.flow import DeviceFlow
from devlint.analysis.torch_api import COMBINING_FUNCTIONS
from devlint.analysis.values import Placement, Value, mismatch


def operands(node: cst.CSTNode, flow: DeviceFlow) -> list[tuple[cst.BaseExpression, Value]]:
    """The tensor operands of a binary operation, an augmented assignment or a combining call."""
    if isinstance(node, cst.BinaryOperation):
        parts: list[cst.BaseExpression] = [node.left, node.right]
    elif isinstance(node, cst.AugAssign):
        parts = [node.target, node.value]
    elif isinstance(node, cst.Call) and flow.names.qualified_name(node.func) in COMBINING_FUNCTIONS:
        parts = list(_call_operands(node))
    else:
        return []
    return [(part, flow.value_of(part)) for part in parts]


def _call_operands(node: cst.Call) -> Iterator[cst.BaseExpression]:
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value not in ("input", "other", "tensors"):
            continue
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            for element in arg.value.elements:
                if not isinstance(element, cst.StarredElement):
                    yield element.value
        else:
            yield arg.value


class Citations:
    """Evidence phrases for a message, each citing the line of the node it points at."""

    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def of(self, placement: Placement, fallback: str = "") -> str:
        evidence = placement.evidence or fallback
        if placement.origin is None or not evidence:
            return evidence
        self.nodes.append(placement.origin)
        return f"{evidence} at line {{line{len(self.nodes) - 1}}}"

    def cited(self) -> tuple[cst.CSTNode, ...]:
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

    device_node: cst.BaseExpression
    device_value: Value
    cpu_node: cst.BaseExpression
    cpu_value: Value


def find_mismatch(pairs: list[tuple[cst.BaseExpression, Value]]) -> Optional[Mismatch]:
    found = mismatch(value for _, value in pairs)
    if found is None:
        return None
    on_device, on_cpu = found
    device_node = next(part for part, value in pairs if value is on_device)
    cpu_node = next(part for part, value in pairs if value is on_cpu)
    return Mismatch(device_node, on_device, cpu_node, on_cpu)


def first_cpu_operand(
    pairs: list[tuple[cst.BaseExpression, Value]],
) -> Optional[tuple[cst.BaseExpression, Value]]:
    for node, value in pairs:
        if value.is_cpu_tensor():
            return node, value
    return None
