"""The torch-function mode that sends ``cuda`` to the virtual GPU.

It sees every call into torch's Python API before the C++ layer does: it rewrites CUDA devices
(``.cuda()``, ``.to("cuda:0")``, ``device="cuda"``) into the ``vgpu`` backend, refuses GPU
indices the virtual machine does not have, and gives the methods that C++ would answer with the
backend's name (``.numpy()``, ``.tolist()``) CUDA's behaviour and wording.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, Callable, Optional

import torch
from torch.overrides import TorchFunctionMode

from devlint.runtime.vgpu import shown
from devlint.runtime.vgpu import tensor as vt
from devlint.runtime.vgpu.tensor import BACKEND, VirtualTensor

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

DEVICE_COUNT = 1
_ORDINAL_MESSAGE = (
    "CUDA error: invalid device ordinal\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)

# Where tensors were moved to the GPU, keyed by the id of the CPU tensor that was moved: a
# mismatch on that CPU tensor later shows the move's result was thrown away (DEV004).
MOVES: dict[int, tuple[weakref.ref[torch.Tensor], tuple[str, int]]] = {}
USER_ROOTS: list[str] = []  # folders whose frames count as the user's code


def invalid_ordinal() -> RuntimeError:
    error_type = getattr(torch, "AcceleratorError", RuntimeError)
    return error_type(_ORDINAL_MESSAGE)


def _index(value: Any) -> Optional[int]:
    """The index a device argument names on the accelerator played (CUDA, or MPS), or None
    when it names another device."""
    if isinstance(value, str):
        if not value.startswith(shown.TYPE):
            return None
        value = torch.device(value)
    if isinstance(value, torch.device):
        return (value.index or 0) if value.type == shown.TYPE else None
    return None


def map_device(value: Any) -> Any:
    """``cuda``, ``cuda:0``, ``torch.device("cuda")`` -> the virtual device; others unchanged."""
    index = _index(value)
    if index is None:
        return value
    if index >= DEVICE_COUNT:
        raise invalid_ordinal()
    return vt.VIRTUAL


def _user_site() -> Optional[tuple[str, int]]:
    """The user's line that called ``.to()``/``.cuda()`` itself (not through Module.to)."""
    if not USER_ROOTS:
        return None
    frame = sys._getframe(4)  # _user_site <- _record_move <- handler <- mode <- the caller
    if frame.f_code.co_filename.startswith(tuple(USER_ROOTS)):
        return frame.f_code.co_filename, frame.f_lineno
    return None


def _record_move(tensor: Any) -> None:
    # Parameters are left alone: a weak reference would stop Module.to from swapping them.
    plain = isinstance(tensor, torch.Tensor) and not isinstance(tensor, VirtualTensor)
    if plain and not isinstance(tensor, torch.nn.Parameter):
        site = _user_site()
        if site is not None:
            MOVES[id(tensor)] = (weakref.ref(tensor), site)


