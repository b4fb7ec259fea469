"""Library code that talks to the CUDA driver directly, given what a synchronous device offers.

``DataParallel`` scatters and gathers through ``torch._C._scatter`` (absent from a CPU build),
``DataLoader(pin_memory=True)`` pins pages, cuDNN is asked whether it accepts a tensor. Each is
replaced by the plain-torch equivalent: copies with ``.to()``, which the virtual GPU serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import torch

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True


def _device(index: Any) -> str:
    if index in (-1, "cpu") or (isinstance(index, torch.device) and index.type == "cpu"):
        return "cpu"
    if isinstance(index, (str, torch.device)):
        return f"cuda:{torch.device(index).index or 0}"
    return f"cuda:{index or 0}"


def scatter(
    tensor: torch.Tensor,
    devices: Optional[Sequence[Any]] = None,
    chunk_sizes: Optional[Sequence[int]] = None,
    dim: int = 0,
    streams: Any = None,
    *,
    out: Any = None,
) -> tuple[torch.Tensor, ...]:
    devices = list(devices or [0])
    chunks = (
        torch.split(tensor, list(chunk_sizes), dim)
        if chunk_sizes
        else tensor.chunk(len(devices), dim)
    )
    return tuple(chunk.to(_device(device)) for chunk, device in zip(chunks, devices))


def gather(
    tensors: Sequence[torch.Tensor], dim: int = 0, destination: Any = None, *, out: Any = None
) -> torch.Tensor:
    return torch.cat([tensor.to(_device(destination)) for tensor in tensors], dim)


def broadcast_coalesced(
    tensors: Sequence[torch.Tensor], devices: Sequence[Any], buffer_size: int = 0
) -> list[list[torch.Tensor]]:
    return [[tensor.to(_device(device)) for tensor in tensors] for device in devices]


def reduce_add_coalesced(
    inputs: Sequence[Sequence[torch.Tensor]], destination: Any = None, buffer_size: int = 0
) -> list[torch.Tensor]:
    target = _device(destination)
    return [torch.stack([t.to(target) for t in column]).sum(0) for column in zip(*inputs)]


def _patch_data_parallel() -> None:
    from torch.nn.parallel import _functions, comm

    comm.scatter = scatter
    comm.gather = gather
    comm.broadcast_coalesced = broadcast_coalesced
    comm.reduce_add_coalesced = reduce_add_coalesced
    # No side streams: the copies are synchronous.
    _functions._get_stream = lambda device: None


def _patch_data_loading() -> None:
    """DataLoader(pin_memory=True) pins nothing: there is no driver to pin pages with, and the
    pinning thread would call torch.set_num_threads(1), slowing (and changing the rounding of)
    the CPU arithmetic underneath the virtual GPU."""
    from torch.utils.data import dataloader

    original = dataloader._BaseDataLoaderIter.__init__

    def init_unpinned(self: Any, loader: Any) -> None:
        original(self, loader)
        self._pin_memory = False

    dataloader._BaseDataLoaderIter.__init__ = init_unpinned  # type: ignore[method-assign]


def install() -> None:
    _patch_data_parallel()
    _patch_data_loading()
    # cuDNN is absent; saying so quietly keeps RNN modules from warning that it is missing.
    torch.backends.cudnn.is_acceptable = lambda tensor: False
