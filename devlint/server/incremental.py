"""Parse only what an edit changed: the top-level statements before and after it are reused.

LibCST's parse is most of a lint, and an editor re-lints a file at every keystroke although a
keystroke changes one statement. The previous version's statements are kept with their exact
text; an edit leaves a run of them unchanged at the start of the file and another at its end,
and only the text between is parsed, alone, as a module of its own. The result is checked:
the new statements must render back to exactly that text under the file's own settings
(indentation, newline), or the whole file is parsed again. Where a comment line indented like a
block sits at a boundary (LibCST hangs it on the block before it), where the middle does not
parse on its own (an `else:` that continues the statement before it, an indented line, half an
expression), and on the first version of a file, the whole file is parsed, as the CLI parses it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devlint.trusted_parse import parse_fresh

_INDENTED_COMMENT = re.compile(r"^[ \t]+#", re.MULTILINE)
_MAX_FILES = 64  # files whose last parse is kept


@dataclass(frozen=True)
class _Parsed:
    module: cst.Module
    header: str  # the text before the first statement
    texts: tuple[str, ...]  # each statement's text, its leading blank and comment lines included
    footer: str

    @property
    def source(self) -> str:
        return self.header + "".join(self.texts) + self.footer


def _leading_text(text: str) -> str:
    """The blank and comment lines a statement's text starts with."""
    end = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        end += len(line)
    return text[:end]


def _has_code(text: str) -> bool:
    return text != _leading_text(text)


def _lines_text(module: cst.Module, lines: Sequence[cst.EmptyLine]) -> str:
    return "".join(module.code_for_node(line) for line in lines)


def _split(module: cst.Module, source: str) -> Optional[_Parsed]:
    """The module with the text of each of its parts; None where they do not add up to
    ``source`` exactly (then the next version is parsed whole)."""
    texts = tuple(module.code_for_node(statement) for statement in module.body)
    header, footer = _lines_text(module, module.header), _lines_text(module, module.footer)
    if not texts or header + "".join(texts) + footer != source:
        return None
    return _Parsed(module, header, texts, footer)


class IncrementalParser:
    """The last parse of each file; ``parse(path, source)`` returns what a fresh parse would."""

    def __init__(self) -> None:
        self._last: dict[str, _Parsed] = {}
        self.reused = 0  # parses that reused statements (for tests and the benchmark)

    def forget(self, path: str) -> None:
        self._last.pop(path, None)

    def parse(self, path: str, source: str) -> cst.Module:
        previous = self._last.get(path)
        if previous is not None and previous.source == source:
            return previous.module  # trees are never changed in place: the same text, reused
        reused = self._reuse(previous, source) if previous is not None else None
        if reused is not None:
            self.reused += 1
            self._remember(path, reused)
            return reused.module
        module = parse_fresh(source)  # raises for a file that does not parse: keep the last
        parsed = _split(module, source)
        if parsed is not None:
            self._remember(path, parsed)
        return module

    def _remember(self, path: str, parsed: _Parsed) -> None:
        self._last.pop(path, None)
        if len(self._last) >= _MAX_FILES:
            self._last.pop(next(iter(self._last)))
        self._last[path] = parsed

    def _reuse(self, old: _Parsed, source: str) -> Optional[_Parsed]:
        """The new version's parse from the old one's statements and the changed middle."""
        if not source.startswith(old.header):
            return None
        start, first = len(old.header), 0
        while first < len(old.texts) and source.startswith(old.texts[first], start):
            start += len(old.texts[first])
            first += 1
        end, last = len(source), len(old.texts)
        if source.endswith(old.footer) and len(source) - len(old.footer) >= start:
            end -= len(old.footer)
            while last > first and end - len(old.texts[last - 1]) >= start:
                text = old.texts[last - 1]
                begins = end - len(text)
                line_start = begins == start or source[begins - 1] in "\r\n"
                if not (line_start and source.startswith(text, begins)):
                    break  # a statement begins at a line's start: the middle's last line ends
                end -= len(text)
                last -= 1
        if last == len(old.texts):
            end = len(source)  # the edit reaches the end: the middle takes the footer too
        if not _has_code(source[start:end]):
            # Statements removed, or blank lines typed: the middle takes a neighbour along.
            if last < len(old.texts):
                end += len(old.texts[last])
                last += 1
            elif first > 0:
                first -= 1
                start -= len(old.texts[first])
            else:
                return None
        if last < len(old.texts) and _INDENTED_COMMENT.search(_leading_text(old.texts[last])):
            return None  # that comment may belong to a block the middle now ends with
        middle = source[start:end]
        if _INDENTED_COMMENT.search(_leading_text(middle)):
            return None  # a comment that may belong to the block before
        try:
            chunk = parse_fresh(middle)
        except Exception:
            return None  # it does not stand alone; the whole file says why, as the CLI does
        parsed = _assemble(old, chunk, first, last)
        if parsed is None or parsed.header + "".join(parsed.texts) + parsed.footer != source:
            return None
        return parsed


def _assemble(old: _Parsed, chunk: cst.Module, first: int, last: int) -> Optional[_Parsed]:
    """The old statements around the chunk's, in one module with the file's settings; None
    where the chunk was parsed under other settings or does not render back the same."""
    config = old.module
    tail = last == len(old.texts)
    same_settings = (chunk.default_indent, chunk.default_newline) == (
        config.default_indent,
        config.default_newline,
    )
    if not same_settings or not chunk.body or (chunk.footer and not tail):
        return None
    body: list[cst.BaseStatement] = list(chunk.body)
    header: Sequence[cst.EmptyLine] = config.header
    if first == 0:
        header = (*config.header, *chunk.header)  # lines before the file's first statement
    elif chunk.header:
        # Parsed alone, the chunk's first statement gave its leading lines to the chunk.
        leading: Sequence[cst.EmptyLine] = getattr(body[0], "leading_lines", ())
        body[0] = body[0].with_changes(leading_lines=(*chunk.header, *leading))
    module = config.with_changes(
        header=header,
        body=(*config.body[:first], *body, *config.body[last:]),
        footer=chunk.footer if tail else config.footer,
        has_trailing_newline=chunk.has_trailing_newline if tail else config.has_trailing_newline,
    )
    new_header = _lines_text(module, module.header)
    texts = tuple(module.code_for_node(statement) for statement in body)
    footer = _lines_text(module, module.footer)
    return _Parsed(module, new_header, (*old.texts[:first], *texts, *old.texts[last:]), footer)
