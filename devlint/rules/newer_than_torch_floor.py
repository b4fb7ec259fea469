from __future__ import annotations

from typing import Optional

import libcst as cst

from devlint.analysis.names import dotted_name, names_imported_from
from devlint.analysis.torch_versions import first_release
from devlint.context import FileContext
from devlint.rules.base import Invalid, Rule
from devlint.torch_floor import DeviceStyle, Version

# Exceptions a `try` that probes for a newer API catches.
_PROBING_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "Exception"})


class NewerThanTorchFloor(Rule):
    """
    ## What it does
    Flags a torch API that the oldest torch the project supports does not have:
    `torch.accelerator.current_accelerator()` (torch 2.6) in a project whose
    `pyproject.toml` declares `torch>=2.0`, `torch.amp.GradScaler` (2.3),
    `torch.get_default_device()` (2.3). The floor is the project's own
    (`[project] dependencies`, `requirements*.txt`, `setup.cfg`, or
    `torch-version` in `[tool.devlint]`; `devlint --show-settings` shows it);
    where none is declared the rule is silent. Which release first has each
    name comes from PyTorch's released wheels (`devlint/data/torch_versions.json`,
    made by `python -m devlint.data.generate_torch_versions`), not from a hand
    list. Code that probes for the API first is left alone: under
    `if hasattr(...)`, a version test or an `is_torch_..._available()` helper
    (which test the version), or in a `try` that
    catches `AttributeError` or `ImportError`.

    ## Why is this bad?
    The project promises to run on that older torch, and there the line raises
    `AttributeError: module 'torch' has no attribute 'accelerator'`: on the
    machine of a user who installed what the project said it supports.

    ## Example
    ```python
    # pyproject.toml: dependencies = ["torch>=2.0"]
    device = torch.accelerator.current_accelerator()
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ```
    or raise the floor to `torch>=2.6`.

    ## Fix safety
    No fix: whether to raise the floor or write the older form is the
    project's choice.
    """

    code = "DEV011"
    name = "newer-than-torch-floor"
    summary = "torch API newer than the oldest torch the project supports"
    trigger_tokens = ("torch",)
    example_torch_floor = "2.0"

    VALID = (
        "import torch\nx = torch.zeros(2, device=torch.device('cpu'))",
        "import torch\ntorch.set_default_device('cpu')",
        "import torch\nif hasattr(torch, 'accelerator'):\n"
        "    device = torch.accelerator.current_accelerator()",
        "import torch\ntry:\n    device = torch.accelerator.current_accelerator()\n"
        "except AttributeError:\n    device = None",
        "import torch\nif torch.__version__ >= '2.6':\n"
        "    device = torch.accelerator.current_accelerator()",
        "import torch\nif is_torch_xpu_available():\n    torch.xpu.empty_cache()",
        "accelerator = object()\naccelerator.current_accelerator()",
    )
    INVALID = (
        Invalid(
            "import torch\ndevice = torch.accelerator.current_accelerator()",
            2,
            10,
            "needs torch 2.6, but the project supports torch 2.0",
        ),
        Invalid("import torch as t\nscaler = t.amp.GradScaler('cuda')", 2, 10, "torch 2.3"),
        Invalid("from torch.accelerator import current_accelerator\ncurrent_accelerator()", 1, 31),
        Invalid("import torch\nd = torch.get_default_device()", 2, 5, "`torch.get_default_device`"),
    )

    @classmethod
    def applies_under(cls, style: DeviceStyle) -> bool:
        return style.floor.version is not None  # with no floor declared, nothing is too new

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        self._probing = 0  # inside code that checks for the API first
        self._probes: list[bool] = []  # per open `if`/`try`: whether it probes
        self._inside_import = 0
        self._reported: set[int] = set()  # attributes inside a chain already reported

    def _floor(self) -> Optional[Version]:
        return self.context.style.floor.version

    def visit_If(self, node: cst.If) -> None:
        self._enter(_probes(self.context.source_of(node.test, limit=400)))

    def leave_If(self, original_node: cst.If) -> None:
        self._leave()

    def visit_Try(self, node: cst.Try) -> None:
        self._enter(_catches_probe_errors(node))

    def leave_Try(self, original_node: cst.Try) -> None:
        self._leave()

    def _enter(self, probes: bool) -> None:
        self._probes.append(probes)
        self._probing += probes

    def _leave(self) -> None:
        self._probing -= self._probes.pop()

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._inside_import += 1
        for alias, qualified in names_imported_from(node):
            self._check(alias.name, qualified)

    def leave_ImportFrom(self, original_node: cst.ImportFrom) -> None:
        self._inside_import -= 1

    def visit_Import(self, node: cst.Import) -> None:
        self._inside_import += 1
        for alias in node.names:
            self._check(alias.name, dotted_name(alias.name) or "")

    def leave_Import(self, original_node: cst.Import) -> None:
        self._inside_import -= 1

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._inside_import or id(node) in self._reported:
            return
        qualified = self.context.names.qualified_name(node)
        if qualified and self._check(node, qualified):
            # `torch.accelerator.current_accelerator`: once, for the whole chain.
            inner: cst.BaseExpression = node.value
            while isinstance(inner, cst.Attribute):
                self._reported.add(id(inner))
                inner = inner.value

    def _check(self, node: cst.CSTNode, qualified: str) -> bool:
        floor = self._floor()
        needed = first_release(qualified)
        if floor is None or needed is None or needed <= floor or self._probing:
            return False
        shown_floor = str(self.context.style.floor)
        self.report(
            node,
            f"`{qualified}` needs torch {_shown(needed)}, but the project supports torch "
            f"{shown_floor}: it raises AttributeError there; raise the floor or use an older "
            "form",
        )
        return True


def _shown(version: Version) -> str:
    return ".".join(map(str, version))


def _probes(test: str) -> bool:
    lowered = test.lower()
    return "hasattr" in test or "version" in lowered or "is_torch_" in lowered


def _catches_probe_errors(node: cst.Try) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        caught = handler.type
        types = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
        for value in types:
            name = dotted_name(value) or ""
            if name.rpartition(".")[2] in _PROBING_ERRORS:
                return True
    return False
