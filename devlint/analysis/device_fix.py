"""Which device expression a fix may write in place of a hard-coded "cuda".

Reuse beats invention: a `device` parameter, a `self.device` the class sets, or a
module-level `device = ...` that is not itself a bare "cuda" literal. Only when
none is in scope is a definition inserted after the imports, under a name that
nothing in the file uses, with `import torch` added when torch is not imported
as a module. Reusing is a safe fix; inserting is an unsafe one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devlint.analysis.devices import cuda_literal
from devlint.analysis.names import ImportMap, dotted_name
from devlint.context import FileContext, NodeEdit
from devlint.traversal import visit

_CANDIDATE_NAMES = ("device", "torch_device", "default_device")


@dataclass(frozen=True)
class DeviceChoice:
    expression: str  # what to write: "device", "self.device"
    torch: str  # the local name of the torch module
    inserted: tuple[NodeEdit, ...] = ()  # the definition (and import) to add, when any

    @property
    def safe(self) -> bool:
        return not self.inserted


class _NamesInUse(cst.CSTVisitor):
    """Every identifier the file binds or reads (not attribute or keyword names)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self._skipped: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skipped.add(id(node.attr))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        # `from torch import nn` binds `nn`, not `torch`.
        module: object = node.module
        while isinstance(module, cst.Attribute):
            module = module.value
        if isinstance(module, cst.Name):
            self._skipped.add(id(module))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skipped.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._skipped:
            self.names.add(node.value)


def _module_device(module: cst.Module) -> Optional[cst.SimpleStatementLine]:
    """A module-level `device = ...` whose value is not a bare "cuda" string."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and any(
                dotted_name(target.target) == "device" for target in small.targets
            ):
                return None if cuda_literal(small.value) is not None else statement
    return None


def _leading_imports_end(body: Sequence[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The last statement of the file's opening docstring-and-imports block."""
    last: Optional[cst.CSTNode] = None
    for index, statement in enumerate(body):
        imports = isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
        )
        guarded_imports = isinstance(statement, cst.Try) and _only_imports(statement.body)
        if not (imports or guarded_imports or (index == 0 and _is_docstring(statement))):
            break
        last = statement
    return last


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _only_imports(suite: cst.BaseSuite) -> bool:
    return all(
        isinstance(line, cst.SimpleStatementLine)
        and all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in line.body)
        for line in suite.body
    )


def _torch_module_name(names: ImportMap) -> Optional[str]:
    return names.local_name_for("torch")


class DeviceChooser:
    """Per file: picks the device a DEV001 fix writes, at the node being visited."""

    def __init__(self, context: FileContext) -> None:
        self._context = context
        self._module_device = _module_device(context.module)
        self._names_in_use: Optional[set[str]] = None

    def choose(
        self, function_params: Sequence[str], class_sets_device: bool
    ) -> Optional[DeviceChoice]:
        torch_name = _torch_module_name(self._context.names)
        if "device" in function_params:
            return DeviceChoice("device", torch_name) if torch_name else None
        if class_sets_device and torch_name:
            return DeviceChoice("self.device", torch_name)
        if self._module_device is not None and torch_name and self._module_device_visible():
            return DeviceChoice("device", torch_name)
        return self._insert_definition(torch_name)

    def _module_device_visible(self) -> bool:
        """Inside a function that does not rebind `device`, or at module level below it."""
        scopes = self._context.scopes
        if scopes.in_function():
            return not scopes.binds_locally("device")
        binding = scopes.lookup(cst.Name("device"))
        return binding is not None and cuda_literal(binding.value or cst.Name("x")) is None

    def _insert_definition(self, torch_name: Optional[str]) -> Optional[DeviceChoice]:
        if self._names_in_use is None:
            visitor = _NamesInUse()
            visit(self._context.module, visitor)
            self._names_in_use = visitor.names
        name = next((n for n in _CANDIDATE_NAMES if n not in self._names_in_use), None)
        if name is None:
            return None
        newline = self._context.module.default_newline
        prefix = ""
        if torch_name is None:
            if "torch" in self._names_in_use:
                return None
            torch_name, prefix = "torch", f"import torch{newline}"
        definition = (
            f'{prefix}{name} = {torch_name}.device("cuda" if {torch_name}.cuda.is_available() '
            f'else "cpu"){newline}'
        )
        anchor = _leading_imports_end(self._context.module.body)
        if anchor is not None:
            edit = NodeEdit.line_after(anchor, definition)
        elif self._context.module.body:
            edit = NodeEdit.insert_before(self._context.module.body[0], definition)
        else:
            return None
        return DeviceChoice(name, torch_name, (edit,))
