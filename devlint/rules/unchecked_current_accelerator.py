from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devlint.analysis.devices import argument
from devlint.context import FileContext, NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import Invalid, Rule
from devlint.traversal import child_nodes

_CURRENT = "torch.accelerator.current_accelerator"


@dataclass(frozen=True)
class _Pending:
    """A name bound to an unchecked `current_accelerator()`, not yet tested nor used."""

    assignment: cst.CSTNode
    call: cst.Call


def _names_in(node: cst.CSTNode) -> Iterator[str]:
    if isinstance(node, cst.Name):
        yield node.value
    for child in child_nodes(node):
        yield from _names_in(child)


class UncheckedCurrentAccelerator(Rule):
    """
    ## What it does
    Flags the result of `torch.accelerator.current_accelerator()` reaching a
    placement with no availability check: `torch.device(...)`, `.to(...)` or a
    `device=` argument, directly or through a name bound in the same function
    (`dev = torch.accelerator.current_accelerator()`, then `x.to(dev)`). It is
    silent where the result has a fallback (`... or torch.device("cpu")`), where
    the name is tested before its use (`if dev is None:`), and under an
    availability guard (`if torch.accelerator.is_available():`, DEV001's guards).

    ## Why is this bad?
    On a machine without an accelerator, `current_accelerator()` returns `None`
    (with `check_available=True` too): `torch.device(None)` raises `TypeError`,
    and `x.to(None)` or `device=None` silently keeps everything on the CPU,
    where the code meant the accelerator. On a CUDA build with no GPU (without
    `check_available=True`) it names a device that cannot be used.

    ## Example
    ```python
    device = torch.accelerator.current_accelerator()
    model.to(device)
    ```

    ## Use instead
    ```python
    device = (
        torch.accelerator.current_accelerator()
        if torch.accelerator.is_available()
        else torch.device("cpu")
    )
    model.to(device)
    ```

    ## Fix safety
    The call becomes `current_accelerator() if torch.accelerator.is_available()
    else torch.device("cpu")`: a **safe** fix (both exist since PyTorch 2.6,
    as `current_accelerator` itself), which changes nothing where an accelerator
    is there.
    """

    code = "DEV015"
    name = "unchecked-current-accelerator"
    summary = "current_accelerator() (None without an accelerator) used as a device unchecked"
    fixable = True
    trigger_tokens = ("current_accelerator",)

    VALID = (
        "import torch\ndev = torch.accelerator.current_accelerator() or torch.device('cpu')\n"
        "x = x.to(dev)",
        "import torch\n"
        "dev = torch.accelerator.current_accelerator(check_available=True) or torch.device('cpu')\n"
        "x = x.to(dev)",
        "import torch\nif torch.accelerator.is_available():\n"
        "    x = x.to(torch.accelerator.current_accelerator())",
        "import torch\ndev = torch.accelerator.current_accelerator()\n"
        "if dev is None:\n    dev = torch.device('cpu')\nx = x.to(dev)",
        "import torch\n"
        "dev = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
        "else 'cpu'\nx = x.to(dev)",
        "import torch\nprint(torch.accelerator.current_accelerator())",
        "import torch\ndev = torch.accelerator.current_accelerator()\ndef f(x):\n"
        "    return x.to(dev)",
        "import torch\ndev = torch.accelerator.current_accelerator()\ndev = 'cpu'\nx = x.to(dev)",
    )
    INVALID = (
        Invalid(
            "import torch\ndev = torch.accelerator.current_accelerator()\nmodel.to(dev)",
            3,
            10,
            "`dev` is `torch.accelerator.current_accelerator()` (line 2)",
            fixed="import torch\ndev = torch.accelerator.current_accelerator() if "
            'torch.accelerator.is_available() else torch.device("cpu")\nmodel.to(dev)',
        ),
        Invalid(
            "import torch\nd = torch.device(torch.accelerator.current_accelerator())",
            2,
            18,
            "TypeError",
            fixed="import torch\nd = torch.device(torch.accelerator.current_accelerator() if "
            'torch.accelerator.is_available() else torch.device("cpu"))',
        ),
        Invalid(
            "import torch as t\ndef make():\n"
            "    acc = t.accelerator.current_accelerator(check_available=True)\n"
            "    return t.zeros(3, device=acc)",
            4,
            30,
        ),
        Invalid(
            "from torch.accelerator import current_accelerator\nx = x.to(current_accelerator())",
            2,
            10,
        ),
    )

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        self._pending: dict[tuple[int, str], _Pending] = {}

    def _key(self, name: str) -> tuple[int, str]:
        function = self.context.scopes.current_function()
        return (0 if function is None else id(function), name)

    def _is_current(self, node: cst.BaseExpression) -> bool:
        return (
            isinstance(node, cst.Call) and self.context.names.qualified_name(node.func) == _CURRENT
        )

    # -- names bound to it, and forgotten once tested or rebound -------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            for name in _names_in(target.target):
                self._pending.pop(self._key(name), None)
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(node.value, cst.Call)
            and self._is_current(node.value)
            and not self.context.guards.guarded
        ):
            key = self._key(node.targets[0].target.value)
            self._pending[key] = _Pending(node, node.value)

    def _forget(self, expression: cst.CSTNode) -> None:
        for name in _names_in(expression):
            self._pending.pop(self._key(name), None)

    def visit_If(self, node: cst.If) -> None:
        self._forget(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._forget(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._forget(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._forget(node.test)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._forget(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._forget(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._forget(node.target)

    # -- placements ------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.guards.guarded:
            return
        target = self._placement(node)
        if target is None:
            return
        if self._is_current(target) and isinstance(target, cst.Call):
            self.report(
                target,
                f"`{self.context.source_of(target)}` is None on a machine without an "
                "accelerator: `torch.device(None)` raises TypeError and `.to(None)` stays on "
                "the CPU; check `torch.accelerator.is_available()` or give a fallback",
                fix=self._fix(target),
            )
            return
        if isinstance(target, cst.Name):
            pending = self._pending.pop(self._key(target.value), None)
            if pending is not None:
                self.report(
                    target,
                    f"`{target.value}` is `{self.context.source_of(pending.call)}` (line {{line0}}), "
                    "None on a machine without an accelerator: `torch.device(None)` raises "
                    "TypeError and `.to(None)` stays on the CPU; check "
                    "`torch.accelerator.is_available()` or give a fallback",
                    cited=(pending.assignment,),
                    fix=self._fix(pending.call),
                )

    def _placement(self, node: cst.Call) -> Optional[cst.BaseExpression]:
        """The expression a call places on, or builds a device from."""
        func = node.func
        found = None
        if self.context.names.qualified_name(func) == "torch.device":
            found = argument(node, 0, "type")
        elif isinstance(func, cst.Attribute) and func.attr.value == "to":
            found = argument(node, 0, "device")
        if found is None:
            found = next(
                (arg for arg in node.args if arg.keyword and arg.keyword.value == "device"), None
            )
        return None if found is None else found.value

    def _fix(self, call: cst.Call) -> Optional[RawFix]:
        torch = self.context.names.local_name_for("torch")
        if torch is None:
            return None
        code = self.context.module.code_for_node(call)
        guarded = f'{code} if {torch}.accelerator.is_available() else {torch}.device("cpu")'
        return RawFix(
            Applicability.SAFE,
            "Fall back to the CPU without an accelerator",
            (NodeEdit.replace(call, guarded),),
        )
