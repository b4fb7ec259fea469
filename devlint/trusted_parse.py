"""``libcst.parse_module`` without re-validating what the parser built.

Every LibCST node validates itself on construction (``CSTNode.__post_init__``
calls ``_validate``): that protects trees built or edited by hand. The native
parser only builds nodes from source it has just parsed, and nodes of shapes
it produced, so for its output the checks always pass; on real repositories
they were about a fifth of the parse, the largest cost devlint has. While
devlint parses, the hook does nothing; it is restored straight after, and a
lock keeps two parses in two threads from mixing up the original and the stand-in.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Callable, Optional

import libcst as cst

_SWITCH = threading.Lock()
_LOCAL = threading.local()  # this thread's stand-in parser, if any


def _trusted(self: cst.CSTNode) -> None:
    """Stands in for ``CSTNode.__post_init__`` while the parser builds a tree."""


def parse_module(source: str) -> cst.Module:
    """The module of ``source``, as ``libcst.parse_module`` returns it (and raises)."""
    stand_in: Optional[Callable[[str], cst.Module]] = getattr(_LOCAL, "parse", None)
    if stand_in is not None:
        return stand_in(source)
    return parse_fresh(source)


@contextmanager
def parsing_with(parse: Callable[[str], cst.Module]) -> Iterator[None]:
    """Within the block, this thread's ``parse_module`` calls ``parse``, which must return what
    ``parse_fresh`` would (the language server's parser reuses the statements of the previous
    version of a file that an edit left alone)."""
    previous = getattr(_LOCAL, "parse", None)
    _LOCAL.parse = parse
    try:
        yield
    finally:
        _LOCAL.parse = previous


def parse_fresh(source: str) -> cst.Module:
    """``source`` parsed from scratch, as ``libcst.parse_module`` returns it (and raises)."""
    node_class = cst.CSTNode
    with _SWITCH:
        checked = node_class.__dict__.get("__post_init__")
        if checked is None:  # a LibCST that validates elsewhere: nothing to skip
            return cst.parse_module(source)
        node_class.__post_init__ = _trusted  # type: ignore[method-assign]
        try:
            return cst.parse_module(source)
        finally:
            node_class.__post_init__ = checked  # type: ignore[method-assign]
