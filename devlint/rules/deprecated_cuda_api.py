from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

import libcst as cst

from devlint.analysis.call_screen import CallFacts
from devlint.analysis.names import dotted_name, names_imported_from
from devlint.context import NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import Invalid, Rule

if TYPE_CHECKING:
    from devlint.context import FileContext

_AUTOCAST = 'torch.amp.autocast("cuda", ...)'
_GRAD_SCALER = 'torch.amp.GradScaler("cuda", ...)'

# Pure renames: the fix writes the new name where the old one stood.
RENAMES: dict[str, str] = {
    "torch.cuda.memory_cached": "memory_reserved",
    "torch.cuda.memory.memory_cached": "memory_reserved",
    "torch.cuda.max_memory_cached": "max_memory_reserved",
    "torch.cuda.memory.max_memory_cached": "max_memory_reserved",
}
# What torch's own source marks `@deprecated` under torch.cuda, and what replaces it.
REPLACEMENTS: dict[str, str] = {
    "torch.cuda.memory_cached": "torch.cuda.memory_reserved",
    "torch.cuda.memory.memory_cached": "torch.cuda.memory_reserved",
    "torch.cuda.max_memory_cached": "torch.cuda.max_memory_reserved",
    "torch.cuda.memory.max_memory_cached": "torch.cuda.max_memory_reserved",
    "torch.cuda.amp.autocast": _AUTOCAST,
    "torch.cuda.amp.autocast_mode.autocast": _AUTOCAST,
    "torch.cuda.amp.custom_fwd": 'torch.amp.custom_fwd(..., device_type="cuda")',
    "torch.cuda.amp.custom_bwd": 'torch.amp.custom_bwd(..., device_type="cuda")',
    "torch.cuda.amp.GradScaler": _GRAD_SCALER,
    "torch.cuda.amp.grad_scaler.GradScaler": _GRAD_SCALER,
    "torch.cuda._set_allocator_settings": "torch._C._accelerator_setAllocatorSettings",
}
# What a name must end with, and pass through, to stand for one of them.
_DEPRECATED_NAMES = frozenset(name.rpartition(".")[2] for name in REPLACEMENTS)
# The `torch.cuda.amp` classes whose call becomes the `torch.amp` one with "cuda" first. Both
# subclasses pass their arguments on to it with "cuda" (torch 2.13): GradScaler keeps its
# positional order after the device; autocast's does not (enabled, dtype vs dtype, enabled), so
# only its keyword-only calls are rewritten.
AMP_CLASSES: dict[str, tuple[str, bool]] = {
    "torch.cuda.amp.autocast": ("autocast", False),
    "torch.cuda.amp.autocast_mode.autocast": ("autocast", False),
    "torch.cuda.amp.GradScaler": ("GradScaler", True),
    "torch.cuda.amp.grad_scaler.GradScaler": ("GradScaler", True),
}

# The torch that first has each `torch.amp` replacement.
AMP_SINCE: dict[str, tuple[int, int]] = {"autocast": (1, 10), "GradScaler": (2, 3)}


