"""``torch.cuda`` on the virtual GPU: one device, available, with plausible answers.

Only the functions a training script or a test suite calls are replaced; the deprecated ones
(``memory_cached``, ``max_memory_cached``) are left in place, since they call the replacements
and so keep their ``FutureWarning``.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional

import torch

from devlint.runtime.vgpu import mode
from devlint.runtime.vgpu.tensor import LIVE

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

DEVICE_NAME = "devlint virtual GPU (CPU)"
TOTAL_MEMORY = 16 * 1024**3
_BLOCK = 2 * 1024**2  # the caching allocator reserves in 2 MiB blocks
_PEAKS = {"allocated": 0, "reserved": 0}


@dataclass(frozen=True)
class DeviceProperties:
    name: str = DEVICE_NAME
    major: int = 8
    minor: int = 0
    total_memory: int = TOTAL_MEMORY
    multi_processor_count: int = 1
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    warp_size: int = 32
    gcnArchName: str = "NVIDIA"


def _check_index(device: Any = None) -> int:
    if device is None:
        return 0
    index = device if isinstance(device, int) else torch.device(device).index or 0
    if isinstance(device, (str, torch.device)) and torch.device(device).type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {device}")
    if not 0 <= index < mode.DEVICE_COUNT:
        raise mode.invalid_ordinal()
    return index


def allocated_bytes() -> int:
    """Bytes held by live tensors on the virtual GPU, each storage counted once."""
    storages: dict[int, int] = {}
    for tensor in list(LIVE):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def memory_stats(device: Any = None) -> OrderedDict[str, int]:
    _check_index(device)
    allocated = allocated_bytes()
    reserved = -(-allocated // _BLOCK) * _BLOCK
    _PEAKS["allocated"] = max(_PEAKS["allocated"], allocated)
    _PEAKS["reserved"] = max(_PEAKS["reserved"], reserved)
    stats: OrderedDict[str, int] = OrderedDict()
    for name, current, peak in (
        ("allocated_bytes", allocated, _PEAKS["allocated"]),
        ("reserved_bytes", reserved, _PEAKS["reserved"]),
        ("active_bytes", allocated, _PEAKS["allocated"]),
    ):
        stats[f"{name}.all.current"] = current
        stats[f"{name}.all.peak"] = peak
    stats["num_alloc_retries"] = 0
    stats["num_ooms"] = 0
    return stats


def reset_peak_memory_stats(device: Any = None) -> None:
    _check_index(device)
    _PEAKS["allocated"] = _PEAKS["reserved"] = 0


def mem_get_info(device: Any = None) -> tuple[int, int]:
    reserved = memory_stats(device)["reserved_bytes.all.current"]
    return TOTAL_MEMORY - reserved, TOTAL_MEMORY


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    stats = memory_stats(device)
    return "\n".join(f"{key}: {value}" for key, value in stats.items())


class Event:
    """Timing events: wall-clock time, as a synchronous device would give."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, **_: Any) -> None:
        self._time: Optional[float] = None

    def record(self, stream: Any = None) -> None:
        self._time = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: Event) -> float:
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


class Stream:
    """A stream on a synchronous device: every operation has finished when it returns."""

    def __init__(self, device: Any = None, priority: int = 0, **_: Any) -> None:
        # The virtual GPU is the CUDA device here: naming it is the point.
        self.device = torch.device("cuda", _check_index(device))  # noqa: DEV001

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Optional[Event] = None) -> Event:
        event = event or Event()
        event.record(self)
        return event


class _DeviceContext:
    def __init__(self, device: Any) -> None:
        _check_index(device if device != -1 else None)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _noop() -> Any:
    """A fresh do-nothing function: torch._dynamo refuses one function object under two names."""

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    return nothing


def _constant(value: Any) -> Any:
    def answer(*args: Any, **kwargs: Any) -> Any:
        return value

    return answer


def replacements() -> dict[str, Any]:
    """``torch.cuda`` attribute -> what the virtual GPU answers."""
    stream = Stream()
    return {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "device_count": lambda: mode.DEVICE_COUNT,
        "current_device": lambda: 0,
        "set_device": _check_index,
        "get_device_name": lambda device=None: (_check_index(device), DEVICE_NAME)[1],
        "get_device_capability": lambda device=None: (_check_index(device), (8, 0))[1],
        "get_device_properties": lambda device=None: (_check_index(device), DeviceProperties())[1],
        "get_arch_list": lambda: ["sm_80"],
        "is_bf16_supported": lambda including_emulation=True: True,
        "init": _noop(),
        "_lazy_init": _noop(),
        "synchronize": lambda device=None: (_check_index(device), None)[1],
        "empty_cache": _noop(),
        "ipc_collect": _noop(),
        "memory_stats": memory_stats,
        "reset_peak_memory_stats": reset_peak_memory_stats,
        "reset_accumulated_memory_stats": _noop(),
        "mem_get_info": mem_get_info,
        "memory_summary": memory_summary,
        "manual_seed": _noop(),  # the virtual GPU draws from the CPU generator
        "manual_seed_all": _noop(),
        "seed": _noop(),
        "seed_all": _noop(),
        "initial_seed": lambda: torch.initial_seed(),
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "get_rng_state_all": lambda: [torch.get_rng_state()],
        "set_rng_state": _noop(),
        "set_rng_state_all": _noop(),
        "Event": Event,
        "Stream": Stream,
        "current_stream": lambda device=None: stream,
        "default_stream": lambda device=None: stream,
        "stream": lambda stream=None: contextlib.nullcontext(),
        "device": _DeviceContext,
        "_exchange_device": lambda device: 0,
        "_maybe_exchange_device": lambda device: 0,
    }


def install() -> None:
    import torch.cuda.memory
    import torch.cuda.random

    for name, value in replacements().items():
        setattr(torch.cuda, name, value)
        for module in (torch.cuda.memory, torch.cuda.random):
            if hasattr(module, name):  # functions there look their neighbours up by name
                setattr(module, name, value)
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        accelerator.current_accelerator = _constant(torch.device("cuda"))
        accelerator.device_count = _constant(mode.DEVICE_COUNT)
        accelerator.current_device_index = _constant(0)
        accelerator.is_available = _constant(True)
        accelerator.synchronize = _noop()
