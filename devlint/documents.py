"""The Python in documentation: Markdown fences and reStructuredText code blocks as one program.

A page's code blocks are read as one program in page order (a tutorial defines ``device`` in one
block and uses it three blocks later), laid out on the page's own rows: every row outside a code
block is a blank line of the program, so a finding's row is the page's row. Inside a block, the
indentation the block sits at and a doctest prompt (``>>> ``, ``... ``) are cut from each line
and added back to the columns; a doctest's output lines are blank.

Blocks read: Markdown fences (````` ``` ````` or ``~~~``) whose language is ``python``, ``py``,
``python3``, ``pycon``, ``ipython`` or ``ipython3``; reST ``.. code-block::``, ``.. code::`` and
``.. sourcecode::`` with one of those languages, Sphinx's ``.. testcode::`` and ``.. doctest::``,
and ``::`` literal blocks (Python, as Sphinx highlights them by default).
IPython syntax in a block that is not Python as it is (a notebook exported to Markdown keeps
its ``%%time`` and ``!pip install``) is masked as in a notebook's cell. A block that is still not
valid Python on its own (a fragment, pseudo-code, a console session) is left out, so that one
sketch does not hide the page's other blocks.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Optional

from devlint.diagnostics import Edit, Finding, Position
from devlint.notebook import mask_ipython

DOCUMENT_SUFFIXES = (".md", ".markdown", ".rst")
_LANGUAGES = frozenset({"python", "py", "python3", "pycon", "ipython", "ipython3"})
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*\{?(?P<lang>[\w+-]*)")
_DIRECTIVE = re.compile(
    r"^(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>code-block|code|sourcecode|testcode|doctest)::"
    r"[ \t]*(?P<lang>[\w+-]*)[ \t]*$"
)
_PYTHON_DIRECTIVES = ("testcode", "doctest")  # Sphinx's doctest extension: Python always
_OPTION = re.compile(r"^[ \t]*:[\w-]+:")
_PROMPT = re.compile(r"^(>>>|\.\.\.)(?: |$)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def is_document(path: str) -> bool:
    return path.lower().endswith(DOCUMENT_SUFFIXES)


@dataclass(frozen=True)
class DocumentProgram:
    """The page's code as one program on the page's rows; ``prefixes[row - 1]`` is what was cut
    from the front of a code row ('' for a row outside any block, with ``code[row - 1]`` False)."""

    source: str
    prefixes: tuple[str, ...]
    code: tuple[bool, ...]

    def prefix_above(self, row: int) -> Optional[str]:
        """The cut prefix of the nearest code row at or above ``row`` (1-based); None above the
        first block."""
        for index in range(min(row, len(self.code)) - 1, -1, -1):
            if self.code[index]:
                return self.prefixes[index]
        return None


def extract(text: str, path: str) -> DocumentProgram:
    lines = _LINE_BREAK.split(text)
    blocks = _rst_blocks(lines) if path.lower().endswith(".rst") else _markdown_blocks(lines)
    program = [""] * len(lines)
    prefixes = [""] * len(lines)
    code = [False] * len(lines)
    for rows in blocks:
        cut = _cut_block([lines[row] for row in rows])
        if cut is None:
            continue
        for row, (prefix, body) in zip(rows, cut):
            if prefix is None:
                continue  # a doctest's output
            program[row], prefixes[row], code[row] = body, prefix, True
    return DocumentProgram("\n".join(program), tuple(prefixes), tuple(code))


def _markdown_blocks(lines: list[str]) -> list[list[int]]:
    blocks: list[list[int]] = []
    row = 0
    while row < len(lines):
        match = _FENCE.match(lines[row])
        row += 1
        if match is None:
            continue
        fence = match["fence"]
        rows: list[int] = []
        while row < len(lines):
            stripped = lines[row].strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                row += 1
                break
            rows.append(row)
            row += 1
        if match["lang"].lower() in _LANGUAGES:
            blocks.append(rows)
    return blocks


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _rst_blocks(lines: list[str]) -> list[list[int]]:
    blocks: list[list[int]] = []
    row = 0
    while row < len(lines):
        line = lines[row]
        directive = _DIRECTIVE.match(line)
        literal = (
            directive is None
            and line.rstrip().endswith("::")
            and not line.lstrip().startswith("..")
        )
        python = directive is not None and (
            directive["name"] in _PYTHON_DIRECTIVES or directive["lang"].lower() in _LANGUAGES
        )
        if directive is not None and not python:
            row += 1
            continue
        if directive is None and not literal:
            row += 1
            continue
        base = _indent_of(line)
        row += 1
        while directive is not None and row < len(lines) and _OPTION.match(lines[row]):
            row += 1  # :linenos:, :caption: ...
        rows: list[int] = []
        while row < len(lines):
            current = lines[row]
            if current.strip() and _indent_of(current) <= base:
                break
            rows.append(row)
            row += 1
        while rows and not lines[rows[-1]].strip():
            rows.pop()
        if any(lines[r].strip() for r in rows):
            blocks.append(rows)
    return blocks


def _cut_block(block: list[str]) -> Optional[list[tuple[Optional[str], str]]]:
    """Each line's cut prefix and code (prefix None for a doctest's output line); None when the
    block is not Python on its own."""
    filled = [line for line in block if line.strip()]
    if not filled:
        return None
    indent = min(_indent_of(line) for line in filled)
    doctest = any(line[indent:].startswith(">>>") for line in filled)
    cut: list[tuple[Optional[str], str]] = []
    for line in block:
        prefix, body = line[:indent], line[indent:]
        if doctest:
            prompt = _PROMPT.match(body)
            if prompt is None:
                cut.append((None, ""))
                continue
            size = prompt.end()
            prefix, body = prefix + body[:size], body[size:]
        elif not line.strip():
            prefix, body = line, ""
        cut.append((prefix, body))
    if _parses(cut):
        return cut
    # A notebook exported to Markdown keeps its IPython lines (`%%time`, `!pip install`).
    masked = _ipython_masked(cut)
    return masked if masked is not None and _parses(masked) else None


def _parses(cut: list[tuple[Optional[str], str]]) -> bool:
    source = "\n".join(body for prefix, body in cut if prefix is not None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _ipython_masked(
    cut: list[tuple[Optional[str], str]],
) -> Optional[list[tuple[Optional[str], str]]]:
    """The block with IPython syntax masked as in a notebook's cell, every other line and column
    in place; None where there is none."""
    code = [index for index, (prefix, _) in enumerate(cut) if prefix is not None]
    masked = mask_ipython([cut[index][1] + "\n" for index in code])
    if all(line[:-1] == cut[index][1] for index, line in zip(code, masked)):
        return None
    result = list(cut)
    for index, line in zip(code, masked):
        result[index] = (cut[index][0], line[:-1])
    return result


def on_page(finding: Finding, program: DocumentProgram) -> Finding:
    """A finding in the page's columns; its fix is kept only where every edit stays in a block."""

    def column(position: Position) -> Position:
        index = position.row - 1
        shift = len(program.prefixes[index]) if index < len(program.prefixes) else 0
        return Position(position.row, position.column + shift)

    fix = finding.fix
    if fix is not None:
        edits = [_page_edit(edit, program, column) for edit in fix.edits]
        located = [edit for edit in edits if edit is not None]
        fix = replace(fix, edits=tuple(located)) if len(located) == len(edits) else None
    return replace(finding, start=column(finding.start), end=column(finding.end), fix=fix)


