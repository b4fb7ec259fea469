from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.devices import argument
from devlint.analysis.prefilter import Confirmed, literal_led
from devlint.rules.base import Invalid, Rule

# An integer literal where a device goes: `device=0`, `torch.device(0)`, `.to(0)`.
_INTEGER_DEVICE_TEXT = Confirmed(
    literal_led(r"device\s*[=(]\s*\d", r"type\s*=\s*\d", r"to\s*\(\s*\d"),
    re.compile(r"(?:\bdevice\s*=|\bdevice\s*\(|\btype\s*=|\.\s*to\s*\()\s*\d"),
)

# Tensor methods that take a device: a move and the `new_*` factories (`.cuda(0)` is DEV001's).
_DEVICE_METHODS = frozenset({"to", "new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"})


class IntegerDevice(Rule):
    """
    ## What it does
    Flags an integer written as a device with no availability check around it:
    `torch.zeros(2, device=0)`, `x.to(0)`, `x.new_ones(3, device=0)`,
    `torch.device(0)`. The guards are DEV001's (`if torch.cuda.is_available():`,
    `if torch.accelerator.is_available():`, a device flag, an early exit...).
    `x.cuda(0)` is DEV001's, and the `torch.cuda` functions taking an index
    (`torch.cuda.set_device(0)`) are DEV014's.

    A rule of its own rather than part of DEV001: an integer names the *current
    accelerator*, whatever it is (CUDA, MPS, XPU), not CUDA, and DEV001's CUDA
    fix would change its meaning on a Mac.

    ## Why is this bad?
    On a machine without an accelerator (a CPU-only CI runner, a laptop) the call
    raises "Cannot access accelerator device when none is available"; even
    `torch.device(0)` on its own raises there.

    ## Example
    ```python
    x = torch.zeros(2, device=0)
    model.to(0)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.zeros(2, device=device)
    model.to(device)
    ```

    ## Fix safety
    No automatic fix: which device kind an integer meant (CUDA, MPS, XPU) depends
    on the machine, and the device-agnostic form depends on the torch version the
    project supports.
    """

    code = "DEV012"
    name = "integer-device"
    summary = "integer device (the current accelerator) with no availability check"
    trigger_tokens = ("device", ".to(", "new_")
    required_patterns = (_INTEGER_DEVICE_TEXT,)

    VALID = (
        "import torch\nif torch.cuda.is_available():\n    x = torch.zeros(2, device=0)",
        "import torch\nif torch.accelerator.is_available():\n    model.to(0)",
        "import torch\ndev = torch.device(0) if torch.cuda.is_available() else torch.device('cpu')",
        "import torch\nx = torch.zeros(2, device=device)",
        "x = x.to(device)",
        "x = x.cuda(0)",
        "import torch\ntorch.cuda.set_device(0)",
        "import torch\nprint(torch.cuda.memory_allocated(device=0))",
        "from transformers import pipeline\np = pipeline('text-generation', device=0)",
        "run(device=0)",
        "x = x.to(torch.float16)",
        "import torch\ndef to_gpu(x):\n    return x.to(0)",
    )
    INVALID = (
        Invalid("import torch\nx = torch.zeros(2, device=0)", 2, 20, "`device=0`"),
        Invalid("model = model.to(0)", 1, 9, "`model.to(0)`"),
        Invalid("import torch\ndev = torch.device(0)", 2, 7, "`torch.device(0)`"),
        Invalid("y = x.new_zeros(3, device=1)", 1, 20, "`device=1`"),
        Invalid("x = x.to(device=0, non_blocking=True)", 1, 10, "`device=0`"),
        Invalid("import torch as t\nx = t.tensor([1.0], device=0)", 2, 21),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.guards.guarded:
            return
        literal = self._integer_device(node)
        if literal is None:
            return
        reported: cst.CSTNode = literal
        if literal.keyword is None:
            reported = node  # `x.to(0)`, `torch.device(0)`: the whole call
            shown = f"`{self.context.source_of(node)}`"
        else:
            shown = f"`device={self.context.source_of(literal.value)}`"
        self.report(
            reported,
            f"{shown} names the current accelerator by its index: on a machine without one it "
            'raises "Cannot access accelerator device when none is available", and no '
            "availability check guards it; pass a device chosen at run time",
        )

    def _integer_device(self, node: cst.Call) -> Optional[cst.Arg]:
        """The argument that passes an integer literal as the device, if any."""
        func = node.func
        qualified = self.context.names.qualified_name(func)
        if qualified == "torch.device":
            found = argument(node, 0, "type")
        elif qualified is None and isinstance(func, cst.Attribute):
            if func.attr.value not in _DEVICE_METHODS:
                return None
            found = argument(node, 0, "device") if func.attr.value == "to" else None
            found = found or _keyword(node, "device")
        elif (
            qualified is not None
            and qualified.startswith("torch.")
            and not qualified.startswith("torch.cuda.")
        ):
            found = _keyword(node, "device")
        else:
            return None
        return found if found is not None and isinstance(found.value, cst.Integer) else None


def _keyword(node: cst.Call, keyword: str) -> Optional[cst.Arg]:
    return next((arg for arg in node.args if arg.keyword and arg.keyword.value == keyword), None)
