from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.call_screen import CallFacts
from devlint.analysis.devices import argument, cuda_literal, string_value
from devlint.analysis.statements import IndentTracker, own_statement
from devlint.context import FileContext, NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import Invalid, Rule

# The floating tensor types `set_default_tensor_type` accepts, and the dtype each stands for.
_DTYPES = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
}
_TYPE_NAME = re.compile(r"torch\.(cuda\.)?(\w+)\Z")


class DefaultTensorType(Rule):
    """
    ## What it does
    Flags `torch.set_default_tensor_type(...)`, deprecated since PyTorch 2.1, and
    a CUDA default device set with no availability check:
    `torch.set_default_tensor_type(torch.cuda.FloatTensor)` (or the string
    `"torch.cuda.FloatTensor"`) and `torch.set_default_device("cuda")`. A CPU type
    (`torch.DoubleTensor`) gets the deprecation advice alone. The guards are
    DEV001's.

    A rule of its own: the hazard is global (every tensor made afterwards, in any
    module, lands on CUDA), and its fix is two calls, not a device in scope.

    ## Why is this bad?
    On a machine without CUDA, `set_default_tensor_type` with a CUDA type raises
    "Torch not compiled with CUDA enabled", and after `set_default_device("cuda")`
    the first tensor made raises it. `set_default_tensor_type` itself warns and
    will be removed.

    ## Example
    ```python
    torch.set_default_tensor_type(torch.cuda.FloatTensor)
    ```

    ## Use instead
    ```python
    torch.set_default_dtype(torch.float32)
    torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")
    ```

    ## Fix safety
    A `set_default_tensor_type` call with a CUDA floating type, a line of its own,
    becomes `set_default_dtype` with that dtype and a `set_default_device` that
    falls back to the CPU without CUDA (plain `"cuda"` where a guard already
    holds): a **safe** fix, the replacement PyTorch's deprecation message names
    (torch 2.0 and later). `set_default_device("cuda")` keeps its literal under
    the guard: a **safe** fix. A CPU type is left to the author.
    """

    code = "DEV013"
    name = "default-tensor-type"
    summary = "set_default_tensor_type (deprecated) or an unguarded CUDA default device"
    fixable = True
    trigger_tokens = ("set_default_tensor_type", "set_default_device")

    @classmethod
    def may_fire_in_tree(cls, facts: CallFacts, source: str) -> bool:
        called = facts.called_functions | facts.called_methods
        return not called.isdisjoint(cls.trigger_tokens)  # the setters, however imported

    VALID = (
        "import torch\ntorch.set_default_dtype(torch.float32)",
        "import torch\ntorch.set_default_device('cuda' if torch.cuda.is_available() else 'cpu')",
        "import torch\nif torch.cuda.is_available():\n    torch.set_default_device('cuda')",
        "import torch\ntorch.set_default_device(device)",
        "import torch\ntorch.set_default_device('cpu')",
        "import mylib\nmylib.set_default_tensor_type(mylib.cuda.FloatTensor)",
    )
    INVALID = (
        Invalid(
            "import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)",
            2,
            1,
            "deprecated",
            fixed="import torch\ntorch.set_default_dtype(torch.float32)\n"
            'torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")',
        ),
        Invalid(
            "import torch as t\ndef setup():\n    t.set_default_tensor_type('torch.cuda.HalfTensor')",
            3,
            5,
            "CUDA",
            fixed="import torch as t\ndef setup():\n    t.set_default_dtype(t.float16)\n"
            '    t.set_default_device("cuda" if t.cuda.is_available() else "cpu")',
        ),
        Invalid(
            "import torch\nif torch.cuda.is_available():\n"
            "    torch.set_default_tensor_type(torch.cuda.FloatTensor)",
            3,
            5,
            "deprecated",
            fixed="import torch\nif torch.cuda.is_available():\n"
            '    torch.set_default_dtype(torch.float32)\n    torch.set_default_device("cuda")',
        ),
        Invalid(
            "import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)",
            2,
            1,
            "use `torch.set_default_dtype(torch.float64)`",
        ),
        Invalid(
            "import torch\ntorch.set_default_device('cuda')",
            2,
            26,
            "no availability check",
            fixed="import torch\ntorch.set_default_device('cuda' if torch.cuda.is_available() else 'cpu')",
        ),
        Invalid("import torch\nx = torch.set_default_tensor_type(torch.cuda.FloatTensor)", 2, 5),
    )

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        self._indents = IndentTracker(context.module)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._indents.enter(node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._indents.leave()

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.names.qualified_name(node.func)
        if qualified == "torch.set_default_tensor_type":
            self._tensor_type(node)
        elif qualified == "torch.set_default_device" and not self.context.guards.guarded:
            target = argument(node, 0, "device")
            if target is not None and cuda_literal(target.value) is not None:
                self.report(
                    target,
                    f"`set_default_device({self.context.source_of(target.value)})` puts every "
                    "later tensor on CUDA, which fails on a machine without it, and no "
                    "availability check guards it",
                    fix=self._device_fix(target.value),
                )

    def _tensor_type(self, node: cst.Call) -> None:
        target = argument(node, 0, "t")
        parsed = None if target is None else self._type_name(target.value)
        if parsed is None:
            return
        on_cuda, type_name = parsed
        dtype = _DTYPES.get(type_name)
        if dtype is None:
            return  # an integer type: torch refuses it outright
        if not on_cuda:
            self.report(
                node,
                "`set_default_tensor_type` is deprecated since PyTorch 2.1: use "
                f"`torch.set_default_dtype(torch.{dtype})`",
            )
            return
        unguarded = not self.context.guards.guarded
        danger = (
            " and puts every later tensor on CUDA with no availability check" if unguarded else ""
        )
        self.report(
            node,
            f"`set_default_tensor_type` with a CUDA type is deprecated since PyTorch 2.1{danger}: "
            f"use `torch.set_default_dtype(torch.{dtype})` and "
            '`torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")`',
            fix=self._tensor_type_fix(node, dtype, unguarded),
        )

    def _type_name(self, value: cst.BaseExpression) -> Optional[tuple[bool, str]]:
        """(on CUDA, type name) of `torch.cuda.FloatTensor` or `"torch.cuda.FloatTensor"`."""
        text = string_value(value)
        if text is None:
            text = self.context.names.qualified_name(value)
        match = _TYPE_NAME.match(text or "")
        return (match.group(1) is not None, match.group(2)) if match else None

    def _tensor_type_fix(self, node: cst.Call, dtype: str, unguarded: bool) -> Optional[RawFix]:
        torch = self.context.names.local_name_for("torch")
        if torch is None or not own_statement(self.context.current_statement(), node):
            return None
        device = f'"cuda" if {torch}.cuda.is_available() else "cpu"' if unguarded else '"cuda"'
        replacement = (
            f"{torch}.set_default_dtype({torch}.{dtype})\n"
            f"{self._indents.current}{torch}.set_default_device({device})"
        )
        return RawFix(
            Applicability.SAFE,
            "Use `set_default_dtype` and `set_default_device`",
            (NodeEdit.replace(node, replacement),),
        )

    def _device_fix(self, literal: cst.BaseExpression) -> Optional[RawFix]:
        torch = self.context.names.local_name_for("torch")
        if torch is None or string_value(literal) is None:
            return None
        code = self.context.module.code_for_node(literal)
        quote = code[-1]
        guarded = f"{code} if {torch}.cuda.is_available() else {quote}cpu{quote}"
        return RawFix(
            Applicability.SAFE,
            "Fall back to the CPU without CUDA",
            (NodeEdit.replace(literal, guarded),),
        )
