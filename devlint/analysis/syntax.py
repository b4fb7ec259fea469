"""CPython's syntax tree, read the way the device-flow analysis needs it.

The flow rules run on CPython's tree rather than LibCST's: CPython parses a file
several times faster, and the syntax check every file needs parses it anyway, so
a file only the flow rules read is never parsed by LibCST at all. This module
holds what reading that tree takes: dotted names, call arguments, device
literals, and the text and position of a node (CPython counts columns in UTF-8
bytes; devlint reports characters, as LibCST does).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator, Sequence
from typing import Optional

from libcst.metadata import CodePosition, CodeRange

from devlint.analysis.devices import CUDA_STRING

_LINE_END = re.compile(r"\r\n|\r|\n")


# Fields that never hold a node (names, numbers, flags): not worth a look.
_NOT_NODES = frozenset(
    "ctx id attr arg name asname module level kind type_comment conversion is_async".split()
)
# The node fields of each class, learnt on first sight: walkers look here, and call
# `child_fields` for a class they have not met.
CHILD_FIELDS: dict[type, Optional[tuple[str, ...]]] = {}


def child_fields(kind: type) -> Optional[tuple[str, ...]]:
    """The fields of a node class that may hold nodes (None for what is not a node), recorded
    in `CHILD_FIELDS`."""
    fields: Optional[tuple[str, ...]]
    if not issubclass(kind, ast.AST):
        fields = None  # a string in `global a, b`, the None key of `{**d}`
    elif issubclass(kind, (ast.Constant, ast.expr_context)):
        fields = ()
    else:
        fields = tuple(field for field in kind._fields if field not in _NOT_NODES)
    CHILD_FIELDS[kind] = fields
    return fields


def last_name(node: ast.expr) -> str:
    """`mean` of `np.mean` or of `mean`: the name a call is made by ("" for other callees)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def nodes_below(tree: ast.AST) -> Iterator[ast.AST]:
    """``tree`` and every node below it but the expression contexts (a third of all nodes), in
    no particular order: three times as fast as `ast.walk`."""
    known = CHILD_FIELDS
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        kind = type(node)
        fields = known[kind] if kind in known else child_fields(kind)
        if fields is None:
            continue
        yield node  # type: ignore[misc]
        for field in fields:
            value = getattr(node, field)
            if type(value) is list:
                stack.extend(value)
            elif value is not None:
                stack.append(value)


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions or classes nested in it."""
    pending: list[ast.AST] = list(function.body)
    known = CHILD_FIELDS
    while pending:
        node = pending.pop()
        yield node
        kind = type(node)
        fields = known[kind] if kind in known else child_fields(kind)
        for field in fields or ():
            value = getattr(node, field)
            children = value if type(value) is list else (value,)
            pending.extend(
                child
                for child in children
                if isinstance(child, ast.AST) and not isinstance(child, _NESTED_SCOPES)
            )


def dotted_name(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def statement_blocks(statement: ast.stmt) -> Iterator[Sequence[ast.stmt]]:
    """The blocks of a compound statement, its handlers' included (none for a simple one)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(statement, name, None)
        if block:
            yield block
    for handler in getattr(statement, "handlers", ()):
        yield handler.body


