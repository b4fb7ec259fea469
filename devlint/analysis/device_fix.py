"""Which device expression a fix may write in place of a hard-coded "cuda".

A fix must leave the code correct on a CPU-only machine. So a name is reused as a
**safe** fix only when its value is known to be an availability-checked device (a
guarded expression devlint recognises, a `torch.accelerator` choice, Lightning's
`self.device`). A module-level `device = "cuda"` (or `torch.device("cuda")`) that is
the cause is guarded where it is defined, and then reused. A `device` parameter or a
device of unknown value is reused as an **unsafe** fix; a name holding something
else (`device = 3`, `device = "cpu"`) is not reused. Where nothing fits, a definition
is inserted after the imports (a blank line between), under a name nothing in the
file uses, with `import torch` added where isort puts it: an unsafe fix. Every
device written follows the project's torch floor (see `device_forms`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Optional

import libcst as cst

from devlint.analysis.device_forms import device_form, picks_cuda_only, string_form
from devlint.analysis.devices import argument, cuda_literal, string_value
from devlint.analysis.guards import ConditionClassifier
from devlint.analysis.names import ImportMap, dotted_name
from devlint.context import FileContext, NodeEdit
from devlint.traversal import visit

_CANDIDATE_NAMES = ("device", "torch_device", "default_device")
_ACCELERATOR = "torch.accelerator.current_accelerator"


@dataclass(frozen=True)
class DeviceChoice:
    expression: str  # what to write: "device", "self.device"
    torch: str  # the local name of the torch module
    inserted: tuple[NodeEdit, ...] = ()  # the definition (and import) to add or guard, if any
    safe: bool = True  # whether the device is known to be availability-checked


class Held(Enum):
    """What a `device` name holds, for a fix that would reuse it."""

    CHECKED = "checked"  # an availability-checked device: reuse, safely
    CUDA = "cuda"  # an unguarded CUDA device: guard the definition, then reuse
    UNKNOWN = "unknown"  # a device of unknown origin (a flag, a call): reuse, unsafely
    NOT_A_DEVICE = "not a device"  # `3`, `"cpu"`, `None`: not reused


def is_checked_device(
    node: cst.BaseExpression, names: ImportMap, classifier: ConditionClassifier
) -> bool:
    """Whether ``node`` picks a device by an availability check devlint recognises."""
    if isinstance(node, cst.Call) and names.qualified_name(node.func) == "torch.device":
        first = argument(node, 0, "type")
        return first is not None and is_checked_device(first.value, names, classifier)
    if isinstance(node, cst.IfExp):
        return classifier.definite(node.test) is not None
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
        left = node.left
        if isinstance(left, cst.Call) and names.qualified_name(left.func) == _ACCELERATOR:
            checked = argument(left, 0, "check_available")
            return checked is not None and _is_true(checked.value)
    return False


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def held_by(value: cst.BaseExpression, names: ImportMap, classifier: ConditionClassifier) -> Held:
    if is_checked_device(value, names, classifier):
        return Held.CHECKED
    if string_value(value) is not None:
        return Held.CUDA if cuda_literal(value) is not None else Held.NOT_A_DEVICE
    if isinstance(value, cst.Call) and names.qualified_name(value.func) == "torch.device":
        first = argument(value, 0, "type")
        if first is not None and string_value(first.value) is not None:
            return Held.CUDA if cuda_literal(first.value) is not None else Held.NOT_A_DEVICE
    if isinstance(value, (cst.Integer, cst.Float, cst.Imaginary)):
        return Held.NOT_A_DEVICE
    if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
        return Held.NOT_A_DEVICE
    return Held.UNKNOWN


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


def _module_device(module: cst.Module) -> Optional[cst.Assign]:
    """The module's one `device = ...` definition; None when there is none or several."""
    found: list[cst.Assign] = []
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and any(
                dotted_name(target.target) == "device" for target in small.targets
            ):
                found.append(small)
    return found[0] if len(found) == 1 and len(found[0].targets) == 1 else None


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _leading_imports_end(body: Sequence[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The last statement of the file's opening docstring-and-imports block."""
    last: Optional[cst.CSTNode] = None
    for index, statement in enumerate(body):
        guarded_imports = isinstance(statement, cst.Try) and _only_imports(statement.body)
        if not (
            _is_import_line(statement)
            or guarded_imports
            or (index == 0 and _is_docstring(statement))
        ):
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
    return all(_is_import_line(line) for line in suite.body)


def _imported_module(statement: cst.CSTNode) -> Optional[str]:
    """The module of a one-import line: `import numpy` gives numpy, `from torch import nn` torch."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Import):
        return dotted_name(small.names[0].name)
    if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
        return dotted_name(small.module)
    return None


def _torch_import_edit(
    body: Sequence[cst.CSTNode], end: cst.CSTNode, newline: str
) -> Optional[NodeEdit]:
    """`import torch` where isort puts it: in the block of the opening imports (up to ``end``)
    that holds a `from torch ...` import, after the plain imports that sort before it and
    before the `from` imports."""
    line = f"import torch{newline}"
    statements = list(body)
    statements = statements[: statements.index(end) + 1]
    anchor = next(
        (
            index
            for index, statement in enumerate(statements)
            if isinstance(statement, cst.SimpleStatementLine)
            and isinstance(statement.body[0], cst.ImportFrom)
            and (_imported_module(statement) or "").split(".")[0] == "torch"
        ),
        None,
    )
    if anchor is None:
        return None
    first = anchor
    while (
        first > 0
        and _is_import_line(statements[first - 1])
        and not _blank_before(statements[first])
    ):
        first -= 1
    last = anchor
    while last + 1 < len(statements) and _is_import_line(statements[last + 1]):
        if _blank_before(statements[last + 1]):
            break
        last += 1
    for statement in statements[first : last + 1]:
        small = statement.body[0]  # type: ignore[attr-defined]
        if isinstance(small, cst.ImportFrom) or (_imported_module(statement) or "") > "torch":
            return NodeEdit.insert_before(statement, line)
    return NodeEdit.line_after(statements[last], line)


def _binds(statement: cst.CSTNode, local: str) -> bool:
    """Whether an import line binds ``local`` (`import torch`, `import torch as t`)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import) and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                name = alias.asname.name if alias.asname else alias.name
                if dotted_name(name) == local:
                    return True
    return False


def _after_binding(
    body: Sequence[cst.CSTNode], anchor: Optional[cst.CSTNode], torch: str
) -> Optional[cst.CSTNode]:
    """The anchor, or where torch is imported below it (after a docstring and `__all__`, say):
    the end of the imports that bind it, so the definition never uses torch before its import."""
    statements = list(body)
    start = 0 if anchor is None else statements.index(anchor) + 1
    binding = next((i for i in range(start, len(statements)) if _binds(statements[i], torch)), None)
    if binding is None:
        return anchor
    end = binding
    while end + 1 < len(statements) and _is_import_line(statements[end + 1]):
        end += 1
    return statements[end]


def _blank_before(statement: cst.CSTNode) -> bool:
    return bool(getattr(statement, "leading_lines", ()))


class DeviceChooser:
    """Per file: picks the device a DEV001 fix writes, at the node being visited."""

    def __init__(self, context: FileContext) -> None:
        self._context = context
        self._module_device = _module_device(context.module)
        self._names_in_use: Optional[set[str]] = None
        self._cuda_only: Optional[bool] = None

    @property
    def cuda_only(self) -> bool:
        if self._cuda_only is None:
            self._cuda_only = picks_cuda_only(self._context.style, self._context.source)
        return self._cuda_only

    @property
    def advice(self) -> str:
        """The device definition a message suggests: the one a fix would insert."""
        form = device_form(self._context.style, "torch", self.cuda_only)
        return f"device = {form.one_line()}"

    @property
    def _classifier(self) -> ConditionClassifier:
        return self._context.guards.classifier

    def choose(self) -> Optional[DeviceChoice]:
        torch_name = self._context.names.local_name_for("torch")
        scopes = self._context.scopes
        if "device" in scopes.current_parameters():
            # The caller's device: it may be "cpu" by default, or one nothing checked.
            return DeviceChoice("device", torch_name, safe=False) if torch_name else None
        if scopes.current_class_sets("device") and torch_name:
            binding = scopes.current_class_attribute("device")
            checked = binding is None or (  # None: Lightning's, always a usable device
                binding.value is not None
                and is_checked_device(binding.value, self._context.names, self._classifier)
            )
            return DeviceChoice("self.device", torch_name, safe=checked)
        module_device = self._module_device
        if module_device is not None and torch_name and self._module_device_visible():
            held = held_by(module_device.value, self._context.names, self._classifier)
            if held is Held.CHECKED:
                return DeviceChoice("device", torch_name)
            if held is Held.UNKNOWN:
                return DeviceChoice("device", torch_name, safe=False)
            if held is Held.CUDA:
                guard = self.guard_definition(module_device.value, torch_name, "device = ")
                if guard is not None:
                    return DeviceChoice("device", torch_name, (guard,))
        return self._insert_definition(torch_name)

    def guard_definition(
        self, value: cst.BaseExpression, torch: str, prefix: str
    ) -> Optional[NodeEdit]:
        """The edit that guards an unguarded CUDA device: the floor's choice for "cuda", the
        CPU fallback for an indexed CUDA device, which keeps its index."""
        literal = value
        call: Optional[cst.Call] = None
        if isinstance(value, cst.Call):
            first = argument(value, 0, "type")
            if first is None:
                return None
            call, literal = value, first.value
        text = string_value(literal)
        if text is None or cuda_literal(literal) is None:
            return None
        quote = self._context.module.code_for_node(literal)[-1]
        if call is not None and argument(call, 1, "index") is not None:
            code = self._context.module.code_for_node(call)
            guarded = f'({code} if {torch}.cuda.is_available() else {torch}.device("cpu"))'
            return NodeEdit.replace(call, guarded)
        if text != "cuda":
            code = self._context.module.code_for_node(literal)
            guarded = f"{code} if {torch}.cuda.is_available() else {quote}cpu{quote}"
            return NodeEdit.replace(literal, guarded)
        if call is not None:
            form = device_form(self._context.style, torch, self.cuda_only, quote)
            return NodeEdit.replace(call, form.written(prefix))
        form = string_form(self._context.style, torch, self.cuda_only, quote)
        return NodeEdit.replace(literal, form.written(prefix))

    def _module_device_visible(self) -> bool:
        """Inside a function that does not rebind `device`, or at module level below it."""
        scopes = self._context.scopes
        if scopes.in_function():
            return not scopes.binds_locally("device")
        return scopes.lookup(cst.Name("device")) is not None

    def _insert_definition(self, torch_name: Optional[str]) -> Optional[DeviceChoice]:
        if self._names_in_use is None:
            visitor = _NamesInUse()
            visit(self._context.module, visitor)
            self._names_in_use = visitor.names
        name = next((n for n in _CANDIDATE_NAMES if n not in self._names_in_use), None)
        if name is None:
            return None
        module = self._context.module
        if not module.body:
            return None
        newline = module.default_newline
        anchor = _leading_imports_end(module.body)
        if torch_name is not None:
            anchor = _after_binding(module.body, anchor, torch_name)
        edits: list[NodeEdit] = []
        prefix = ""  # `import torch`, where no `from torch` import shows where isort puts it
        if torch_name is None:
            if "torch" in self._names_in_use:
                return None
            torch_name = "torch"
            placed = None if anchor is None else _torch_import_edit(module.body, anchor, newline)
            if placed is not None:
                edits.append(placed)
            else:
                prefix = f"import torch{newline}{newline}"
        form = device_form(self._context.style, torch_name, self.cuda_only)
        definition = f"{prefix}{name} = {form.written(f'{name} = ')}{newline}"
        if anchor is not None:
            # isort and pycodestyle: a blank line between the imports and the code.
            separator = newline if prefix == "" or _is_docstring(anchor) else ""
            edits.append(NodeEdit.line_after(anchor, separator + definition))
        else:
            edits.append(NodeEdit.insert_before(module.body[0], definition))
        return DeviceChoice(name, torch_name, tuple(edits), safe=False)
