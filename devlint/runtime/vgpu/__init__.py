"""The ``vgpu`` profile: a virtual CUDA device on a CPU-only torch.

``install()`` makes ``torch.cuda.is_available()`` answer True and gives the process one GPU,
``cuda:0``, whose tensors hold real CPU tensors underneath: arithmetic is the CPU's, bit for bit,
while every device rule a real GPU enforces is enforced, with PyTorch's wording. It changes the
process for good (PyTorch's backend registration cannot be undone), so it runs in a child
process or in a test session started with ``pytest --vgpu``.

This package imports torch; nothing outside ``devlint.runtime`` may import it.
"""

# torch's backend registration APIs carry no annotations.
# mypy: disable-error-code="no-untyped-call"
from __future__ import annotations

import threading
from typing import Any

import torch
import torch.utils.backend_registration

from devlint.runtime.vgpu import compat, cuda_api, mode, mps_api, serialization, shown, tensor
from devlint.runtime.vgpu.checks import LAST_ERROR
from devlint.runtime.vgpu.tensor import (
    BACKEND,
    VirtualTensor,
    backend_fallback,
    copy_from,
    copy_from_and_resize,
    wrap,
)

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

__all__ = ["LAST_ERROR", "VirtualTensor", "install", "installed", "unavailable_reason", "wrap"]

_STATE: dict[str, Any] = {}


class _Guard(torch._C._acc.DeviceGuard):
    """A device guard with no-op streams and events: the device computes synchronously."""

    def type_(self) -> Any:
        return torch._C._autograd.DeviceType.PrivateUse1


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def has_primary_context(self, device_index: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True

    def is_available(self) -> bool:
        return True


class _DeviceModule:
    """``torch.vgpu``: what PyTorch asks a backend's module for."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def device_count() -> int:
        return mode.DEVICE_COUNT

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def is_initialized() -> bool:
        return True

    @staticmethod
    def _lazy_init() -> None:
        return None

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        return None

    @staticmethod
    def get_amp_supported_dtype() -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]


def installed() -> bool:
    return bool(_STATE)


def unavailable_reason() -> str:
    """Why the virtual GPU cannot run here, or "" when it can."""
    if torch.cuda.is_available():
        return "a real GPU is present: use the gpu profile"
    if not hasattr(torch._C, "_acc"):
        return f"torch {torch.__version__} has no Python backend registration (needs 2.5+)"
    if torch._C._get_privateuse1_backend_name() != "privateuseone":
        return "another PrivateUse1 backend is already registered in this process"
    return ""


def _register_backend() -> None:
    torch.utils.backend_registration.rename_privateuse1_backend(BACKEND)
    tensor.VIRTUAL = torch.device(BACKEND, 0)
    torch._register_device_module(BACKEND, _DeviceModule())
    hooks, guard = _Hooks(), _Guard()
    torch._C._acc.register_python_privateuseone_hook(hooks)
    torch._C._acc.register_python_privateuseone_device_guard(guard)
    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(backend_fallback, "PrivateUse1")
    kernels = torch.library.Library("aten", "IMPL")
    kernels.impl("_copy_from", copy_from, "PrivateUse1")
    kernels.impl("_copy_from_and_resize", copy_from_and_resize, "PrivateUse1")
    _STATE.update(hooks=hooks, guard=guard, libraries=(fallback, kernels))


def _patch_threads() -> None:
    """Modes are per thread: enter the mode in every thread the program starts, as a
    prefetching thread would need."""
    bootstrap = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap_in_mode(self: threading.Thread) -> None:
        with mode.VirtualCudaMode():
            bootstrap(self)

    threading.Thread._bootstrap_inner = bootstrap_in_mode  # type: ignore[attr-defined]


def install(kind: str = "cuda") -> None:
    """Turn this process's torch into one with a virtual GPU (idempotent): a CUDA device, or
    with ``kind="mps"`` an Apple GPU (no CUDA, no float64)."""
    if _STATE:
        return
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(f"devlint vgpu: {reason}")
    if kind not in shown.KINDS:
        raise ValueError(f"devlint vgpu: no {kind!r} device (one of {', '.join(shown.KINDS)})")
    shown.TYPE = kind
    _register_backend()
    # Module moves (`model.cuda()`) must swap each parameter in place: a wrapper cannot be
    # assigned to a CPU parameter's `.data`, and swapping keeps the optimizer's references.
    torch.__future__.set_swap_module_params_on_conversion(True)
    if kind == "mps":
        mps_api.install()
    else:
        cuda_api.install()
        serialization.install()
        compat.install()
    function_mode = mode.VirtualCudaMode()
    function_mode.__enter__()
    _patch_threads()
    _STATE["mode"] = function_mode
