"""What the device-flow rules see of a file: CPython's tree, the flow analysis, their findings.

The flow rules read CPython's tree, not LibCST's (see :mod:`devlint.analysis.syntax`
for why). One walk of the tree calls their ``visit_<ast class>`` hooks, knowing
for each node the simple statement around it (where a `# noqa` comment counts)
and whether a `with pytest.raises(...)` block expects the code to fail.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from typing import Optional

from devlint.analysis.flow import DeviceFlow
from devlint.analysis.guards import expects_error_in_syntax
from devlint.analysis.names import ImportMap
from devlint.analysis.syntax import SourceText, nodes_below
from devlint.context import FindingCollector, Node

SyntaxHook = Callable[[ast.AST], None]
# Statements with blocks: a node inside their header has no simple statement around it.
_BLOCK_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)
_COMPOUND = frozenset(
    {
        ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
        ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match,
        *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
    }
)  # fmt: skip


class FlowContext(FindingCollector):
    """Per-file state of the flow rules: the tree, the analysis, and the findings so far."""

    def __init__(self, path: str, tree: ast.Module, text: SourceText) -> None:
        super().__init__()
        self.path = path
        self.tree = tree
        self.text = text
        self.names = ImportMap()
        self.names.add_syntax_statements(tree.body)
        self._flow: Optional[DeviceFlow] = None
        self._statement: Optional[ast.stmt] = None
        self._expected_failure = False

    @property
    def flow(self) -> DeviceFlow:
        """The device-flow facts of the file, computed on first use."""
        if self._flow is None:
            self._flow = DeviceFlow(self.tree, self.names, self.text)
        return self._flow

    def current_statement(self) -> Optional[Node]:
        return self._statement

    def expects_failure(self) -> bool:
        return self._expected_failure

    def source_of(self, node: ast.AST, limit: int = 60) -> str:
        """The code of ``node`` on one line, shortened for messages."""
        return self.text.code_of(node, limit)

    # -- the walk ------------------------------------------------------------------------

    def walk(self, hooks: Mapping[type, Sequence[SyntaxHook]]) -> None:
        """Every node of the tree, each passed to the hooks for its exact class."""
        self._block(self.tree.body, hooks)

    def _block(
        self, statements: Sequence[ast.AST], hooks: Mapping[type, Sequence[SyntaxHook]]
    ) -> None:
        for statement in statements:
            if type(statement) in _COMPOUND or not isinstance(statement, ast.stmt):
                self._compound(statement, hooks)
            else:
                self._statement = statement
                self._expressions(statement, hooks)
                self._statement = None

    def _compound(self, node: ast.AST, hooks: Mapping[type, Sequence[SyntaxHook]]) -> None:
        expected = self._expected_failure
        if isinstance(node, (ast.With, ast.AsyncWith)) and expects_error_in_syntax(
            node, self.names
        ):
            self._expected_failure = True
        for hook in hooks.get(type(node), ()):
            hook(node)
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                if value and isinstance(value[0], _BLOCK_HOLDERS):
                    self._block(value, hooks)
                else:
                    for item in value:
                        if isinstance(item, ast.AST):
                            self._expressions(item, hooks)
            elif isinstance(value, ast.AST):
                self._expressions(value, hooks)
        self._expected_failure = expected

    def _expressions(self, root: ast.AST, hooks: Mapping[type, Sequence[SyntaxHook]]) -> None:
        for node in nodes_below(root):
            for hook in hooks.get(type(node), ()):
                hook(node)
