"""``# noqa`` comments: on a line, for a statement, or for a whole file."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

_CODES = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
_LINE_NOQA = re.compile(rf"#\s*noqa(?:\s*:\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
_FILE_NOQA = re.compile(
    rf"#\s*devlint:\s*noqa(?:\s*:\s*(?P<codes>{_CODES}))?[ \t]*$", re.IGNORECASE
)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_NOQA_WORD = re.compile("noqa", re.IGNORECASE)

# None means every code is suppressed.
Codes = Optional[frozenset[str]]


def _parse_codes(text: Optional[str]) -> Codes:
    if text is None:
        return None
    return frozenset(code.upper() for code in re.split(r"[\s,]+", text.strip()) if code)


def split_lines(source: str) -> list[str]:
    """Lines as the parser counts them (\\n, \\r\\n and \\r all end a line)."""
    return _LINE_BREAK.split(source)


def _comments(source: str) -> tuple[dict[int, str], dict[int, int]]:
    """Each line's comment and its 0-based column, found by the tokenizer: a `# noqa` inside a
    string is no comment."""
    comments: dict[int, str] = {}
    columns: dict[int, int] = {}
    if not _NOQA_WORD.search(source):
        return comments, columns  # every comment read here is a `noqa` one: no need to tokenize
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
                columns[token.start[0]] = token.start[1]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Grammar newer than this Python's tokenizer: fall back to the text after each `#`.
        comments.clear()
        columns.clear()
        for row, line in enumerate(split_lines(source), start=1):
            if "#" in line:
                comments[row] = line[line.index("#") :]
                columns[row] = line.index("#")
    return comments, columns


@dataclass(frozen=True)
class Directive:
    """One `# noqa: CODES` in a comment: its row, the columns (0-based, in the line) of the
    directive and of its codes, and the codes as written."""

    row: int
    start: int
    end: int
    codes_start: int
    codes_end: int
    codes: tuple[str, ...]


@dataclass(frozen=True)
class Suppressions:
    comments: dict[int, str]
    file_codes: tuple[Codes, ...]
    columns: dict[int, int] = field(default_factory=dict)

    @classmethod
    def scan(cls, source: str) -> Suppressions:
        comments, columns = _comments(source)
        lines = split_lines(source)
        file_codes = tuple(
            _parse_codes(match.group("codes"))
            for row, comment in comments.items()
            if lines[row - 1].lstrip().startswith("#")  # a comment on a line of its own
            and (match := _FILE_NOQA.match(comment)) is not None
        )
        return cls(comments, file_codes, columns)

    def directives(self) -> list[Directive]:
        """Every line's `# noqa: CODES` directive (blanket ones, which name no code, left out)."""
        found: list[Directive] = []
        for row, comment in sorted(self.comments.items()):
            column = self.columns.get(row, 0)
            for match in _LINE_NOQA.finditer(comment):
                if match.group("codes") is None:
                    continue
                codes = tuple(c for c in re.split(r"[\s,]+", match.group("codes")) if c)
                found.append(
                    Directive(
                        row,
                        column + match.start(),
                        column + match.end(),
                        column + match.start("codes"),
                        column + match.end("codes"),
                        codes,
                    )
                )
        return found

    def file_suppresses(self, code: str) -> bool:
        return any(codes is None or code in codes for codes in self.file_codes)

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


_LINE_PARTS = re.compile(r"(\r\n|\r|\n)")


def _rows_ending_in_a_token(source: str) -> Optional[set[int]]:
    """Rows whose end lies inside a token (a multi-line string) or is continued by a backslash:
    a comment appended there would change the code. None where the tokenizer fails."""
    rows: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            rows.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return rows


def add_noqa(source: str, wanted: Mapping[int, Iterable[str]]) -> tuple[str, int]:
    """``source`` with ``# noqa: CODES`` on each row of ``wanted``, merged into a `# noqa: ...`
    already on the row, and how many rows changed. A row whose end is inside a string (or
    continued by a backslash) is left alone, and so is a row with a blanket `# noqa`."""
    unsafe_rows = _rows_ending_in_a_token(source)
    if unsafe_rows is None:
        return source, 0
    scanned = Suppressions.scan(source)
    directives = {directive.row: directive for directive in scanned.directives()}
    parts = _LINE_PARTS.split(source)
    lines, endings = parts[0::2], parts[1::2]
    changed = 0
    for row in sorted(wanted):
        if row > len(lines) or row in unsafe_rows or lines[row - 1].rstrip().endswith("\\"):
            continue
        line = lines[row - 1]
        codes = sorted({code.upper() for code in wanted[row]})
        directive = directives.get(row)
        if directive is not None:
            present = [code.upper() for code in directive.codes]
            missing = [code for code in codes if code not in present]
            if not missing:
                continue
            merged = ", ".join((*directive.codes, *missing))
            line = line[: directive.codes_start] + merged + line[directive.codes_end :]
        elif scanned.suppresses(codes[0], [row]):
            continue  # a blanket noqa comment already silences everything here
        else:
            line = f"{line.rstrip()}  # noqa: {', '.join(codes)}"
        lines[row - 1] = line
        changed += 1
    rebuilt = "".join(line + ending for line, ending in zip(lines, [*endings, ""]))
    return rebuilt, changed