def parameters_of(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    """A function's named parameters, in order: positional-only, positional, keyword-only
    (`*args` and `**kwargs` aside)."""
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


CLASS_LEVEL_DECORATORS = frozenset({"staticmethod", "classmethod"})


def is_class_level(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A `@staticmethod` or `@classmethod`: called with no instance of its class."""
    return any(dotted_name(d) in CLASS_LEVEL_DECORATORS for d in function.decorator_list)


def self_attribute(node: ast.AST) -> Optional[str]:
    """`name` of `self.name` (one attribute deep), else None."""
    dotted = dotted_name(node)
    if dotted and dotted.startswith("self.") and dotted.count(".") == 1:
        return dotted[len("self.") :]
    return None


def argument(call: ast.Call, position: int, keyword: str) -> Optional[ast.expr]:
    """The argument passed at ``position`` or as ``keyword=``, if any (None past a ``*args``)."""
    named = keyword_value(call, keyword)
    if named is not None:
        return named
    if position < 0 or position >= len(call.args):
        return None
    if any(type(arg) is ast.Starred for arg in call.args[: position + 1]):
        return None
    return call.args[position]


def keyword_value(call: ast.Call, name: str) -> Optional[ast.expr]:
    for passed in call.keywords:
        if passed.arg == name:
            return passed.value
    return None


def call_arguments(call: ast.Call) -> list[ast.expr]:
    """Every value passed, positional first (``*xs`` as ``xs``), then keywords (``**kw`` too)."""
    values = [arg.value if type(arg) is ast.Starred else arg for arg in call.args]
    values.extend(passed.value for passed in call.keywords)
    return values


def has_arguments(call: ast.Call) -> bool:
    return bool(call.args or call.keywords)


def string_value(node: ast.AST) -> Optional[str]:
    """The value of a plain string literal (no f-string, no bytes), else None."""
    if type(node) is ast.Constant and type(node.value) is str:
        return node.value
    return None


def cuda_literal(node: ast.AST) -> Optional[str]:
    """``"cuda"``, ``"cuda:0"``, or the ``cuda:`` prefix of an f-string, as written; else None."""
    value = string_value(node)
    if value is not None:
        return value if CUDA_STRING.match(value) else None
    if isinstance(node, ast.JoinedStr) and node.values and string_value(node.values[0]) == "cuda:":
        return "cuda:{...}"
    return None


class SourceText:
    """A file's text, for the code and the position of CPython's nodes."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._starts: Optional[list[int]] = None

    def _line_starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [0, *(match.end() for match in _LINE_END.finditer(self.source))]
        return self._starts

    def line(self, number: int) -> str:
        """Line ``number`` (1-based), without its line break."""
        starts = self._line_starts()
        start = starts[number - 1]
        end = starts[number] if number < len(starts) else len(self.source)
        return self.source[start:end].rstrip("\r\n")

    def column(self, line: int, byte_column: int) -> int:
        """The character column of CPython's (line, UTF-8 byte column)."""
        text = self.line(line)
        return byte_column if text.isascii() else len(text.encode()[:byte_column].decode())

    def range_of(self, node: ast.AST) -> CodeRange:
        """Where ``node`` starts and ends, with 0-based character columns, as LibCST gives."""
        line, end_line = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        return CodeRange(
            CodePosition(line, self.column(line, node.col_offset)),  # type: ignore[attr-defined]
            CodePosition(end_line, self.column(end_line, node.end_col_offset)),  # type: ignore[attr-defined]
        )

    def segment(self, node: ast.AST) -> str:
        span, starts = self.range_of(node), self._line_starts()
        start = starts[span.start.line - 1] + span.start.column
        return self.source[start : starts[span.end.line - 1] + span.end.column]

    def code_of(self, node: ast.AST, limit: int = 60) -> str:
        """The code of ``node`` on one line, shortened for messages."""
        return quoted_code(self.segment(node), limit)


_SKIPPED_TOKENS = frozenset(
    {
        tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)  # fmt: skip
_OPENING, _CLOSING = frozenset("([{"), frozenset(")]}")


def _joined(tokens: Iterator[tokenize.TokenInfo]) -> list[str]:
    """The tokens' text, a space where the code had any (none inside brackets), and no trailing
    comma in a call (`f(a,)`), which a tuple's `(a,)` keeps."""
    parts: list[str] = []
    calls: list[bool] = []  # per open bracket: whether it opens a call's arguments
    previous: Optional[tokenize.TokenInfo] = None
    for token in tokens:
        text = token.string
        if text in _CLOSING and parts and parts[-1] == "," and calls and calls[-1]:
            parts.pop()
        spaced = previous is not None and token.start != previous.end
        if spaced and previous.string not in _OPENING and text not in _CLOSING:  # type: ignore[union-attr]
            parts.append(" ")
        if text in _OPENING:
            called = previous is not None and (
                previous.type == tokenize.NAME or previous.string in _CLOSING
            )
            calls.append(text == "(" and called)
        elif text in _CLOSING and calls:
            calls.pop()
        parts.append(text)
        previous = token
    return "".join(parts).split()


def quoted_code(code: str, limit: int = 60) -> str:
    """Code as a message quotes it: on one line, without comments (`# noqa: DEV008` is no part
    of `torch.load("x.pt")`), no space inside brackets, shortened to ``limit`` characters."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):  # not whole code: keep it as it is
        text = " ".join(code.split())
    else:
        text = " ".join(_joined(token for token in tokens if token.type not in _SKIPPED_TOKENS))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def method_name(func: ast.Attribute) -> ast.AST:
    """A node spanning the name after the dot of ``func`` (CPython's tree has none of its own)."""
    name = ast.Name(func.attr, ast.Load())
    name.lineno = name.end_lineno = func.end_lineno  # type: ignore[assignment]
    name.end_col_offset = func.end_col_offset
    name.col_offset = func.end_col_offset - len(func.attr.encode())  # type: ignore[operator]
    return name


def no_elements(node: ast.expr) -> bool:
    """`torch.empty([0])`, `torch.zeros(0)`: a tensor of no elements, written as one."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1):
        return False
    name = dotted_name(node.func) or ""
    if name.rpartition(".")[2] not in ("empty", "zeros", "ones"):
        return False
    size = node.args[0]
    if isinstance(size, (ast.List, ast.Tuple)) and len(size.elts) == 1:
        size = size.elts[0]
    return isinstance(size, ast.Constant) and size.value == 0


def handed_over(call: ast.Call) -> Optional[ast.Call]:
    """`executor.submit(fn, a, b)` as the call it makes, `fn(a, b)`; None for any other call."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "submit" and call.args):
        return None
    target = call.args[0]
    if not isinstance(target, ast.Name) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    made = ast.Call(func=target, args=call.args[1:], keywords=call.keywords)
    return ast.copy_location(made, call)
