"""``torch.backends.mps`` and ``torch.mps`` for the ``mps`` profile: one Apple GPU, available.

CUDA stays what the CPU-only build makes it (absent), as on a Mac. MPS has no float64: the
virtual device refuses it where a tensor is made (``tensor.wrap``), with MPS's own error.
"""

from __future__ import annotations

from typing import Any, Callable

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True


def _constant(value: Any) -> Callable[..., Any]:
    return lambda *args, **kwargs: value


def install() -> None:
    import torch.backends.mps
    import torch.mps

    for name in ("is_available", "is_built", "is_macos13_or_newer", "is_macos_or_newer"):
        if hasattr(torch.backends.mps, name):
            setattr(torch.backends.mps, name, _constant(True))
    for name in (
        "synchronize",
        "empty_cache",
        "manual_seed",
        "seed",
        "set_per_process_memory_fraction",
    ):
        if hasattr(torch.mps, name):
            setattr(torch.mps, name, _constant(None))
    for name in ("current_allocated_memory", "driver_allocated_memory", "recommended_max_memory"):
        if hasattr(torch.mps, name):
            setattr(torch.mps, name, _constant(0))
    if hasattr(torch.mps, "device_count"):
        torch.mps.device_count = _constant(1)
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        accelerator.current_accelerator = _constant(torch.device("mps"))
        accelerator.device_count = _constant(1)
        accelerator.current_device_index = _constant(0)
        accelerator.is_available = _constant(True)
        accelerator.synchronize = _constant(None)
