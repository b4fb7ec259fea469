"""Refusing, cleanly, the files LibCST's parser cannot survive.

LibCST's native parser crashes the whole process (a segmentation fault) on
expressions nested a few thousand levels deep, and takes quadratic time on long
chains of unary or binary operators (3,000 terms: 4 s; 6,000: 18 s). Real code
never comes close, generated code can. A C-speed text screen flags the rare
suspicious file; only then does CPython's parser, which fails cleanly, measure
the real nesting depth, and a file too deep is reported instead of parsed.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import Optional

MAX_DEPTH = 400  # expression nesting LibCST parses quickly and safely
# LibCST holds about a gigabyte of tree per megabyte of source, built in minutes: real code stays
# far below this (PyTorch's largest file is 1.4 MB), generated data tables do not.
MAX_FILE_BYTES = 5 * 1024 * 1024
_SUSPICIOUS_LINE = 2_000  # characters
_SUSPICIOUS_BRACKETS = 100
_BRACKETS = re.compile(r"[^()\[\]{}]+")
_OPERATOR_RUN = re.compile(r"(?:[-+~]\s*){50}")
_NOT_RUN = re.compile(r"(?:\bnot\s+){50}")


def _bracket_depth(source: str) -> int:
    depth = deepest = 0
    for bracket in _BRACKETS.sub("", source):
        if bracket in "([{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def parse_quietly(source: str) -> ast.Module:
    """CPython's parse of a user's file, without its warnings (invalid escapes and the like):
    they concern the user's code, not devlint's, and Python 3.12 would print them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def _suspicious(source: str) -> bool:
    # Run on every file parsed: the cheap tests first, and the `not` regex (which has no literal
    # start to search for) only where "not" occurs often enough.
    return bool(
        _bracket_depth(source) > _SUSPICIOUS_BRACKETS
        or any(len(line) >= _SUSPICIOUS_LINE for line in source.split("\n"))
        or (source.count("not") >= 50 and _NOT_RUN.search(source))
        or _OPERATOR_RUN.search(source)
    )


def _ast_depth(tree: ast.AST) -> int:
    deepest = 0
    pending = [(tree, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


@dataclass(frozen=True)
class Refusal:
    message: str
    row: int = 1
    column: int = 1


def too_large(data: bytes) -> Optional[Refusal]:
    if len(data) <= MAX_FILE_BYTES:
        return None
    size, limit = len(data) / 1024 / 1024, MAX_FILE_BYTES // 1024 // 1024
    return Refusal(f"too large to analyse ({size:.1f} MB; devlint parses files up to {limit} MB)")


def too_complex(source: str) -> Optional[Refusal]:
    """Why the source must not reach LibCST's parser, or None when it is safe."""
    if not _suspicious(source):
        return None
    try:
        tree = parse_quietly(source)
    except SyntaxError as error:
        # Never hand LibCST what CPython rejects here: deep brackets are what crash it.
        return Refusal(f"syntax error: {error.msg}", error.lineno or 1, error.offset or 1)
    except (RecursionError, MemoryError):
        return Refusal("cannot parse: expressions nested too deeply")
    depth = _ast_depth(tree)
    if depth > MAX_DEPTH:
        return Refusal(
            f"cannot parse: expressions nested {depth} levels deep (at most {MAX_DEPTH})"
        )
    return None
