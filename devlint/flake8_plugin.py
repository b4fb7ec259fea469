"""devlint's findings inside flake8, for projects that run flake8 and nothing else.

flake8 finds this class through the ``flake8.extension`` entry point ``DEV`` and, because
``__init__`` asks for ``tree``, runs it once per file. flake8 owns selection (``--select``,
``--extend-ignore``, per-file ignores) and ``# noqa``; the plugin reports the rules devlint
enables by default, with devlint's codes and messages. devlint's own suppressions (a
``# noqa`` on either line of a multi-line statement, ``# devlint: noqa``) apply as well.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator, Sequence
from functools import lru_cache

from devlint import __version__
from devlint.config import DEFAULT_CODES
from devlint.diagnostics import PARSE_ERROR_CODE
from devlint.engine import RuleSet, lint_source

Flake8Error = tuple[int, int, str, type]


@lru_cache(maxsize=1)
def _rule_set() -> RuleSet:
    """One rule set per process: flake8 forks workers, each builds it once and reuses it."""
    return RuleSet(DEFAULT_CODES | {PARSE_ERROR_CODE})


def _source_bytes(lines: Sequence[str]) -> bytes:
    """The file's bytes again, in the encoding its coding cookie names, so that devlint decodes
    exactly the text flake8 read (and counts columns over the same characters)."""
    text = "".join(lines)
    head = "".join(lines[:2]).encode("utf-8", "surrogateescape")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeEncodeError):
        return text.encode("utf-8", "surrogateescape")


class DevlintChecker:
    """The flake8 checker: devlint's findings with flake8's 0-based columns."""

    name = "devlint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        # flake8 passes the lines it read (from the file or standard input); ``tree`` is only
        # asked for so that flake8 runs this checker once per file.
        self._filename = filename
        self._lines = lines

    def run(self) -> Iterator[Flake8Error]:
        result = lint_source(self._filename, _source_bytes(self._lines), _rule_set())
        for finding in result.findings:
            message = f"{finding.code} {finding.message}"
            yield finding.start.row, finding.start.column - 1, message, type(self)
