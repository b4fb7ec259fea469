"""What the device-flow rules see of a file: CPython's tree, the flow analysis, their findings.

The flow rules read CPython's tree, not LibCST's (see :mod:`devlint.analysis.syntax`
for why). Their ``visit_<ast class>`` hooks do not walk the tree: the interpreter
logs each node of those classes as it evaluates it, with the simple statement it
is in (where a `# noqa` comment counts), and the hooks run over that log. A node
the interpreter never evaluates (in a lambda, in a function the screen shows
cannot report) has no placement, so no flow rule could report it; nothing inside
`with pytest.raises(...)` is logged, for the code there is meant to fail.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Optional

from devlint.analysis.flow import DeviceFlow
from devlint.analysis.names import ImportMap
from devlint.analysis.parameters import is_test_module
from devlint.analysis.project import ProjectView, path_in_project
from devlint.analysis.syntax import SourceText
from devlint.analysis.syntax_screen import SyntaxFacts
from devlint.context import FindingCollector, Node

SyntaxHook = Callable[[ast.AST], None]


class FlowContext(FindingCollector):
    """Per-file state of the flow rules: the tree, the analysis, and the findings so far."""

    def __init__(
        self,
        path: str,
        tree: ast.Module,
        text: SourceText,
        facts: Optional[SyntaxFacts] = None,
        project: Optional[ProjectView] = None,
    ) -> None:
        super().__init__()
        self.path = path
        self.project = project  # the project files the file imports (`ProjectView.of`)
        self.tree = tree
        self.text = text
        self.facts = facts
        self.names = ImportMap()
        self.names.add_syntax_statements(tree.body)
        self._flow: Optional[DeviceFlow] = None
        self._statement: Optional[ast.stmt] = None
        self._statements: dict[int, Optional[ast.stmt]] = {}  # each evaluated node's statement

    @property
    def flow(self) -> DeviceFlow:
        """The device-flow facts of the file, computed by :meth:`run`."""
        assert self._flow is not None, "run() analyses the file before any hook reads it"
        return self._flow

    def current_statement(self) -> Optional[Node]:
        return self._statement

    def expects_failure(self) -> bool:
        return False  # such code is never logged

    def source_of(self, node: ast.AST, limit: int = 60) -> str:
        """The code of ``node`` on one line, shortened for messages."""
        return self.text.code_of(node, limit)

    def statement_of(self, node: ast.AST) -> Optional[ast.stmt]:
        """The simple statement the analysis evaluated ``node`` in, if it did."""
        return self._statements.get(id(node))

    def run(self, hooks: Mapping[type, SyntaxHook]) -> None:
        """Analyse the file, then pass each node it evaluated to the hook for its exact class."""
        self._flow = DeviceFlow(
            self.tree,
            self.names,
            self.text,
            hooks.keys(),
            self.facts,
            test_module=is_test_module(path_in_project(self.path)),
            project=self.project,
            path=self.path,
        )
        seen: set[int] = set()
        for node, statement in self._flow.visits:
            self._statements.setdefault(id(node), statement)
        for node, statement in self._flow.visits:
            if id(node) not in seen:  # an argument may be evaluated twice
                seen.add(id(node))
                self._statement = statement
                hooks[type(node)](node)
        self._statement = None
