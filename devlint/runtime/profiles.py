"""The machines a finding can be confirmed on, and what each rule's failure looks like there.

- ``cpu-host``: the real torch with no GPU visible (``CUDA_VISIBLE_DEVICES=""``): what a user
  without a GPU meets. It shows the rules that break *because* there is no GPU.
- ``vgpu``: a virtual CUDA device on a CPU-only torch (``devlint.runtime.vgpu``). It shows the
  rules that break only *on* a GPU: mixed devices, ``.numpy()`` on CUDA, a second GPU.
- ``mps``: a virtual Apple GPU (``mps:0``) on a CPU-only torch: ``torch.backends.mps`` says it is
  available, CUDA is absent as on a Mac, and float64 on the device fails with MPS's own error.
- ``gpu``: the real device, where ``torch.cuda.is_available()`` is really True. A run asked for
  ``vgpu`` on such a machine runs as ``gpu``.

``DEVICE_ERRORS`` is the one table of the device errors the profiles can show: which profile
shows each, and what it means. The rules' runtime checks (``RULES``) quote it; a static rule
with no entry in ``RULES`` (a rule newer than this table) is confirmed by it generically, by
the error at the finding's line; a crash at a line with no finding is explained by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

CPU_HOST, VGPU, MPS, GPU = "cpu-host", "vgpu", "mps", "gpu"
PROFILES = (CPU_HOST, VGPU, MPS, GPU)


@dataclass(frozen=True)
class DeviceError:
    """An error PyTorch raises for a device bug: its text, where it shows, what it means."""

    pattern: str  # matched on "Type: message"
    profile: str  # the profile that shows it
    meaning: str

    says: str = ""  # the message as PyTorch words it (its first form), for the documentation


_NO_CUDA = DeviceError(
    r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available"
    # a CPU-only build's missing CUDA bindings and dummy classes (`torch.cuda.set_device`, `Event`)
    r"|module 'torch\._C' has no attribute '_cuda_|Tried to instantiate dummy base class"
    r"|compiled without CUDA support|requires CUDA support",
    CPU_HOST,
    "CUDA is used on a machine without it",
    "Torch not compiled with CUDA enabled",
)
_NO_ACCELERATOR = DeviceError(
    r"Cannot access accelerator device when none is available",
    CPU_HOST,
    "an accelerator is used on a machine without one (an integer device such as `device=0` "
    "or `.to(0)` means the current accelerator; `pin_memory()` needs one too)",
    "Cannot access accelerator device when none is available.",
)
_NO_DEVICE = DeviceError(
    r"TypeError: device\(\) received an invalid combination of arguments - got \(NoneType\)",
    CPU_HOST,
    "`torch.device(None)`: `torch.accelerator.current_accelerator()` is None on a machine "
    "without an accelerator",
    "device() received an invalid combination of arguments - got (NoneType), ...",
)
# Every wording of a device mix a real GPU gave in `bench/vgpu_parity` (an H200, torch 2.11):
# the generated checks, TensorIterator's, and those kernels write by hand.
_SAME_DEVICE = DeviceError(
    r"Expected all tensors to be on the same device"
    r"|Input type \(torch\.cuda\.\w+\) and \w+ type \(torch\.\w+\) should be the same"
    r"|Input type \(torch\.\w+\) and \w+ type \(torch\.cuda\.\w+\) should be the same"
    r"|should be the same or input should be a MKLDNN tensor"
    r"|indices should be either on cpu or on the same device as the indexed tensor"
    r"|expected self and mask to be on the same device"
    r"|masked_fill_: Expected inputs to be on same device"
    r"|Trying to pass too many CPU scalars to non-CPU kernel"
    r"|Input and (parameter|hidden) tensors are not at the same device"
    r"|Expected query, key, and value to have the same device type"
    r"|attempting to assign a gradient with device type '\w+' to a tensor with device type"
    r"|module must have its parameters and buffers on device"
    r"|The values for attribute 'device' do not match",  # torch.testing.assert_close
    VGPU,
    "one operation mixes tensors on different devices",
    "Expected all tensors to be on the same device, but found at least two devices, ...",
)
_GENERATOR = DeviceError(
    r"Expected a '(cuda|mps)' device type for generator but found 'cpu'",
    VGPU,
    "a CPU `torch.Generator` draws numbers for a tensor on a GPU",
    "Expected a 'cuda' device type for generator but found 'cpu'",
)
_PIN_GPU_TENSOR = DeviceError(
    r"cannot pin 'torch\.(cuda|mps)\.\w+' only dense CPU tensors can be pinned",
    VGPU,
    "`pin_memory()` on a tensor already on a GPU",
    "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned",
)
_NUMPY = DeviceError(
    r"can't convert (cuda|mps)(:\d+)? device type tensor",
    VGPU,
    "a tensor on a GPU is converted to NumPy without `.cpu()`",
    "can't convert cuda:0 device type tensor to numpy. ...",
)
_PACKED_LENGTHS = DeviceError(
    r"'lengths' argument should be a 1D CPU int64 tensor, but got \d+D (cuda|mps)",
    VGPU,
    "`pack_padded_sequence` is given lengths on a GPU",
    "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor",
)
_ORDINAL = DeviceError(
    r"invalid device ordinal",
    VGPU,
    "a GPU index the machine does not have is used",
    "CUDA error: invalid device ordinal",
)
_CHECKPOINT = DeviceError(
    r"Attempting to deserialize object on a CUDA device",
    CPU_HOST,
    "a checkpoint saved on a GPU is loaded without `map_location` on a machine without one",
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.",
)
MPS_FLOAT64_MESSAGE = (
    "Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. "
    "Please use float32 instead."
)
_MPS_FLOAT64 = DeviceError(
    re.escape(MPS_FLOAT64_MESSAGE),
    MPS,
    "float64 on an MPS device, which has no float64",
    MPS_FLOAT64_MESSAGE,
)
DEVICE_ERRORS = (
    _NO_CUDA,
    _NO_ACCELERATOR,
    _NO_DEVICE,
    _SAME_DEVICE,
    _GENERATOR,
    _PIN_GPU_TENSOR,
    _NUMPY,
    _PACKED_LENGTHS,
    _ORDINAL,
    _CHECKPOINT,
    _MPS_FLOAT64,
)


def _any_of(*errors: DeviceError) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{error.pattern})" for error in errors))


def device_error(text: str) -> Optional[DeviceError]:
    """The device error a failure's "Type: message" is, if it is one."""
    return next((error for error in DEVICE_ERRORS if re.search(error.pattern, text)), None)