def _page_edit(
    edit: Edit, program: DocumentProgram, column: Callable[[Position], Position]
) -> Optional[Edit]:
    """An edit of the program as an edit of the page, inside a code block, or None. New lines in
    the content get the block's indentation (or prompt) in front."""
    index = edit.start.row - 1
    in_code = index < len(program.code) and program.code[index]
    if in_code and edit.end.row == edit.start.row:
        cut = program.prefixes[index]
        start = column(edit.start)
        if edit.start == edit.end and edit.start.column == 1 and edit.content.endswith("\n"):
            # Whole lines inserted: each takes the prefix, a blank one without trailing spaces.
            lines = edit.content[:-1].split("\n")
            body = "".join((cut + line if line else cut.rstrip()) + "\n" for line in lines)
            return Edit(Position(start.row, 1), start, body + cut)
        return Edit(start, column(edit.end), edit.content.replace("\n", "\n" + cut))
    if not in_code and edit.start == edit.end and edit.start.column == 1:
        # A line inserted after a block's last line: it joins that block.
        prefix = program.prefix_above(edit.start.row)
        if prefix is None:
            return None
        lines = edit.content.split("\n")
        body = "\n".join(prefix + line if line else line for line in lines)
        return Edit(edit.start, edit.end, body)
    return None
