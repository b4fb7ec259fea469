"""The devices a test runs on, and whether a statement runs for each of them.

A test parametrized over devices (``@pytest.mark.parametrize("device", ["cpu", "cuda"])``, or
``pytest.param("npu", marks=...)``) runs its body once per device. A ``.cuda()`` in that body
runs for the CPU or NPU case too, whatever skip marks the CUDA case carries: on a machine
without CUDA that case fails. This module reads the non-CUDA devices of such a test, and
whether a statement of its body runs in a given case: the branches of the ``if`` statements
around it, and the early exits before it, are evaluated with the parameter bound to the device.
A condition on anything else (``dtype == torch.double``) may go either way, so both branches
run for some case; a condition the reading cannot evaluate that is about devices
(``torch.cuda.is_available()``) stops it: precision first.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devlint.analysis.conditions import suite_exits
from devlint.analysis.devices import argument, string_value
from devlint.analysis.names import dotted_name

# Devices a test may be parametrized with that are not CUDA.
NON_CUDA_DEVICES = frozenset({"cpu", "mps", "xpu", "npu", "mlu", "hpu"})

Body = Sequence[cst.CSTNode]  # the statements of a block


@dataclass(frozen=True)
class DeviceCase:
    parameter: str  # "device"
    device: str  # "npu"


def device_cases(
    function: cst.FunctionDef, gpu_only: Callable[[cst.BaseExpression], bool]
) -> list[DeviceCase]:
    """The non-CUDA devices a test is parametrized with, one case per parameter and device;
    ``gpu_only``: whether a case (a `pytest.param` whose marks skip it without CUDA) runs
    only where CUDA is."""
    cases: list[DeviceCase] = []
    for decorator in function.decorators:
        marker = decorator.decorator
        if not isinstance(marker, cst.Call) or not is_parametrize(marker):
            continue
        names_arg, values_arg = argument(marker, 0, "argnames"), argument(marker, 1, "argvalues")
        if names_arg is None or values_arg is None:
            continue
        names = _argument_names(names_arg.value)
        if not isinstance(values_arg.value, (cst.List, cst.Tuple)):
            continue
        for index, name in enumerate(names):
            if "device" not in name:
                continue
            for element in values_arg.value.elements:
                if gpu_only(element.value):
                    continue
                value = _case_value(element.value, index, len(names))
                if value is not None and value in NON_CUDA_DEVICES:
                    cases.append(DeviceCase(name, value))
    return list(dict.fromkeys(cases))


def is_parametrize(marker: cst.Call) -> bool:
    dotted = dotted_name(marker.func) or ""
    return dotted.rpartition(".")[2] == "parametrize"


def _argument_names(node: cst.BaseExpression) -> list[str]:
    text = string_value(node)
    if text is not None:
        return [name.strip() for name in text.split(",")]
    if isinstance(node, (cst.List, cst.Tuple)):
        return [string_value(element.value) or "" for element in node.elements]
    return []


def _case_value(node: cst.BaseExpression, index: int, count: int) -> Optional[str]:
    """The device string a case passes for the parameter at ``index``: `"cpu"`,
    `pytest.param("cpu", marks=...)`, `torch.device("cpu")`, or a tuple's item."""
    if isinstance(node, cst.Call):
        callee = (dotted_name(node.func) or "").rpartition(".")[2]
        if callee == "param":
            values = [arg.value for arg in node.args if arg.keyword is None]
            if count == 1:
                return _device_string(values[0]) if values else None
            return _device_string(values[index]) if len(values) == count else None
    if count > 1:
        if isinstance(node, (cst.Tuple, cst.List)) and len(node.elements) == count:
            return _device_string(node.elements[index].value)
        return None
    return _device_string(node)


def _device_string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Call) and (dotted_name(node.func) or "").endswith("device"):
        first = argument(node, 0, "type")
        return None if first is None else string_value(first.value)
    return string_value(node)


class _Truth(enum.Enum):
    TRUE = "true"
    FALSE = "false"
    EITHER = "either"  # it depends on something other than devices
    UNKNOWN = "unknown"  # it depends on a device in a way not read here


_NOT = {
    _Truth.TRUE: _Truth.FALSE,
    _Truth.FALSE: _Truth.TRUE,
    _Truth.EITHER: _Truth.EITHER,
    _Truth.UNKNOWN: _Truth.UNKNOWN,
}


def runs_in_case(
    body: Body,
    target: cst.CSTNode,
    case: DeviceCase,
    about_devices: Callable[[cst.CSTNode], bool],
) -> bool:
    """Whether the statement ``target`` of ``body`` (at any depth) surely runs in ``case`` for
    some values of the test's other parameters. ``about_devices``: whether a condition is
    about devices (then one not evaluated here stops the reading)."""
    return _reaches(body, target, case, about_devices) is True


