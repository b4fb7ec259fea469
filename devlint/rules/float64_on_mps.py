from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.call_screen import CallFacts
from devlint.analysis.devices import argument, string_value
from devlint.context import FileContext
from devlint.rules.base import Invalid, Rule

_FLOAT64_TEXT = re.compile(r"float64|double")  # `torch.float64`, `torch.double`, `.double()`

_FLOAT64 = frozenset({"torch.float64", "torch.double"})
_FLOAT64_METHODS = frozenset({"double"})
_FLOAT64_NAMES = frozenset({"float64", "double"})


class Float64OnMps(Rule):
    """
    ## What it does
    Flags float64 on a device that can be Apple's MPS: a device written as
    `"mps"`, or chosen by a chain that can pick it
    (`device = "mps" if torch.backends.mps.is_available() else "cpu"`, an
    `if`/`elif` chain, `torch.device(...)` of either), followed by a float64
    tensor on it: `torch.zeros(3, device=device, dtype=torch.float64)`,
    `x.to(device, torch.float64)`, `x.to(device).double()`,
    `x.double().to(device)`, `torch.tensor(v, dtype=torch.float64).to(device)`.
    The device is followed through names bound in the same function (or at module
    level); code under a condition on the device (`if device.type != "mps":`) is
    left alone. Only these direct shapes are reported: the device-flow analysis
    does not yet tell MPS from other devices.

    ## Why is this bad?
    MPS has no float64: on every Mac the call fails with "Cannot convert a MPS
    Tensor to float64 dtype as the MPS framework doesn't support float64",
    although the same script runs on CUDA and on the CPU.

    ## Example
    ```python
    device = "mps" if torch.backends.mps.is_available() else "cpu"
    x = torch.zeros(3, device=device, dtype=torch.float64)
    ```

    ## Use instead
    ```python
    device = "mps" if torch.backends.mps.is_available() else "cpu"
    x = torch.zeros(3, device=device, dtype=torch.float32)
    ```

    ## Fix safety
    No automatic fix: float32 changes the precision on every device, which only
    the author can accept.
    """

    code = "DEV016"
    name = "double-on-mps"
    summary = "float64 on a device that can be MPS, which has no float64"
    trigger_tokens = ("mps",)
    required_patterns = (_FLOAT64_TEXT,)

    @classmethod
    def may_fire_in_tree(cls, facts: CallFacts, source: str) -> bool:
        # Every MPS device it knows of is written "mps" or "mps:N"; float64 is `torch.float64`,
        # `torch.double` or `.double()`.
        return facts.mps_device and not facts.attribute_names.isdisjoint(_FLOAT64_NAMES)

    VALID = (
        "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
        "x = torch.zeros(3, device=device, dtype=torch.float32)",
        "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "x = torch.zeros(3, device=device, dtype=torch.float64)",
        "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
        "x = torch.zeros(3, dtype=torch.float64)",
        "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
        "if device != 'mps':\n    x = x.to(device).double()",
        "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
        "def f(x, device):\n    return x.to(device).double()",
        "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
        "y = x.to(device)\nz = x.double()",
        "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
        "x = x.to(device, dtype=dtype)",
    )
    INVALID = (
        Invalid(
            "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
            "x = torch.zeros(3, device=device, dtype=torch.float64)",
            3,
            41,
            "`device` can be MPS (line 2)",
        ),
        Invalid(
            "import torch\n"
            "if torch.cuda.is_available():\n    device = torch.device('cuda')\n"
            "elif torch.backends.mps.is_available():\n    device = torch.device('mps')\n"
            "else:\n    device = torch.device('cpu')\n"
            "def run(model, x):\n    return model(x.to(device).double())",
            9,
            18,
            "float64",
        ),
        Invalid("import torch\ny = x.double().to('mps')", 2, 5, "`'mps'`"),
        Invalid(
            "import torch as t\ndev = t.device('mps' if t.backends.mps.is_available() else 'cpu')\n"
            "w = t.tensor(v, dtype=t.double).to(dev)",
            3,
            5,
        ),
        Invalid(
            "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
            "x = x.to(device, torch.float64)",
            3,
            18,
        ),
    )

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        # (function id or 0, name) -> the assignment that can make the name "mps"
        self._mps_names: dict[tuple[int, str], cst.CSTNode] = {}

    def _function_key(self) -> int:
        function = self.context.scopes.current_function()
        return 0 if function is None else id(function)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._mps_source(node.value) is None:
            return
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._mps_names[(self._function_key(), target.target.value)] = node

    def _mps_source(self, node: cst.BaseExpression) -> Optional[cst.CSTNode]:
        """The node that shows ``node`` can be an MPS device: a literal or an assignment."""
        text = string_value(node)
        if text is not None:
            return node if text == "mps" or text.startswith("mps:") else None
        if isinstance(node, cst.IfExp):
            return self._mps_source(node.body) or self._mps_source(node.orelse)
        if isinstance(node, cst.Call):
            if self.context.names.qualified_name(node.func) != "torch.device":
                return None
            first = argument(node, 0, "type")
            return None if first is None else self._mps_source(first.value)
        if isinstance(node, cst.Name):
            local = self._mps_names.get((self._function_key(), node.value))
            if local is not None:
                return local
            if self._function_key() and self.context.scopes.binds_locally(node.value):
                return None  # a local (a parameter) hides the module's name
            return self._mps_names.get((0, node.value))
        return None

    def _is_float64(self, node: cst.BaseExpression) -> bool:
        return self.context.names.qualified_name(node) in _FLOAT64

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.guards.guarded:
            return
        found = self._float64_on_mps(node)
        if found is None:
            return
        reported, device = found
        source = self._mps_source(device)
        assert source is not None
        if isinstance(source, cst.Assign):
            where = f"`{self.context.source_of(device)}` can be MPS (line {{line0}})"
            cited: tuple[cst.CSTNode, ...] = (source,)
        else:
            where = f"`{self.context.source_of(device)}` is MPS"
            cited = ()
        self.report(
            reported,
            f"float64 on {where}: MPS has no float64, so this fails on every Mac "
            '("Cannot convert a MPS Tensor to float64 dtype"); use float32 there',
            cited=cited,
        )

    def _float64_on_mps(self, node: cst.Call) -> Optional[tuple[cst.CSTNode, cst.BaseExpression]]:
        """(what to report, the device) where the call makes or moves float64 onto MPS."""
        func = node.func
        device = _keyword(node, "device")
        dtype = _keyword(node, "dtype")
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            first = argument(node, 0, "device")
            second = argument(node, 1, "dtype")
            device = first.value if first is not None else device
            dtype = second.value if second is not None else dtype
            if device is not None and self._mps_source(device) is not None:
                if dtype is not None and self._is_float64(dtype):
                    return dtype, device
                if self._float64_value(func.value):
                    return node, device  # `x.double().to(device)`
            if device is not None and self._is_float64(device):
                # `x.to(mps).to(torch.float64)`: the first argument is the dtype here
                inner = self._moved_to_mps(func.value)
                if inner is not None:
                    return device, inner
            return None
        if isinstance(func, cst.Attribute) and func.attr.value in _FLOAT64_METHODS:
            inner = self._moved_to_mps(func.value)
            return (node, inner) if inner is not None else None
        if (
            device is not None
            and dtype is not None
            and self._is_float64(dtype)
            and self._mps_source(device) is not None
        ):
            return dtype, device
        return None

    def _moved_to_mps(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The device of `x.to(device)` when it can be MPS."""
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "to"
        ):
            first = argument(node, 0, "device")
            if first is not None and self._mps_source(first.value) is not None:
                return first.value
        return None

    def _float64_value(self, node: cst.BaseExpression) -> bool:
        """`x.double()`, `x.to(torch.float64)`, or a factory with `dtype=torch.float64`."""
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _FLOAT64_METHODS:
            return not node.args
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and len(node.args) == 1:
            return self._is_float64(node.args[0].value)
        dtype = _keyword(node, "dtype")
        qualified = self.context.names.qualified_name(func) or ""
        return qualified.startswith("torch.") and dtype is not None and self._is_float64(dtype)


def _keyword(node: cst.Call, keyword: str) -> Optional[cst.BaseExpression]:
    found = next((arg for arg in node.args if arg.keyword and arg.keyword.value == keyword), None)
    return None if found is None else found.value
