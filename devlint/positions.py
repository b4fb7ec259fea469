"""Where the nodes of findings are, without laying out the whole file.

LibCST's `PositionProvider` generates the code of the whole module to learn every node's range:
on a large file (PyTorch has 1 MB ones) that costs seconds for a single finding. The nodes a
finding needs (its node and statement, the nodes its message cites, its fix's anchors) lie in a
few top-level statements. Each of those is laid out alone, as a module of one statement, and
CPython's parser, several times cheaper than the layout, tells on which line it starts.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Optional, cast

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from devlint.complexity import parse_quietly
from devlint.traversal import descendants

Ranges = Mapping[cst.CSTNode, CodeRange]


def every_range(module: cst.Module) -> Ranges:
    """Every node's range. ``MetadataWrapper.resolve`` would also run an empty batch of visitors
    over the tree, copying every node for nothing: as costly as the positions themselves."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    try:
        return cast(Ranges, PositionProvider()._gen(wrapper))
    except AttributeError:  # a LibCST without that entry point
        return wrapper.resolve(PositionProvider)


def ranges_of(
    module: cst.Module,
    source: str,
    wanted: Collection[cst.CSTNode],
    syntax_tree: Optional[ast.Module] = None,
) -> Ranges:
    """The ranges of the ``wanted`` nodes (and perhaps others), as `every_range` gives them;
    ``syntax_tree`` is CPython's parse of the source, where the caller has one."""
    homes = _statements_holding(module, wanted)
    spans = _spans(module, source, syntax_tree) if homes is not None else None
    if homes is None or spans is None:
        return every_range(module)  # a node outside the statements, or grammar CPython lacks
    ranges: dict[cst.CSTNode, CodeRange] = {}
    for index, nodes in homes.items():
        statement, span = module.body[index], spans[index]
        local = every_range(module.with_changes(body=[statement], header=(), footer=()))
        shift = span.first_line - 1
        laid_out = local[statement]
        if (laid_out.start.line + shift, laid_out.end.line + shift) != span.code_lines:
            return every_range(module)  # lines CPython counts otherwise (a continued decorator)
        for node in nodes:
            found = local[node]
            ranges[node] = CodeRange(
                (found.start.line + shift, found.start.column),
                (found.end.line + shift, found.end.column),
            )
    return ranges


@dataclass(frozen=True)
class _Span:
    """Where a top-level statement is: its first line (blank and comment lines before it
    included), and the first and last lines of its code (from `def` for a decorated one)."""

    first_line: int
    code_lines: tuple[int, int]


def _statements_holding(
    module: cst.Module, wanted: Collection[cst.CSTNode]
) -> Optional[dict[int, list[cst.CSTNode]]]:
    """The wanted nodes by the index of the top-level statement holding them; None when one is
    in none (the module itself, say)."""
    missing = {id(node): node for node in wanted}
    homes: dict[int, list[cst.CSTNode]] = {}
    for index, statement in enumerate(module.body):
        for node in descendants(statement):
            if id(node) in missing:
                homes.setdefault(index, []).append(missing.pop(id(node)))
                if not missing:
                    return homes
    return None


def _spans(
    module: cst.Module, source: str, syntax_tree: Optional[ast.Module]
) -> Optional[list[_Span]]:
    """Each top-level statement's span, from CPython's parse; None where CPython cannot parse
    the source or its statements do not line up with LibCST's."""
    try:
        body = (syntax_tree or parse_quietly(source)).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans: list[_Span] = []
    position = 0
    for statement in module.body:
        # CPython splits `a = 1; b = 2` into statements; LibCST keeps one line of them.
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        if position + count > len(body):
            return None
        first, last = body[position], body[position + count - 1]
        top = _top_line(first) - _leading_lines(statement)
        spans.append(_Span(top, (first.lineno, last.end_lineno or last.lineno)))
        position += count
    return spans if position == len(body) else None


def _top_line(statement: ast.stmt) -> int:
    """The line a statement's code starts on: its first decorator's, for a decorated one."""
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    return decorators[0].lineno if decorators else statement.lineno


def _leading_lines(statement: cst.BaseStatement) -> int:
    leading: Sequence[cst.EmptyLine] = getattr(statement, "leading_lines", ())
    count = len(leading)
    decorators: Sequence[cst.Decorator] = getattr(statement, "decorators", ())
    if decorators:
        count += len(decorators[0].leading_lines)
    return count
