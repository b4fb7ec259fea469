"""Which device check each operator meets on a CUDA device, and the checks kernels write by hand.

Most operators meet a check torchgen generates (``checks``, chosen by ``device_rules`` from
native_functions.yaml). A few CUDA kernels check their operands themselves, with their own words,
before or instead of the generated check; those are here, each as a real GPU words it (recorded
on an H200 with torch 2.11 by ``bench/vgpu_parity``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Optional

import torch

from devlint.runtime.device_rules import Check, rule_for
from devlint.runtime.vgpu import shown
from devlint.runtime.vgpu.checks import (
    LEGACY_NAMES,
    check_exact,
    check_iterator,
    device_name,
    fail,
    op_name,
    type_name,
)

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

IsVirtual = Callable[[torch.Tensor], bool]

# The operators whose CUDA path checks input and weight types before anything else
# (`check_input_same_type_as_parameters` in ATen's Convolution.cpp).
CONVOLUTIONS = frozenset(
    {"convolution", "_convolution", "convolution_overrideable", "conv1d", "conv2d", "conv3d"}
)
# The kernels a CPU input's backend names, whose CUDA wrappers check devices first (recorded on
# an H200: a small, a dilated and a transposed convolution).
_SLOW_KERNELS = {
    "Slow2d": torch.ops.aten._slow_conv2d_forward.default,
    "SlowDilated2d": torch.ops.aten.slow_conv_dilated2d.default,
    "SlowTranspose2d": torch.ops.aten.slow_conv_transpose2d.default,
}
# Backends that run a CPU input through oneDNN, whose check also allows an MKLDNN input.
_MKLDNN_BACKENDS = frozenset({"Mkldnn", "MkldnnTranspose", "MkldnnEmpty"})


def _conv_backend(args: Sequence[Any]) -> str:
    """The backend ATen picks for a CPU input (``Slow2d``, ``Mkldnn``...), or "" if unknown.
    ``args`` are `convolution`'s (input, weight, bias, stride, padding, dilation, transposed,
    output_padding, groups) or `convNd`'s (input, weight, bias, stride, padding, dilation,
    groups)."""
    data, weight, bias = args[0], args[1], args[2] if len(args) > 2 else None
    spatial = data.dim() - 2

    def listed(index: int, default: int) -> list[int]:
        given = args[index] if len(args) > index else [default] * spatial
        return [given] * spatial if isinstance(given, int) else list(given)

    stride, padding, dilation = listed(3, 1), listed(4, 0), listed(5, 1)
    if len(args) > 8:
        transposed, output_padding, groups = args[6], listed(7, 0), args[8]
    else:
        transposed, output_padding, groups = False, [0] * spatial, args[6] if len(args) > 6 else 1
    try:
        backend = torch._C._select_conv_backend(
            data,
            getattr(weight, "_inner", weight),
            getattr(bias, "_inner", bias),
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
        )
    except (RuntimeError, TypeError, AttributeError):
        return ""
    return str(backend).rsplit(".", 1)[-1]


def check_convolution(args: Sequence[Any], is_virtual: IsVirtual) -> None:
    data, weight = args[0], args[1]
    bias = args[2] if len(args) > 2 else None
    on_gpu = is_virtual(data)
    for role, parameter in (("weight", weight), ("bias", bias)):
        if not isinstance(parameter, torch.Tensor) or is_virtual(parameter) == on_gpu:
            continue
        backend = "" if on_gpu else _conv_backend(args)
        slow = _SLOW_KERNELS.get(backend)
        if slow is not None:  # no type check: the CUDA wrapper's generated check speaks
            # each takes (self, weight, kernel_size, bias, ...)
            slow_args = (data, weight, (), bias)
            rule = rule_for(op_name(slow))
            check_exact(rule, slow, slow_args, {}, is_virtual)
        suffix = (
            f" or input should be a MKLDNN tensor and {role} is a dense tensor"
            if backend in _MKLDNN_BACKENDS
            else ""
        )
        fail(
            f"Input type ({type_name(data, is_virtual)}) and {role} type "
            f"({type_name(parameter, is_virtual)}) should be the same{suffix}",
            [data, parameter],
        )


def check_packed_lengths(args: Sequence[Any], is_virtual: IsVirtual) -> None:
    """`_pack_padded_sequence` reads its lengths in host memory (ATen's PackedSequence.cpp)."""
    lengths = args[1] if len(args) > 1 else None
    if isinstance(lengths, torch.Tensor) and is_virtual(lengths):
        kind = LEGACY_NAMES.get(lengths.dtype, str(lengths.dtype)).removesuffix("Tensor")
        fail(
            "'lengths' argument should be a 1D CPU int64 tensor, but got "
            f"{lengths.dim()}D {shown.name()} {kind} tensor",
            [lengths],
        )


def _check_masked_fill(args: Sequence[Any], is_virtual: IsVirtual) -> Check:
    """The mask is never a CPU scalar; a tensor value may be one (ATen's Indexing.cpp)."""
    target, mask = args[0], args[1]
    value = args[2] if len(args) > 2 else None
    target_device, mask_device = device_name(target, is_virtual), device_name(mask, is_virtual)
    if target_device != mask_device:
        fail(
            f"expected self and mask to be on the same device, but got mask on {mask_device} "
            f"and self on {target_device}",
            [target, mask],
        )
    if isinstance(value, torch.Tensor) and is_virtual(value) and not is_virtual(target):
        fail("masked_fill_: Expected inputs to be on same device", [target, value])
    return Check.NONE


def _check_index(args: Sequence[Any], is_virtual: IsVirtual) -> Check:
    """A CPU tensor takes CPU indices only; a GPU tensor takes either."""
    target, indices = args[0], args[1] if len(args) > 1 else ()
    if is_virtual(target):
        return Check.NONE
    if any(isinstance(index, torch.Tensor) and is_virtual(index) for index in indices):
        fail(
            "indices should be either on cpu or on the same device as the indexed tensor (cpu)",
            [target],
        )
    return Check.NONE


def _check_index_put(args: Sequence[Any], is_virtual: IsVirtual) -> Check:
    """Values are written through a TensorIterator: a 0-dim value from the other device mixes,
    no other does (into a GPU tensor from the CPU, or into a CPU tensor from the GPU)."""
    target = args[0]
    values = args[2] if len(args) > 2 else None
    if (
        isinstance(values, torch.Tensor)
        and is_virtual(values) != is_virtual(target)
        and values.dim() > 0
    ):
        fail(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{shown.name()} and cpu!",
            [target, values],
        )
    return Check.NONE


_KERNEL_CHECKS: dict[str, Callable[[Sequence[Any], IsVirtual], Check]] = {
    "masked_fill": _check_masked_fill,
    "masked_fill_": _check_masked_fill,
    "index": _check_index,
    "index_put": _check_index_put,
    "index_put_": _check_index_put,
    "_index_put_impl_": _check_index_put,
}


def check(
    func: torch._ops.OpOverload,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    is_virtual: IsVirtual,
) -> Check:
    """Raise PyTorch's error when the operands' devices break the operator's rule; otherwise
    return the rule's kind (the caller runs composite operators through their kernel)."""
    name = op_name(func)
    base = name.split(".", 1)[0]
    if base in CONVOLUTIONS:
        check_convolution(args, is_virtual)
        return Check.NONE
    kernel_check: Optional[Callable[[Sequence[Any], IsVirtual], Check]] = _KERNEL_CHECKS.get(base)
    if kernel_check is not None:
        return kernel_check(args, is_virtual)
    rule = rule_for(name)
    if rule.check is Check.EXACT:
        check_exact(rule, func, args, kwargs, is_virtual)
    elif rule.check is Check.ITERATOR:
        check_iterator(func, args, kwargs, is_virtual)
    return rule.check
