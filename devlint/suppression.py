"""``# noqa`` comments: on a line, for a statement, or for a whole file."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

_CODES = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
_LINE_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
_FILE_NOQA = re.compile(
    rf"^[ \t]*#\s*devlint:\s*noqa(?::\s*(?P<codes>{_CODES}))?[ \t]*$", re.IGNORECASE | re.MULTILINE
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


@dataclass(frozen=True)
class Suppressions:
    lines: Sequence[str]
    file_codes: tuple[Codes, ...]

    @classmethod
    def scan(cls, source: str) -> Suppressions:
        file_codes = tuple(_parse_codes(m.group("codes")) for m in _FILE_NOQA.finditer(source))
        return cls(split_lines(source), file_codes)

    def suppresses(self, code: str, rows: Sequence[int]) -> bool:
        """Whether ``code`` is silenced for the whole file or on any of ``rows`` (1-based)."""
        for codes in self.file_codes:
            if codes is None or code in codes:
                return True
        for row in rows:
            if not 1 <= row <= len(self.lines):
                continue
            line = self.lines[row - 1]
            if "#" not in line:
                continue
            for match in _LINE_NOQA.finditer(line):
                codes = _parse_codes(match.group("codes"))
                if codes is None or code in codes:
                    return True
        return False