def _to(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    args = (args[0], map_device(args[1]), *args[2:]) if len(args) > 1 else args
    if vt.VIRTUAL in args[1:] or kwargs.get("device") == vt.VIRTUAL:
        _record_move(args[0])
    return func(*args, **kwargs)


def _cuda(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if shown.TYPE != "cuda":  # a Mac's torch has no CUDA: the CPU-only build's error
        return func(*args, **kwargs)
    tensor, device = args[0], (args[1] if len(args) > 1 else kwargs.pop("device", None))
    if isinstance(device, int):
        device = f"cuda:{device}"
    map_device(device or "cuda")
    _record_move(tensor)
    kwargs.pop("device", None)
    return tensor.to(vt.VIRTUAL, *args[2:], **kwargs)


def _numpy(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    tensor = args[0]
    if isinstance(tensor, VirtualTensor) and not kwargs.get("force", False):
        raise TypeError(
            f"can't convert {shown.name()} device type tensor to numpy. Use Tensor.cpu() to "
            "copy the tensor to host memory first."
        )
    if isinstance(tensor, VirtualTensor):
        return tensor.detach().cpu().numpy()
    return func(*args, **kwargs)


def _via_cpu(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    tensor = args[0]
    if isinstance(tensor, VirtualTensor):
        return func(tensor.detach().cpu(), *args[1:], **kwargs)
    return func(*args, **kwargs)


def _pin_memory(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    tensor = args[0]
    if isinstance(tensor, VirtualTensor):
        raise RuntimeError(f"cannot pin '{tensor.type()}' only dense CPU tensors can be pinned")
    return tensor  # pinned memory needs a real driver; unpinned memory moves the same way


def _is_pinned(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return False


def _host_values(data: Any) -> Any:
    """Nested lists with each GPU tensor read back to the host, as `torch.tensor` reads them."""
    if isinstance(data, VirtualTensor):
        return data.detach().cpu()
    if type(data) is list or type(data) is tuple:
        return type(data)(_host_values(item) for item in data)
    return data


def _new_tensor(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`torch.tensor([a, b])`, `torch.as_tensor(...)`, `x.new_tensor(...)` of GPU scalars
    copy their values (C++ would meet the virtual backend with Python dispatch off)."""
    position = 1 if func is torch.Tensor.new_tensor else 0
    if len(args) > position and type(args[position]) in (list, tuple):
        args = (*args[:position], _host_values(args[position]), *args[position + 1 :])
    if type(kwargs.get("data")) in (list, tuple):
        kwargs = {**kwargs, "data": _host_values(kwargs["data"])}
    return func(*args, **kwargs)


_CTC_OPERANDS = ("log_probs", "targets", "input_lengths", "target_lengths")
_CTC_PARAMETERS = (*_CTC_OPERANDS, "blank", "reduction", "zero_infinity")


def _ctc_loss(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A GPU's CTC loss reads CPU lengths on the host and moves CPU targets to the GPU; ATen's
    path for tensor subclasses would mix them instead, so they move first."""
    named = {**dict(zip(_CTC_PARAMETERS, args)), **kwargs}
    if isinstance(named.get("log_probs"), VirtualTensor):
        for name in _CTC_OPERANDS[1:]:
            value = named.get(name)
            if isinstance(value, torch.Tensor) and not isinstance(value, VirtualTensor):
                named[name] = value.to(vt.VIRTUAL)
    return func(**named)


_HANDLERS: dict[Any, Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]] = {
    torch.nn.functional.ctc_loss: _ctc_loss,
    torch.tensor: _new_tensor,
    torch.as_tensor: _new_tensor,
    torch.Tensor.new_tensor: _new_tensor,
    torch.Tensor.to: _to,
    torch.Tensor.cuda: _cuda,
    torch.Tensor.numpy: _numpy,
    torch.Tensor.__array__: _numpy,
    torch.Tensor.tolist: _via_cpu,
    torch.Tensor.pin_memory: _pin_memory,
    torch.Tensor.is_pinned: _is_pinned,
}


def _check_generator(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A CPU generator draws for the CPU only (``check_generator`` in ATen)."""
    generator = kwargs.get("generator")
    if not isinstance(generator, torch.Generator) or generator.device.type != "cpu":
        return
    on_gpu = kwargs.get("device") == vt.VIRTUAL or any(
        isinstance(value, VirtualTensor) for value in (*args, *kwargs.values())
    )
    if on_gpu:
        raise RuntimeError(f"Expected a '{shown.TYPE}' device type for generator but found 'cpu'")


def _speak_cuda(error: BaseException) -> None:
    """C++ names the backend in some messages; a user on a GPU would read "cuda" there."""
    if error.args and isinstance(error.args[0], str) and BACKEND in error.args[0]:
        error.args = (error.args[0].replace(BACKEND, shown.TYPE), *error.args[1:])


class VirtualCudaMode(TorchFunctionMode):
    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: Optional[dict[str, Any]] = None,
    ) -> Any:
        kwargs = dict(kwargs or {})
        handler = _HANDLERS.get(func)
        try:
            if "device" in kwargs:
                kwargs["device"] = map_device(kwargs["device"])
            if "generator" in kwargs:
                _check_generator(args, kwargs)
            if handler is not None:
                return handler(func, args, kwargs)
            return func(*args, **kwargs)
        except (RuntimeError, TypeError, ValueError, AssertionError) as error:
            _speak_cuda(error)
            raise
