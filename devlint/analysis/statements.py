"""Statements a fix may rewrite as a whole: a call that is a line of its own, and its indent."""

from __future__ import annotations

import libcst as cst


class IndentTracker:
    """The indentation of the block being visited, kept by a rule's IndentedBlock hooks."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._indents: list[str] = []

    def enter(self, node: cst.IndentedBlock) -> None:
        indent = node.indent if node.indent is not None else self._module.default_indent
        self._indents.append(indent)

    def leave(self) -> None:
        self._indents.pop()

    @property
    def current(self) -> str:
        """The indentation of a statement in the current block."""
        return "".join(self._indents)

    @property
    def nested(self) -> str:
        """The indentation of a statement one block deeper."""
        return self.current + self._module.default_indent


def own_statement(statement: object, call: cst.Call) -> bool:
    """Whether ``call`` is the whole of a line of its own (``torch.cuda.synchronize()``): not a
    value that is used, not one of several statements on a line, not the body of ``if x: ...``."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    expression = statement.body[0]
    return isinstance(expression, cst.Expr) and expression.value is call