def patchable(text: str) -> bool:
    """Whether a failure is an accelerator missing, which a re-run can send to the CPU."""
    return bool(_any_of(_NO_CUDA, _NO_ACCELERATOR).search(text))


@dataclass(frozen=True)
class RuleRuntime:
    """How a rule's bug shows at run time."""

    profiles: tuple[str, ...]  # the profiles that can show it, best first
    error: Optional[re.Pattern[str]] = None  # PyTorch's message, matched on "Type: message"
    warning: Optional[str] = None  # or a warning category raised at the line
    provenance: Optional[str] = None  # or the failure's provenance names the finding's line


RULES: dict[str, RuleRuntime] = {
    "DEV001": RuleRuntime((CPU_HOST,), _any_of(_NO_CUDA, _NO_ACCELERATOR)),
    "DEV002": RuleRuntime((VGPU, CPU_HOST), warning="FutureWarning"),
    "DEV003": RuleRuntime(
        (VGPU, CPU_HOST),
        re.compile(r"AttributeError: '\w+' object has no attribute '(to|cuda|cpu)'"),
    ),
    "DEV004": RuleRuntime((VGPU,), _any_of(_SAME_DEVICE), provenance="moved_at"),
    "DEV005": RuleRuntime((VGPU,), _any_of(_SAME_DEVICE)),
    "DEV006": RuleRuntime((VGPU,), _any_of(_SAME_DEVICE)),
    "DEV007": RuleRuntime((VGPU,), _any_of(_NUMPY)),
    "DEV008": RuleRuntime((CPU_HOST,), _any_of(_CHECKPOINT)),
    "DEV009": RuleRuntime((VGPU,), _any_of(_SAME_DEVICE), provenance="attributes"),
    "DEV010": RuleRuntime((VGPU,), _any_of(_ORDINAL)),
    "DEV012": RuleRuntime((CPU_HOST,), _any_of(_NO_ACCELERATOR)),
    "DEV013": RuleRuntime((CPU_HOST,), _any_of(_NO_CUDA)),
    "DEV014": RuleRuntime((CPU_HOST,), _any_of(_NO_CUDA, _NO_ACCELERATOR)),
    "DEV015": RuleRuntime((CPU_HOST,), _any_of(_NO_DEVICE, _NO_ACCELERATOR)),
    "DEV016": RuleRuntime((MPS,), _any_of(_MPS_FLOAT64)),
    "DEV017": RuleRuntime((VGPU,), _any_of(_PACKED_LENGTHS)),
}
NO_RUNTIME_CHECK = frozenset({"DEV000"})  # a file that cannot be parsed cannot run either
RUNTIME_ERROR_CODE = "DEV900"  # the companion's own findings (``runtime_error``)

# A rule this table does not know (one newer than it) is confirmed by any device error at its
# line: under the profile its message names (MPS), else on the machine without a GPU.
_GENERIC = RuleRuntime((CPU_HOST, VGPU, MPS), _any_of(*DEVICE_ERRORS))
_GENERIC_MPS = RuleRuntime((MPS, CPU_HOST, VGPU), _any_of(*DEVICE_ERRORS))
_NAMES_MPS = re.compile(r"\bMPS\b|\bmps\b")


def runtime_of(code: str, message: str = "") -> Optional[RuleRuntime]:
    """How a finding's bug shows at run time; None where no run can show it."""
    if code in NO_RUNTIME_CHECK or code == RUNTIME_ERROR_CODE:
        return None
    known = RULES.get(code)
    if known is not None:
        return known
    return _GENERIC_MPS if _NAMES_MPS.search(message) else _GENERIC
