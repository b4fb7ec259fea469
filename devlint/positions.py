"""Where the nodes of findings are, without laying out the whole file.

LibCST's `PositionProvider` generates the code of the whole module to learn every node's range:
on a large file (PyTorch has 1 MB ones) that costs seconds for a single finding. The nodes a
finding needs (its node and statement, the nodes its message cites, its fix's anchors) lie in a
few statements. Each top-level statement holding some is laid out alone, as a module of one
statement, with its bodies cut down to the statements holding them (one method of a large class),
and CPython's parser, several times cheaper than the layout, tells on which line each starts.
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
        kept: list[_Kept] = []
        statement = _pruned(module.body[index], spans[index], {id(n): n for n in nodes}, kept)
        local = every_range(module.with_changes(body=[statement], header=(), footer=()))
        for holder in kept:
            laid_out = local[holder.laid_out]
            shift = holder.code_lines[0] - laid_out.start.line
            if laid_out.end.line + shift != holder.code_lines[1]:
                return every_range(module)  # lines CPython counts otherwise (a continued decorator)
            for node in holder.nodes:
                found = local[node]
                ranges[node] = CodeRange(
                    (found.start.line + shift, found.start.column),
                    (found.end.line + shift, found.end.column),
                )
    return ranges


@dataclass(frozen=True)
class _Kept:
    """A statement kept in the cut-down layout, with the wanted nodes it is the innermost kept
    statement of. Its columns are those of the file (its indentation is kept) and its lines
    shift by a constant: the distance between its first line laid out and CPython's."""

    laid_out: cst.CSTNode  # the statement in the cut-down tree
    code_lines: tuple[int, int]  # its first and last lines of code, from CPython's parse
    nodes: tuple[cst.CSTNode, ...]


def _pruned(
    statement: cst.BaseStatement,
    trees: Sequence[ast.stmt],
    wanted: dict[int, cst.CSTNode],
    kept: list[_Kept],
) -> cst.BaseStatement:
    """``statement`` (``trees``: CPython's statements for it) with each indented body cut to the
    statements holding ``wanted`` nodes: a large class or function is not laid out whole for a
    finding in one of its methods. Notes in ``kept`` what each kept statement holds."""
    own = dict(wanted)
    laid_out, last = statement, trees[-1]
    block = getattr(statement, "body", None)
    # A wanted statement or block spans the whole body: that level is laid out whole.
    if not isinstance(block, cst.IndentedBlock) or {id(statement), id(block)} & own.keys():
        children = None
    else:
        body = getattr(trees[0], "body", None) if len(trees) == 1 else None
        children = _aligned(block.body, body)
    cut: list[cst.BaseStatement] = []
    for child, child_trees in children or ():
        inside = {key: node for node in descendants(child) if (key := id(node)) in own}
        if inside:
            for key in inside:
                del own[key]
            cut.append(_pruned(child, child_trees, inside, kept))
            last = child_trees[-1]  # where the statement cut down ends
    if cut:
        assert isinstance(block, cst.IndentedBlock)
        laid_out = statement.with_changes(body=block.with_changes(body=cut))
    if own:
        code_lines = (trees[0].lineno, last.end_lineno or last.lineno)
        kept.append(_Kept(laid_out, code_lines, tuple(own.values())))
    return laid_out


def _aligned(
    statements: Sequence[cst.BaseStatement], body: object
) -> Optional[list[tuple[cst.BaseStatement, list[ast.stmt]]]]:
    """Each of LibCST's ``statements`` with CPython's statements for it: LibCST keeps
    `a = 1; b = 2` as one line, CPython splits it. None where the two do not line up."""
    if not isinstance(body, list):
        return None
    pairs: list[tuple[cst.BaseStatement, list[ast.stmt]]] = []
    position = 0
    for child in statements:
        count = len(child.body) if isinstance(child, cst.SimpleStatementLine) else 1
        pairs.append((child, body[position : position + count]))
        position += count
    return pairs if position == len(body) else None


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
) -> Optional[list[list[ast.stmt]]]:
    """CPython's statements for each top-level statement; None where CPython cannot parse the
    source or its statements do not line up with LibCST's."""
    try:
        body = (syntax_tree or parse_quietly(source)).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    pairs = _aligned(module.body, body)
    return None if pairs is None else [trees for _, trees in pairs]