class DeprecatedCudaApi(Rule):
    """
    ## What it does
    Flags `torch.cuda` APIs that PyTorch marks as deprecated:
    `memory_cached` and `max_memory_cached` (renamed `memory_reserved` and
    `max_memory_reserved`), and `torch.cuda.amp.autocast`, `GradScaler`,
    `custom_fwd` and `custom_bwd` (replaced by their `torch.amp` versions
    taking the device type). Aliases are followed:
    `from torch.cuda import memory_cached as mc` is flagged at the import.

    ## Why is this bad?
    Each call emits a `FutureWarning`, and deprecated APIs are removed in
    later releases, breaking the code on upgrade.

    ## Example
    ```python
    print(torch.cuda.memory_cached(device=device))
    scaler = torch.cuda.amp.GradScaler()
    ```

    ## Use instead
    ```python
    print(torch.cuda.memory_reserved(device=device))
    scaler = torch.amp.GradScaler("cuda")
    ```

    ## Fix safety
    `memory_cached` and `max_memory_cached` are renamed `memory_reserved` and
    `max_memory_reserved`: a **safe** fix, for aliases too (`from torch.cuda
    import memory_cached as mc` has its import fixed and its call sites left as
    they are; a plain import is renamed together with its uses). The rename
    stays in `torch.cuda` whatever the project's torch floor: the device-agnostic
    `torch.accelerator.memory_reserved` raises "Cannot access accelerator device
    when none is available" on a CPU-only machine, where `torch.cuda`'s returns 0.
    A call `torch.cuda.amp.autocast(...)` becomes `torch.amp.autocast("cuda", ...)`
    and `torch.cuda.amp.GradScaler(...)` becomes `torch.amp.GradScaler("cuda", ...)`,
    decorators included: a **safe** fix, since in torch the old classes are thin
    subclasses that pass their arguments on with `"cuda"` (the one difference:
    `torch.cuda.amp.autocast()` pins float16 where `torch.amp.autocast("cuda")`
    takes the autocast dtype set with `torch.set_autocast_dtype`, float16 unless
    changed). `autocast` is fixed only where its arguments are all keywords
    (its positional order differs), and only where `torch` itself is imported.
    Names imported from `torch.cuda.amp` (`from torch.cuda.amp import autocast`),
    `custom_fwd` and `custom_bwd` are not fixed automatically. `torch.amp.GradScaler`
    exists from PyTorch 2.3 (the old one warns from 2.4), `torch.amp.autocast` from
    1.10: the `torch.amp` fixes are safe where the project's torch floor has the
    replacement, unsafe where no floor is declared, and not offered where the
    floor is older.
    """

    code = "DEV002"
    name = "deprecated-cuda-api"
    summary = "deprecated torch.cuda API"
    fixable = True
    trigger_tokens = (
        "memory_cached", "autocast", "GradScaler", "custom_fwd", "custom_bwd",
        "_set_allocator_settings",
    )  # fmt: skip

    @classmethod
    def may_fire_in_tree(cls, facts: CallFacts, source: str) -> bool:
        # Every name it reports resolves, through the file's imports, to `torch.cuda.<name>`.
        names = facts.attribute_names
        return "cuda" in names and not names.isdisjoint(_DEPRECATED_NAMES)

    VALID = (
        "import torch\ntorch.cuda.memory_reserved()",
        "import torch\ntorch.cuda.max_memory_reserved(device=device)",
        "import torch\nwith torch.amp.autocast('cuda'):\n    pass",
        "memory_cached = 3\nprint(memory_cached)",
        "import mylib\nmylib.cuda.memory_cached()",
        "from torch.cuda import memory_reserved as mr\nmr()",
        "import torch\nscaler = torch.amp.GradScaler('cuda')",
        "import torch\nwith torch.amp.autocast('cuda', enabled=False):\n    pass",
    )
    INVALID = (
        Invalid(
            "import torch\nprint(torch.cuda.memory_cached(device=device))",
            2,
            7,
            "renamed `torch.cuda.memory_reserved`",
            fixed="import torch\nprint(torch.cuda.memory_reserved(device=device))",
        ),
        Invalid("import torch as t\nt.cuda.max_memory_cached()", 2, 1, "max_memory_reserved"),
        Invalid("from torch import cuda\ncuda.memory_cached()", 2, 1),
        Invalid(
            "from torch.cuda import memory_cached as mc\nmc()\nmc()",
            1,
            24,
            fixed="from torch.cuda import memory_reserved as mc\nmc()\nmc()",
        ),
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler()",
            2,
            10,
            "GradScaler",
            fixed='import torch\nscaler = torch.amp.GradScaler("cuda")',
        ),
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler(2.0**10, enabled=use_amp)",
            2,
            10,
            fixed='import torch\nscaler = torch.amp.GradScaler("cuda", 2.0**10, enabled=use_amp)',
        ),
        Invalid(
            "import torch\n@torch.cuda.amp.autocast()\ndef f(): pass",
            2,
            2,
            "autocast",
            fixed='import torch\n@torch.amp.autocast("cuda")\ndef f(): pass',
        ),
        Invalid(
            "import torch as t\nwith t.cuda.amp.autocast(enabled=amp, dtype=t.bfloat16):\n    pass",
            2,
            6,
            fixed='import torch as t\nwith t.amp.autocast("cuda", enabled=amp, dtype=t.bfloat16):\n'
            "    pass",
        ),
        Invalid("import torch\nwith torch.cuda.amp.autocast(True):\n    pass", 2, 6, "autocast"),
        Invalid("import torch.cuda.amp as amp\nwith amp.autocast():\n    pass", 2, 6),
        Invalid("import torch\nctx = torch.cuda.amp.autocast\n", 2, 7),
    )

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        self._inside_import = 0
        self._attribute_names: set[int] = set()
        # A plain `from torch.cuda import memory_cached` and its uses are renamed together.
        self._plain_imports: dict[str, list[tuple[cst.CSTNode, cst.Name, str]]] = {}
        # The call each called function expression belongs to, for the `torch.amp` fixes.
        self._calls: dict[int, cst.Call] = {}

    def visit_Call(self, node: cst.Call) -> None:
        self._calls[id(node.func)] = node

    def visit_Import(self, node: cst.Import) -> None:
        self._inside_import += 1
        for alias in node.names:
            module = dotted_name(alias.name)
            if module in REPLACEMENTS:
                self._report_use(alias, module, None)

    def leave_Import(self, original_node: cst.Import) -> None:
        self._inside_import -= 1

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._inside_import += 1
        for alias, qualified in names_imported_from(node):
            if qualified not in REPLACEMENTS or not isinstance(alias.name, cst.Name):
                continue
            if alias.asname is None:
                self._plain_imports.setdefault(alias.name.value, []).append(
                    (alias, alias.name, qualified)
                )
            else:
                self._report_use(alias, qualified, alias.name)

    def leave_ImportFrom(self, original_node: cst.ImportFrom) -> None:
        self._inside_import -= 1

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._attribute_names.add(id(node.attr))
        if self._inside_import:
            return
        qualified = self.context.names.qualified_name(node)
        if qualified in REPLACEMENTS:
            self._report_use(node, qualified, node.attr, amp_call=self._calls.get(id(node)))

    def visit_Name(self, node: cst.Name) -> None:
        if self._inside_import or id(node) in self._attribute_names:
            return
        qualified = self.context.names.qualified_name(node)
        # An alias (`as mc`) is reported once, at its import: its call sites stay as they are.
        if qualified in REPLACEMENTS and qualified.rsplit(".", 1)[-1] == node.value:
            self._plain_imports.setdefault(node.value, []).append((node, node, qualified))

    def leave_Module(self, original_node: cst.Module) -> None:
        for uses in self._plain_imports.values():
            renames = [(name, qualified) for _, name, qualified in uses]
            for reported, _, qualified in uses:
                self._report_use(reported, qualified, None, renames)

    def _report_use(
        self,
        node: cst.CSTNode,
        qualified: str,
        renamed: Optional[cst.Name],
        renames: Sequence[tuple[cst.Name, str]] = (),
        amp_call: Optional[cst.Call] = None,
    ) -> None:
        replacement = REPLACEMENTS[qualified]
        shown = qualified.replace(".memory.", ".").replace(".autocast_mode.", ".")
        shown = shown.replace(".grad_scaler.", ".")
        verb = "renamed" if "(" not in replacement else "use"
        if renamed is not None:
            renames = [(renamed, qualified)]
        edits = tuple(
            NodeEdit.replace(name, RENAMES[name_qualified])
            for name, name_qualified in renames
            if name_qualified in RENAMES
        )
        fix = None
        if edits and len(edits) == len(renames):
            fix = RawFix(Applicability.SAFE, f"Rename to `{RENAMES[qualified]}`", edits)
        elif amp_call is not None and qualified in AMP_CLASSES:
            fix = self._amp_fix(amp_call, *AMP_CLASSES[qualified])
        self.report(node, f"`{shown}` is deprecated: {verb} `{replacement}`", fix=fix)

    def _amp_fix(self, call: cst.Call, name: str, positional_ok: bool) -> Optional[RawFix]:
        """`torch.cuda.amp.X(args)` becomes `torch.amp.X("cuda", args)`."""
        torch = self.context.names.local_name_for("torch")
        if torch is None or any(arg.star for arg in call.args):
            return None
        if not positional_ok and any(arg.keyword is None for arg in call.args):
            return None  # autocast(True) would pass `enabled` as the dtype
        arguments = ", ".join(['"cuda"', *(self._arg_text(arg) for arg in call.args)])
        replacement = f"{torch}.amp.{name}({arguments})"
        message = f'Use `{torch}.amp.{name}("cuda", ...)`'
        # Never an API newer than the project's torch floor; where no floor is declared the
        # rewrite is offered as unsafe, since it needs a torch the project does not promise.
        floor = self.context.style.floor
        needed = AMP_SINCE[name]
        if floor.known and not floor.allows(needed):
            return None
        safety = Applicability.SAFE if floor.allows(needed) else Applicability.UNSAFE
        return RawFix(safety, message, (NodeEdit.replace(call, replacement),))

    def _arg_text(self, arg: cst.Arg) -> str:
        bare = arg.with_changes(
            comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace("")
        )
        return self.context.module.code_for_node(bare).strip()
