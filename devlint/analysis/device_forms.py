"""The device expression a fix writes, by the project's torch floor.

Every form runs on a CPU-only torch without a warning, and uses no API newer than
the floor:

- from torch 2.7: `torch.accelerator.current_accelerator(check_available=True) or
  torch.device("cpu")` (the check returns None where no accelerator is usable);
- torch 2.6: `torch.accelerator.current_accelerator() if torch.accelerator.is_available()
  else torch.device("cpu")`;
- torch 1.12 to 2.5: the CUDA, then MPS, then CPU chain (`torch.backends.mps` is there
  since 1.12);
- an unknown floor (an old torch is assumed), below 1.12, with `accelerators = "cuda"`, or
  in a file that uses float64 (which MPS lacks): CUDA, else the CPU. That form is valid on
  every torch and never picks a device the code was not written for.

A device held as a string (`device = "cuda"`) stays a string: `.type` of the accelerator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from devlint.torch_floor import CUDA_ONLY, DeviceStyle

# Longer single lines are written over several, so the fixed file keeps pycodestyle's E501.
_MAX_LINE = 79
_INDENT = "    "
_MPS_FLOOR = (1, 12)
_CHECKED_ACCELERATOR_FLOOR = (2, 7)
_ACCELERATOR_FLOOR = (2, 6)
_FLOAT64 = re.compile(r"\bfloat64\b|\bcomplex128\b|\.c?double\b")


@dataclass(frozen=True)
class DeviceForm:
    """An expression as parts joined by spaces; ``call`` wraps them (``torch.device(``)."""

    parts: tuple[str, ...]
    call: str = ""

    def one_line(self) -> str:
        joined = " ".join(self.parts)
        return f"{self.call}({joined})" if self.call else joined

    def written(self, prefix: str) -> str:
        """The expression after ``prefix`` (``device = ``), over several lines when long."""
        single = self.one_line()
        if len(prefix) + len(single) <= _MAX_LINE or len(self.parts) == 1:
            return single
        inner = "\n".join(_INDENT + part for part in self.parts)
        return f"{self.call}(\n{inner}\n)"


def picks_cuda_only(style: DeviceStyle, source: str) -> bool:
    """Whether fixes choose between CUDA and the CPU only: by the setting, a floor without MPS,
    or a file that uses float64, which MPS has not (the fix must not break it on a Mac)."""
    if style.accelerators == CUDA_ONLY or not style.floor.allows(_MPS_FLOOR):
        return True  # asked for, or a torch that may have no `torch.backends.mps`
    return _FLOAT64.search(source) is not None


def device_form(style: DeviceStyle, torch: str, cuda_only: bool, quote: str = '"') -> DeviceForm:
    """A `torch.device` value: the available accelerator, else the CPU."""
    cpu = f"{torch}.device({quote}cpu{quote})"
    if cuda_only:
        return DeviceForm(_cuda_chain(torch, quote, mps=None), f"{torch}.device")
    if style.floor.allows(_CHECKED_ACCELERATOR_FLOOR):
        return DeviceForm(
            (f"{torch}.accelerator.current_accelerator(check_available=True)", f"or {cpu}")
        )
    if style.floor.allows(_ACCELERATOR_FLOOR):
        return DeviceForm(
            (
                f"{torch}.accelerator.current_accelerator()",
                f"if {torch}.accelerator.is_available()",
                f"else {cpu}",
            )
        )
    return DeviceForm(_cuda_chain(torch, quote, _mps_test(torch)), f"{torch}.device")


def string_form(style: DeviceStyle, torch: str, cuda_only: bool, quote: str = '"') -> DeviceForm:
    """The same choice as a device string (`"cuda"`, `"mps"`, `"cpu"`)."""
    if cuda_only:
        return DeviceForm(_cuda_chain(torch, quote, mps=None))
    if style.floor.allows(_ACCELERATOR_FLOOR):
        return DeviceForm(
            (
                f"{torch}.accelerator.current_accelerator().type",
                f"if {torch}.accelerator.is_available()",
                f"else {quote}cpu{quote}",
            )
        )
    return DeviceForm(_cuda_chain(torch, quote, _mps_test(torch)))


def _mps_test(torch: str) -> str:
    return f"{torch}.backends.mps.is_available()"  # only written where the floor is 1.12 or above


def _cuda_chain(torch: str, quote: str, mps: Optional[str]) -> tuple[str, ...]:
    parts = [f"{quote}cuda{quote}", f"if {torch}.cuda.is_available()"]
    if mps is not None:
        parts += [f"else {quote}mps{quote}", f"if {mps}"]
    return (*parts, f"else {quote}cpu{quote}")
