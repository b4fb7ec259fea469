"""Checkpoints on the virtual GPU: saved tagged ``cuda:0``, loaded back onto it.

``torch.save`` of a virtual tensor writes the checkpoint a GPU run writes (its storages tagged
``cuda:0``), so that loading it under the ``cpu-host`` profile fails as it does for a user
without a GPU. ``torch.load`` of such a checkpoint (or with ``map_location="cuda"``) restores the
storages on the CPU and wraps the tensors built on them.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import torch
import torch._utils
import torch.serialization

from devlint.runtime.vgpu import mode
from devlint.runtime.vgpu.tensor import SAVED_AS_CUDA, wrap

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

_LOADED_AS_CUDA: set[int] = set()
_PRIORITY = 5  # before the CPU tag (10) and CUDA's own (20)


def _pointer(storage: Any) -> int:
    # TypedStorage.data_ptr() warns that TypedStorage is deprecated; ask the untyped one.
    return int(getattr(storage, "_untyped_storage", storage).data_ptr())


def _tag(storage: Any) -> Optional[str]:
    if storage.device.type == "cpu" and _pointer(storage) in SAVED_AS_CUDA:
        return "cuda:0"
    return None


def _restore(storage: Any, location: str) -> Optional[Any]:
    if not location.startswith("cuda"):
        return None
    mode.map_device(location)  # refuses cuda:1 as a one-GPU machine does
    if _pointer(storage):
        _LOADED_AS_CUDA.add(_pointer(storage))
    return storage


def _rebuilding(original: Callable[..., torch.Tensor]) -> Callable[..., Any]:
    # A real function with the original's name: the weights-only unpickler lists its allowed
    # functions by `__name__`.
    @functools.wraps(original)
    def _rebuild_tensor(storage: Any, *args: Any) -> Any:
        tensor = original(storage, *args)
        if _pointer(storage) and _pointer(storage) in _LOADED_AS_CUDA:
            return wrap(tensor)
        return tensor

    return _rebuild_tensor


def _clearing(function: Callable[..., Any], marks: set[int]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        finally:
            marks.clear()  # data pointers are reused once the tensors are freed

    return wrapper


def install() -> None:
    torch.serialization.register_package(_PRIORITY, _tag, _restore)
    torch._utils._rebuild_tensor = _rebuilding(torch._utils._rebuild_tensor)
    torch.save = _clearing(torch.save, SAVED_AS_CUDA)
    torch.load = _clearing(torch.load, _LOADED_AS_CUDA)
