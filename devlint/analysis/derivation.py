"""What a value of a function is computed from, by the function's own assignments.

`lengths = tokens.ne(pad).sum(1)` and `embedded = self.embed(tokens)` both derive from
`tokens`: where one lives, the other does. Only the function's own code is read (not the
functions nested in it); a name bound otherwise than by a plain assignment above its use (a
parameter, a loop's or an unpacking's target) is a root.
"""

from __future__ import annotations

import ast
from typing import Optional, Union

from devlint.analysis.names import ImportMap
from devlint.analysis.parameters import FunctionNode
from devlint.analysis.syntax import dotted_name, own_nodes

Assignment = Union[ast.Assign, ast.AnnAssign]
_DEPTH = 6  # assignments followed, at most: enough for real code, cheap on cycles


def assignments_of(function: FunctionNode, name: str) -> list[Assignment]:
    """The statements of ``function``'s own code that assign ``name`` with `=`."""
    found: list[Assignment] = []
    for statement in own_nodes(function):
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets = [statement.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found.append(statement)
    return found


def latest_assignment(function: FunctionNode, name: ast.Name) -> Optional[Assignment]:
    """The plain assignment of ``name`` on the nearest line above it (as straight-line code
    runs them)."""
    before = [s for s in assignments_of(function, name.id) if s.lineno < name.lineno]
    return max(before, key=lambda statement: statement.lineno) if before else None


def root_name(
    function: FunctionNode, node: ast.expr, names: ImportMap, depth: int = 0
) -> Optional[str]:
    """The name ``node`` is computed from: the receiver of its methods, the first argument of
    the imported functions it calls, the left side of its operations, through the name's
    latest plain assignment above it; None for a literal or an attribute (`batch.lengths`,
    data from elsewhere)."""
    while True:
        if isinstance(node, ast.Call):
            func = node.func
            imported = names.qualified_syntax_name(func) is not None
            if isinstance(func, ast.Attribute) and not imported and not _on_self(func):
                node = func.value  # `mask.sum(1)`
            elif node.args and not isinstance(node.args[0], ast.Starred):
                node = node.args[0]  # `torch.sum(mask, 1)`, `self.embed(tokens)`
            else:
                return None
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, (ast.BinOp, ast.Compare)):
            node = node.left
        elif isinstance(node, ast.UnaryOp):
            node = node.operand
        else:
            break
    if not isinstance(node, ast.Name):
        return None
    latest = latest_assignment(function, node)
    if latest is None or depth >= _DEPTH:
        return node.id
    assert latest.value is not None  # (annotations alone are no assignments)
    deeper = root_name(function, latest.value, names, depth + 1)
    return deeper if deeper is not None else node.id


def _on_self(func: ast.Attribute) -> bool:
    """`self.embed(...)`, `self.encoder.rnn(...)`: a layer or method of the object, whose
    first argument is the data."""
    return (dotted_name(func.value) or "").partition(".")[0] == "self"
