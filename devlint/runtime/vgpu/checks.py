"""The device checks torchgen writes into CUDA kernels' wrappers, with PyTorch's own wording.

Each function receives an operator and its arguments as ``__torch_dispatch__`` sees them, where a
virtual tensor stands for a tensor on ``cuda:0``, and raises the ``RuntimeError`` a real GPU would
raise. Which check applies to which operator is ``operator_checks``' choice.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from devlint.runtime.device_rules import OpRule
from devlint.runtime.vgpu import shown

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

# Python's spelling of tensor types in error messages (torch/csrc/Exceptions.cpp rewrites ATen's
# `CUDAFloatType` into `torch.cuda.FloatTensor`).
LEGACY_NAMES = {
    torch.float32: "FloatTensor",
    torch.float64: "DoubleTensor",
    torch.float16: "HalfTensor",
    torch.bfloat16: "BFloat16Tensor",
    torch.int64: "LongTensor",
    torch.int32: "IntTensor",
    torch.int16: "ShortTensor",
    torch.int8: "CharTensor",
    torch.uint8: "ByteTensor",
    torch.bool: "BoolTensor",
}


@dataclass
class DeviceErrorRecord:
    """The last device error raised, with the CPU tensors it involved (for provenance)."""

    message: str
    cpu_operands: list[torch.Tensor] = field(default_factory=list)


LAST_ERROR: list[DeviceErrorRecord] = []  # at most one; a list so that it can be replaced


def fail(message: str, operands: Sequence[torch.Tensor]) -> None:
    cpu = [tensor for tensor in operands if tensor.device.type == "cpu"]
    LAST_ERROR[:] = [DeviceErrorRecord(message, cpu)]
    raise RuntimeError(message)


def device_name(tensor: torch.Tensor, is_virtual: Callable[[torch.Tensor], bool]) -> str:
    return shown.name() if is_virtual(tensor) else str(tensor.device)


def type_name(tensor: torch.Tensor, is_virtual: Callable[[torch.Tensor], bool]) -> str:
    name = LEGACY_NAMES.get(tensor.dtype, f"{tensor.dtype}Tensor".replace("torch.", ""))
    return f"torch.{shown.TYPE}.{name}" if is_virtual(tensor) else f"torch.{name}"


def op_name(func: torch._ops.OpOverload) -> str:
    """``add.Tensor``, ``addmm``: the key native_functions.yaml uses."""
    schema = func._schema
    base = schema.name.split("::", 1)[-1]
    return f"{base}.{schema.overload_name}" if schema.overload_name else base


@dataclass(frozen=True)
class _Operand:
    name: str
    tensor: torch.Tensor
    is_output: bool
    in_place: bool = False  # the operator writes into this argument (`add_`'s self)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, torch.Tensor):
                yield item


def _operands(
    func: torch._ops.OpOverload, args: Sequence[Any], kwargs: dict[str, Any]
) -> tuple[list[_Operand], list[_Operand]]:
    """(outputs, positional inputs) in schema order: the order the generated checks follow."""
    outputs, inputs = [], []
    for index, argument in enumerate(func._schema.arguments):
        value = args[index] if index < len(args) else kwargs.get(argument.name)
        is_output = argument.alias_info is not None and argument.alias_info.is_write
        for tensor in _tensors(value):
            operand = _Operand(argument.name, tensor, is_output)
            if is_output and argument.kwarg_only:
                outputs.append(operand)
            elif not argument.kwarg_only:
                inputs.append(operand)
    return outputs, inputs


def check_exact(
    rule: OpRule,
    func: torch._ops.OpOverload,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    is_virtual: Callable[[torch.Tensor], bool],
) -> None:
    """``c10::impl::check_and_update_common_device`` on outputs, then positional arguments."""
    outputs, inputs = _operands(func, args, kwargs)
    common: Optional[str] = None
    for operand in outputs + inputs:
        device = device_name(operand.tensor, is_virtual)
        if common is None:
            common = device
        elif device != common:
            fail(
                "Expected all tensors to be on the same device, but got "
                f"{operand.name} is on {device}, different from other tensors on {common} "
                f"(when checking argument in method {rule.method})",
                [other.tensor for other in outputs + inputs],
            )


def _check_in_place_shape(operands: Sequence[_Operand]) -> None:
    """TensorIteratorBase::compute_shape, which runs before the device check: an in-place
    operand cannot grow to the inputs' broadcast shape."""
    written = [operand.tensor for operand in operands if operand.in_place]
    if not written:
        return
    try:
        # (an index names positions: `index_fill_`'s does not broadcast with the data)
        shapes = [op.tensor.shape for op in operands if "index" not in op.name]
        broadcast = torch.broadcast_shapes(*shapes)  # type: ignore[no-untyped-call]
    except RuntimeError:
        return  # the operator itself says which sizes differ
    for tensor in written:
        if tensor.shape != broadcast:
            raise RuntimeError(
                f"output with shape {list(tensor.shape)} doesn't match the broadcast shape "
                f"{list(broadcast)}"
            )


# Operators that move their 0-dim CPU operands to the common device before iterating, so any
# number of them may mix (`torch.where(cond, 0.0-dim CPU tensor, ...)`, checked on an H200).
_ANY_CPU_SCALARS = frozenset({"where"})


def _iterator_group(
    operands: Sequence[_Operand],
    is_virtual: Callable[[torch.Tensor], bool],
    scalar_limit: Optional[int] = 1,
) -> None:
    """TensorIteratorBase::compute_types: the first non-CPU device is common; one 0-dim CPU
    input may mix with it (a second is "too many CPU scalars"), nothing else may."""
    _check_in_place_shape(operands)
    devices = [device_name(operand.tensor, is_virtual) for operand in operands]
    scalars = [
        not operand.is_output and device == "cpu" and operand.tensor.dim() == 0
        for operand, device in zip(operands, devices)
    ]
    common = next((device for device in devices if device != "cpu"), "cpu")
    cpu_scalars = 0
    for device, scalar in zip(devices, scalars):
        if device == common:
            continue
        if common != "cpu" and scalar:
            cpu_scalars += 1
            if scalar_limit is not None and cpu_scalars > scalar_limit:
                fail(
                    "Trying to pass too many CPU scalars to non-CPU kernel!",
                    [other.tensor for other in operands],
                )
            continue
        fail(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{common} and {device}!",
            [other.tensor for other in operands],
        )


def check_iterator(
    func: torch._ops.OpOverload,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    is_virtual: Callable[[torch.Tensor], bool],
) -> None:
    operands = []
    for index, argument in enumerate(func._schema.arguments):
        value = args[index] if index < len(args) else kwargs.get(argument.name)
        is_output = argument.alias_info is not None and argument.alias_info.is_write
        in_place = is_output and not argument.kwarg_only
        operands.append([_Operand(argument.name, t, is_output, in_place) for t in _tensors(value)])
    if op_name(func).startswith("_foreach_"):
        # Foreach kernels fall back to one operation per index when devices differ.
        for group in zip(*(group for group in operands if group)):
            _iterator_group(sorted(group, key=lambda op: not op.is_output), is_virtual)
        return
    flat = [operand for group in operands for operand in group]
    limit = None if op_name(func).split(".", 1)[0] in _ANY_CPU_SCALARS else 1
    _iterator_group(sorted(flat, key=lambda op: not op.is_output), is_virtual, limit)
