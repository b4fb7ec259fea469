"""What rules see of the file being linted: its tree and the shared analysis of it."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Union

import libcst as cst

from devlint.analysis.guards import ConditionClassifier, GuardTracker, expects_error
from devlint.analysis.names import ImportMap
from devlint.analysis.scopes import ScopeTracker
from devlint.analysis.syntax import quoted_code
from devlint.diagnostics import Applicability
from devlint.torch_floor import DEFAULT_STYLE, DeviceStyle

# A node of LibCST's tree (most rules) or of CPython's (the device-flow rules).
Node = Union[cst.CSTNode, ast.AST]


@dataclass(frozen=True)
class NodeEdit:
    """An edit expressed on the tree, turned into positions once positions are known.

    The replaced text runs from one side of ``start`` to one side of ``end``; an empty
    span inserts. ``next_line`` inserts at the start of the line after ``start`` ends.
    """

    content: str
    start: Node
    end: Node
    start_side: str = "start"
    end_side: str = "end"
    next_line: bool = False

    @classmethod
    def replace(cls, node: Node, content: str) -> NodeEdit:
        return cls(content, node, node)

    @classmethod
    def insert_after(cls, node: Node, content: str) -> NodeEdit:
        return cls(content, node, node, "end", "end")

    @classmethod
    def insert_before(cls, node: Node, content: str) -> NodeEdit:
        return cls(content, node, node, "start", "start")

    @classmethod
    def between_ends(cls, first: Node, last: Node, content: str) -> NodeEdit:
        """Replace what follows ``first`` up to the end of ``last`` (a call's `.cuda()` tail)."""
        return cls(content, first, last, "end", "end")

    @classmethod
    def line_after(cls, statement: Node, content: str) -> NodeEdit:
        return cls(content, statement, statement, next_line=True)


@dataclass(frozen=True)
class RawFix:
    applicability: Applicability
    message: str
    edits: tuple[NodeEdit, ...]


@dataclass(frozen=True)
class RawFinding:
    """A finding before positions are computed: positions cost a pass, paid only with findings."""

    code: str
    name: str
    node: Node
    message: str
    statement: Optional[Node]
    # Nodes whose lines the message cites: "{line0}" in the message is the first one's line.
    cited: tuple[Node, ...] = ()
    fix: Optional[RawFix] = None


# The node types any tracker reacts to; every other node passes through at the cost of a set lookup.
TRACKED_TYPES = frozenset(
    {
        cst.Module, cst.SimpleStatementLine, cst.Import, cst.ImportFrom, cst.ClassDef,
        cst.FunctionDef, cst.Lambda, cst.Assign, cst.AnnAssign, cst.IndentedBlock,
        cst.SimpleStatementSuite, cst.If, cst.IfExp, cst.BooleanOperation, cst.Assert, cst.With,
    }
)  # fmt: skip
_GUARDING_TYPES = frozenset(GuardTracker.ATTRIBUTES)


class FindingCollector:
    """The findings of one file so far, each with the simple statement it is in (where a
    `# noqa` comment counts); none inside code a test expects to fail (`pytest.raises`)."""

    def __init__(self) -> None:
        self.findings: list[RawFinding] = []

    def current_statement(self) -> Optional[Node]:
        raise NotImplementedError

    def expects_failure(self) -> bool:
        raise NotImplementedError

    def report(
        self,
        code: str,
        name: str,
        node: Node,
        message: str,
        cited: tuple[Node, ...] = (),
        fix: Optional[RawFix] = None,
        statement: Optional[Node] = None,
    ) -> None:
        """``statement``: the one holding ``node``, where it is not the current one."""
        if not self.expects_failure():
            statement = statement or self.current_statement()
            self.findings.append(RawFinding(code, name, node, message, statement, cited, fix))


class FileContext(FindingCollector):
    """Per-file state: the module, the analysis trackers, and the findings so far."""

    def __init__(
        self,
        path: str,
        module: cst.Module,
        style: DeviceStyle = DEFAULT_STYLE,
        source: Optional[str] = None,
    ) -> None:
        super().__init__()
        self.path = path
        self.module = module
        # The module's code, as read (laying the tree out again costs as much as parsing it).
        self.source = module.code if source is None else source
        self.style = style  # how a fix writes a device: the project's torch floor
        self.names = ImportMap()
        self.names.add_statements(module.body)
        self.guards = GuardTracker(ConditionClassifier(self.names))
        self.scopes = ScopeTracker(self.names)
        self._statements: list[cst.CSTNode] = []
        # Inside `with pytest.raises(...)`: the code is meant to fail, device errors included.
        self._expected_failures: list[cst.CSTNode] = []

    def enter(self, node: cst.CSTNode) -> None:
        """Update the analysis before rules see ``node``."""
        kind = type(node)  # exact types: faster than isinstance, and LibCST's classes are final
        if kind not in TRACKED_TYPES:
            return
        if kind is cst.SimpleStatementLine:
            self._statements.append(node)
        elif kind is cst.Import:
            self.names.add_import(node)  # type: ignore[arg-type]
        elif kind is cst.ImportFrom:
            self.names.add_import_from(node)  # type: ignore[arg-type]
        elif kind is cst.With:
            if expects_error(node, self.names):  # type: ignore[arg-type]
                self._expected_failures.append(node)
            return
        self.scopes.enter(node)
        self.guards.enter(node)

    def leave(self, node: cst.CSTNode) -> None:
        """Update the analysis after rules have left ``node``."""
        kind = type(node)
        if kind not in TRACKED_TYPES:
            return
        if kind is cst.SimpleStatementLine:
            self._statements.pop()
        elif kind is cst.With:
            if self._expected_failures and self._expected_failures[-1] is node:
                self._expected_failures.pop()
            return
        self.scopes.leave(node)
        self.guards.leave(node)

    def enter_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if type(node) in _GUARDING_TYPES:
            self.guards.enter_attribute(node, attribute)

    def leave_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if type(node) in _GUARDING_TYPES:
            self.guards.leave_attribute(node, attribute)

    def current_statement(self) -> Optional[Node]:
        return self._statements[-1] if self._statements else None

    def expects_failure(self) -> bool:
        return bool(self._expected_failures)

    def source_of(self, node: cst.CSTNode, limit: int = 60) -> str:
        """The code of ``node`` on one line, shortened for messages."""
        if getattr(node, "lpar", None):
            node = node.with_changes(lpar=(), rpar=())  # quote the expression, not its parentheses
        return quoted_code(self.module.code_for_node(node), limit)
