"""``# noqa`` comments: on a line, for a statement, or for a whole file."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

_CODES = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
_LINE_NOQA = re.compile(rf"#\s*noqa(?:\s*:\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
_FILE_NOQA = re.compile(
    rf"#\s*devlint:\s*noqa(?:\s*:\s*(?P<codes>{_CODES}))?[ \t]*$", re.IGNORECASE
)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

# None means every code is suppressed.
Codes = Optional[frozenset[str]]


def _parse_codes(text: Optional[str]) -> Codes:
    if text is None:
        return None
    return frozenset(code.upper() for code in re.split(r"[\s,]+", text.strip()) if code)


def split_lines(source: str) -> list[str]:
    """Lines as the parser counts them (\\n, \\r\\n and \\r all end a line)."""
    return _LINE_BREAK.split(source)


def _comments(source: str) -> dict[int, str]:
    """Each line's comment, found by the tokenizer: a `# noqa` inside a string is no comment."""
    comments: dict[int, str] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Grammar newer than this Python's tokenizer: fall back to the text after each `#`.
        for row, line in enumerate(split_lines(source), start=1):
            if "#" in line:
                comments[row] = line[line.index("#") :]
    return comments


@dataclass(frozen=True)
class Suppressions:
    comments: dict[int, str]
    file_codes: tuple[Codes, ...]

    @classmethod
    def scan(cls, source: str) -> Suppressions:
        comments = _comments(source)
        lines = split_lines(source)
        file_codes = tuple(
            _parse_codes(match.group("codes"))
            for row, comment in comments.items()
            if lines[row - 1].lstrip().startswith("#")  # a comment on a line of its own
            and (match := _FILE_NOQA.match(comment)) is not None
        )
        return cls(comments, file_codes)

    def suppresses(self, code: str, rows: Sequence[int]) -> bool:
        """Whether ``code`` is silenced for the whole file or on any of ``rows`` (1-based)."""
        for codes in self.file_codes:
            if codes is None or code in codes:
                return True
        for row in rows:
            comment = self.comments.get(row)
            if comment is None:
                continue
            for match in _LINE_NOQA.finditer(comment):
                codes = _parse_codes(match.group("codes"))
                if codes is None or code in codes:
                    return True
        return False
