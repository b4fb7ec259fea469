# torch's mode API carries no annotations.
# mypy: disable-error-code="no-untyped-call"
"""Re-running past a confirmed line: the device calls of chosen lines go to the CPU.

A script stops at its first crash ("Torch not compiled with CUDA enabled"), so the findings
after it would never run. ``confirm`` runs it again with that line patched: every torch call
made from the line (directly, or through ``Module.cuda()``, whose innermost frame of the
project is the line) is sent to the CPU: ``.cuda()`` becomes ``.cpu()``, a ``device=`` argument
naming an accelerator becomes ``"cpu"``, and so does ``.to()``'s device. The next crash then
shows the next finding.

This module imports torch: only a child process (``child``) imports it, and only when its job
names lines to patch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any, Callable, Optional

import torch
from torch.overrides import TorchFunctionMode

_CPU = torch.device("cpu")


def _accelerator(value: Any) -> bool:
    """Whether a device argument names something other than the CPU (an index means the
    current accelerator)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, str):
        value = value.split(":", 1)[0]
        return value not in ("cpu", "meta")
    if isinstance(value, torch.device):
        return value.type not in ("cpu", "meta")
    return False


class CpuPatch(TorchFunctionMode):
    """Sends to the CPU the torch calls whose innermost project frame is a patched line."""

    def __init__(self, root: str, lines: Iterable[tuple[str, int]]) -> None:
        super().__init__()
        self.root = os.path.realpath(root) + os.sep
        self.lines = {(os.path.join(self.root, path), line) for path, line in lines}

    def _patched(self) -> bool:
        frame: Optional[Any] = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(self.root):
                return (filename, frame.f_lineno) in self.lines
            frame = frame.f_back
        return False

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: Optional[dict[str, Any]] = None,
    ) -> Any:
        kwargs = dict(kwargs or {})
        if not self._patched():
            return func(*args, **kwargs)
        if func is torch.Tensor.cuda:
            return args[0].to(_CPU)
        if func is torch.Tensor.to and len(args) > 1 and _accelerator(args[1]):
            args = (args[0], _CPU, *args[2:])
        if _accelerator(kwargs.get("device")):
            kwargs["device"] = _CPU
        return func(*args, **kwargs)


def install(root: str, lines: Iterable[tuple[str, int]]) -> None:
    """For the rest of the process (the child runs one entry point, then exits)."""
    CpuPatch(root, lines).__enter__()
