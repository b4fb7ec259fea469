"""The device checks PyTorch makes on a CUDA device, with PyTorch's own wording.

Each function receives an operator and its arguments as ``__torch_dispatch__`` sees them, where a
virtual tensor stands for a tensor on ``cuda:0``, and raises the ``RuntimeError`` a real GPU would
raise. Which check applies to which operator comes from ``device_rules`` (native_functions.yaml).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from devlint.runtime.device_rules import Check, OpRule, rule_for
from devlint.runtime.vgpu import shown

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

# The operators whose CUDA path checks input and weight types before anything else
# (`check_input_same_type_as_parameters` in ATen's Convolution.cpp).
CONVOLUTIONS = frozenset(
    {"convolution", "_convolution", "convolution_overrideable", "conv1d", "conv2d", "conv3d"}
)

# Python's spelling of tensor types in error messages (torch/csrc/Exceptions.cpp rewrites ATen's
# `CUDAFloatType` into `torch.cuda.FloatTensor`).
_LEGACY_NAMES = {
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


def _fail(message: str, operands: Sequence[torch.Tensor]) -> None:
    cpu = [tensor for tensor in operands if tensor.device.type == "cpu"]
    LAST_ERROR[:] = [DeviceErrorRecord(message, cpu)]
    raise RuntimeError(message)


def device_name(tensor: torch.Tensor, is_virtual: Callable[[torch.Tensor], bool]) -> str:
    return shown.name() if is_virtual(tensor) else str(tensor.device)


def type_name(tensor: torch.Tensor, is_virtual: Callable[[torch.Tensor], bool]) -> str:
    name = _LEGACY_NAMES.get(tensor.dtype, f"{tensor.dtype}Tensor".replace("torch.", ""))
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
            _fail(
                "Expected all tensors to be on the same device, but got "
                f"{operand.name} is on {device}, different from other tensors on {common} "
                f"(when checking argument in method {rule.method})",
                [other.tensor for other in outputs + inputs],
            )


def _iterator_group(
    operands: Sequence[_Operand], is_virtual: Callable[[torch.Tensor], bool]
) -> None:
    """TensorIteratorBase::compute_types: the first non-CPU device is common; 0-dim CPU inputs
    may mix with it, nothing else may."""
    devices = [device_name(operand.tensor, is_virtual) for operand in operands]
    common = next((device for device in devices if device != "cpu"), "cpu")
    for operand, device in zip(operands, devices):
        if device == common:
            continue
        scalar = not operand.is_output and device == "cpu" and operand.tensor.dim() == 0
        if common != "cpu" and scalar:
            continue
        _fail(
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
        operands.append([_Operand(argument.name, t, is_output) for t in _tensors(value)])
    if op_name(func).startswith("_foreach_"):
        # Foreach kernels fall back to one operation per index when devices differ.
        for group in zip(*(group for group in operands if group)):
            _iterator_group(sorted(group, key=lambda op: not op.is_output), is_virtual)
        return
    flat = [operand for group in operands for operand in group]
    _iterator_group(sorted(flat, key=lambda op: not op.is_output), is_virtual)


def check_convolution(args: Sequence[Any], is_virtual: Callable[[torch.Tensor], bool]) -> None:
    data, weight = args[0], args[1]
    bias = args[2] if len(args) > 2 else None
    where = [is_virtual(data), is_virtual(weight)]
    for role, parameter in (("weight", weight), ("bias", bias)):
        if not isinstance(parameter, torch.Tensor) or is_virtual(parameter) == where[0]:
            continue
        _fail(
            f"Input type ({type_name(data, is_virtual)}) and {role} type "
            f"({type_name(parameter, is_virtual)}) should be the same or input should be a "
            f"MKLDNN tensor and {role} is a dense tensor",
            [data, parameter],
        )


def check_packed_lengths(args: Sequence[Any], is_virtual: Callable[[torch.Tensor], bool]) -> None:
    """`_pack_padded_sequence` reads its lengths in host memory (ATen's PackedSequence.cpp)."""
    lengths = args[1] if len(args) > 1 else None
    if isinstance(lengths, torch.Tensor) and is_virtual(lengths):
        kind = _LEGACY_NAMES.get(lengths.dtype, str(lengths.dtype)).removesuffix("Tensor")
        _fail(
            "'lengths' argument should be a 1D CPU int64 tensor, but got "
            f"{lengths.dim()}D {shown.name()} {kind} tensor",
            [lengths],
        )


def check(
    func: torch._ops.OpOverload,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    is_virtual: Callable[[torch.Tensor], bool],
) -> Check:
    """Raise PyTorch's error when the operands' devices break the operator's rule; otherwise
    return the rule's kind (the caller runs composite operators through their kernel)."""
    name = op_name(func)
    if name.split(".", 1)[0] in CONVOLUTIONS:
        check_convolution(args, is_virtual)
        return Check.NONE
    rule = rule_for(name)
    if rule.check is Check.EXACT:
        check_exact(rule, func, args, kwargs, is_virtual)
    elif rule.check is Check.ITERATOR:
        check_iterator(func, args, kwargs, is_virtual)
    return rule.check
