"""The machines a finding can be confirmed on, and what each rule's failure looks like there.

- ``cpu-host``: the real torch with no GPU visible (``CUDA_VISIBLE_DEVICES=""``): what a user
  without a GPU meets. It shows the rules that break *because* there is no GPU.
- ``vgpu``: a virtual CUDA device on a CPU-only torch (``devlint.runtime.vgpu``). It shows the
  rules that break only *on* a GPU: mixed devices, ``.numpy()`` on CUDA, a second GPU.
- ``gpu``: the real device, where ``torch.cuda.is_available()`` is really True. A run asked for
  ``vgpu`` on such a machine runs as ``gpu``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

CPU_HOST, VGPU, GPU = "cpu-host", "vgpu", "gpu"
PROFILES = (CPU_HOST, VGPU, GPU)

_SAME_DEVICE = (
    r"Expected all tensors to be on the same device"
    r"|should be the same or input should be a MKLDNN tensor"
    r"|module must have its parameters and buffers on device"
)


@dataclass(frozen=True)
class RuleRuntime:
    """How a rule's bug shows at run time."""

    profiles: tuple[str, ...]  # the profiles that can show it, best first
    error: Optional[re.Pattern[str]] = None  # PyTorch's message, matched on "Type: message"
    warning: Optional[str] = None  # or a warning category raised at the line
    provenance: Optional[str] = None  # or the failure's provenance names the finding's line


RULES: dict[str, RuleRuntime] = {
    "DEV001": RuleRuntime(
        (CPU_HOST,),
        re.compile(
            r"Torch not compiled with CUDA enabled|Cannot access accelerator device when none is"
            r" available|Found no NVIDIA driver|No CUDA GPUs are available"
        ),
    ),
    "DEV002": RuleRuntime((VGPU, CPU_HOST), warning="FutureWarning"),
    "DEV003": RuleRuntime(
        (VGPU, CPU_HOST),
        re.compile(r"AttributeError: '\w+' object has no attribute '(to|cuda|cpu)'"),
    ),
    "DEV004": RuleRuntime((VGPU,), re.compile(_SAME_DEVICE), provenance="moved_at"),
    "DEV005": RuleRuntime((VGPU,), re.compile(_SAME_DEVICE)),
    "DEV006": RuleRuntime((VGPU,), re.compile(_SAME_DEVICE)),
    "DEV007": RuleRuntime((VGPU,), re.compile(r"can't convert cuda(:\d+)? device type tensor")),
    "DEV008": RuleRuntime(
        (CPU_HOST,), re.compile(r"Attempting to deserialize object on a CUDA device")
    ),
    "DEV009": RuleRuntime((VGPU,), re.compile(_SAME_DEVICE), provenance="attributes"),
    "DEV010": RuleRuntime((VGPU,), re.compile(r"invalid device ordinal")),
}


def profiles_for(code: str) -> tuple[str, ...]:
    rule = RULES.get(code)
    return rule.profiles if rule else ()