def _reaches(
    body: Body,
    target: cst.CSTNode,
    case: DeviceCase,
    about_devices: Callable[[cst.CSTNode], bool],
) -> Optional[bool]:
    """True where ``target`` is in ``body`` and runs in ``case``; False where it is in ``body``
    and cannot be shown to run; None where it is not in ``body``."""
    for statement in body:
        if statement is target:
            return True
        for test, block, when in _blocks(statement):
            found = _reaches(block, target, case, about_devices)
            if found is None:
                continue
            if not found or test is None:
                return found
            truth = _evaluate(test, case, about_devices)
            return truth is _Truth.EITHER or truth is when
        if not _may_pass(statement, case, about_devices):
            return False  # it exits in this case, or may: the target is not shown to run
    return None


def _may_pass(
    statement: cst.CSTNode, case: DeviceCase, about_devices: Callable[[cst.CSTNode], bool]
) -> bool:
    """Whether the code after ``statement`` runs in ``case`` for some values of the test's
    other parameters: an `if` that exits on one side, or an `assert`, may stop it."""
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, cst.Assert):
                truth = _evaluate(small.test, case, about_devices)
                if truth is not _Truth.TRUE and truth is not _Truth.EITHER:
                    return False
        return True
    if not isinstance(statement, cst.If):
        return True
    truth = _evaluate(statement.test, case, about_devices)
    if suite_exits(statement.body) and truth not in (_Truth.FALSE, _Truth.EITHER):
        return False
    orelse = statement.orelse
    exits_else = isinstance(orelse, cst.Else) and suite_exits(orelse.body)
    return not (exits_else and truth not in (_Truth.TRUE, _Truth.EITHER))


def _blocks(
    statement: cst.CSTNode,
) -> list[tuple[Optional[cst.BaseExpression], Body, _Truth]]:
    """The blocks of a compound statement, each with the test that leads into it (and the
    truth it needs), or None where no test does."""
    if isinstance(statement, cst.If):
        blocks: list[tuple[Optional[cst.BaseExpression], Body, _Truth]] = [
            (statement.test, statement.body.body, _Truth.TRUE)
        ]
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            blocks.append((statement.test, [orelse], _Truth.FALSE))
        elif isinstance(orelse, cst.Else):
            blocks.append((statement.test, orelse.body.body, _Truth.FALSE))
        return blocks
    if isinstance(statement, (cst.For, cst.While, cst.With)):
        return [(None, statement.body.body, _Truth.TRUE)]
    return []  # a `try` may catch what fails: left alone


def _evaluate(
    test: cst.BaseExpression, case: DeviceCase, about_devices: Callable[[cst.CSTNode], bool]
) -> _Truth:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _NOT[_evaluate(test.expression, case, about_devices)]
    if isinstance(test, cst.BooleanOperation):
        left = _evaluate(test.left, case, about_devices)
        right = _evaluate(test.right, case, about_devices)
        decisive = _Truth.FALSE if isinstance(test.operator, cst.And) else _Truth.TRUE
        if decisive in (left, right):
            return decisive
        if _Truth.UNKNOWN in (left, right):
            return _Truth.UNKNOWN
        return _Truth.EITHER if _Truth.EITHER in (left, right) else _NOT[decisive]
    compared = _compare(test, case)
    if compared is not None:
        return _Truth.TRUE if compared else _Truth.FALSE
    return _Truth.UNKNOWN if about_devices(test) else _Truth.EITHER


def _compare(test: cst.BaseExpression, case: DeviceCase) -> Optional[bool]:
    """`device == "cpu"`, `device != "cuda"`, `device in ("cpu", "mps")`, `"cuda" in device`
    with the parameter bound to the case's device; None for anything else."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    operator, right = target.operator, target.comparator
    left = test.left
    if isinstance(left, cst.Name) and left.value == case.parameter:
        if isinstance(operator, (cst.Equal, cst.NotEqual)):
            text = string_value(right)
            if text is None:
                return None
            return (case.device == text) == isinstance(operator, cst.Equal)
        if isinstance(operator, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List)):
            texts = [string_value(element.value) for element in right.elements]
            if None in texts:
                return None
            return (case.device in texts) == isinstance(operator, cst.In)
    if isinstance(right, cst.Name) and right.value == case.parameter:
        text = string_value(left)
        if text is not None and isinstance(operator, (cst.In, cst.NotIn)):
            return (text in case.device) == isinstance(operator, cst.In)
    return None
