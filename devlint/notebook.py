"""Jupyter notebooks (nbformat 4): the code cells as one program, and edits written back.

As Ruff does, the code cells are read in order and joined into one program (each cell ends with a
newline), so that a model moved in one cell and a batch made in another are seen together; a
finding's row in that program maps back to a cell (numbered from 1 among all the notebook's
cells, Markdown included, as Jupyter and Ruff number them) and a row in it. IPython syntax is
masked line by line, never a syntax error: line magics (``%matplotlib inline``), shell escapes
(``!pip install``, ``files = !ls``), help (``torch.nn?``) and automagic commands (``pip install``)
become blank lines (``pass`` with their indentation inside a block); a cell that starts with a
cell magic that runs Python (``%%time``, ``%%timeit``, ``%%capture`` ...) loses only that line,
and any other cell magic
(``%%bash``, ``%%writefile`` ...) hides the whole cell. Only a line that starts a statement is
masked (not one inside brackets, a string or a backslash continuation). Masked lines keep their
place, so every other line keeps its row. As IPython does, a cell whose first non-blank line is
indented loses that indentation on every line that starts with it (tutorials paste indented
code into cells, and Jupyter runs it), and pasted prompts (``>>> ``, ``... ``, ``In [3]: ``) are
cut too; a finding's and an edit's columns on such a line are shifted back by what was cut, so
every position is the cell's own.

A cell's ``source`` is a list of strings (what Jupyter writes) or one string (nbformat allows it,
and Ruff reads it); anything else makes the notebook unreadable. Writing back never re-serialises
the notebook: the JSON text of each changed ``source`` value is spliced into the original text,
reusing the original JSON of every line that did not change, so outputs, metadata, execution
counts, key order, indentation and the trailing newline stay byte for byte.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Optional

from devlint.diagnostics import Edit, Finding, Position

NOTEBOOK_SUFFIX = ".ipynb"

# Cell magics whose body is Python that runs in the kernel's namespace (Ruff's list).
_PYTHON_CELL_MAGICS = frozenset(
    {"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"}
)
# A line IPython reads as a magic, a shell escape or a help request.
_ESCAPE = re.compile(r"^[ \t]*(?:%|!(?!=)|\?)")
_HELP = re.compile(r"\?\??[ \t]*$")
_SHELL_ASSIGNMENT = re.compile(r"^[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*[!%]")
# IPython's automagic commands most often typed without their `%` in notebooks.
_AUTOMAGIC_WORD = (
    r"^[ \t]*(?:pip|conda|mamba|cd|ls|pwd|env|mkdir|rm|cp|mv|cat|load_ext|reload_ext|"
    r"matplotlib|time|timeit|who|whos|reset|run|pylab|config|autoreload|alias|unalias|"
    r"bookmark|dhist|pushd|popd|rehashx|pinfo|pinfo2|psearch|pdef|pdoc|psource|pfile)[ \t]+"
)
_AUTOMAGIC = re.compile(_AUTOMAGIC_WORD + r"(?![=(\[.,:+\-*/%&|^<>!]|$)")
# The same word before an operator (`ls /content/checkpoints/`, `rm -rf ~/x`): a command where
# the line is no Python of its own.
_AUTOMAGIC_BEFORE_OPERATOR = re.compile(_AUTOMAGIC_WORD + r"[/\-~.]")
# Syntax errors of a line that the next line may complete.
_OPEN_ENDS = ("never closed", "unexpected EOF", "unterminated triple-quoted")
_INDENT = re.compile(r"[ \t]*")
_LEADING_INDENT = re.compile(r"[ \t]+")
# IPython's prompt strippers (classic_prompt, ipython_prompt): each line's prompt, and the prompt
# that must open the cell (or the second line must carry one) for any to be cut.
_CLASSIC_PROMPT = re.compile(r"(?:>>>|\.\.\.)(?: |$)")
_IPYTHON_PROMPT = re.compile(r"(?:In \[\d+\]: |[ \t]*\.{3,}: ?)")
_PROMPTS = (
    (_CLASSIC_PROMPT, re.compile(r">>>(?: |$)")),
    (_IPYTHON_PROMPT, _IPYTHON_PROMPT),
)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
# IPython runs `await` at a cell's top level.
_TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


class NotebookError(Exception):
    """A notebook devlint cannot read: the reason, and where in the file (1-based)."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.row, self.column = message, row, column


@dataclass(frozen=True)
class CodeCell:
    """One code cell: its number among all cells (1-based), its source, and whether the notebook
    stores that source as a list of lines."""

    number: int
    source: str
    as_list: bool


@dataclass(frozen=True)
class CellSpan:
    """Where a cell's rows lie in the program: rows ``first`` .. ``first + rows - 1``."""

    number: int
    first: int
    rows: int
    ends_with_newline: bool


@dataclass(frozen=True)
class Notebook:
    text: str
    cells: tuple[CodeCell, ...]

    @cached_property
    def _value_spans(self) -> dict[int, tuple[int, int]]:
        # Found only when a notebook is written back or a report points into its JSON: linting
        # needs the parsed values only.
        return _source_spans(self.text)

    def source_span(self, cell: CodeCell) -> tuple[int, int]:
        """Where the cell's ``source`` value lies in the text (character offsets)."""
        span = self._value_spans.get(cell.number - 1)
        if span is None:
            raise NotebookError(f"cell {cell.number}: its `source` could not be located")
        return span

    def program(self, hidden: frozenset[int] = frozenset()) -> Program:
        """The code cells as one program, IPython syntax masked; the cells numbered in ``hidden``
        keep their rows, blank."""
        parts: list[str] = []
        spans: list[CellSpan] = []
        cuts: dict[int, str] = {}
        row = 1
        for cell in self.cells:
            if not cell.source:
                continue  # an empty cell has no rows
            lines = source_lines(cell.source)
            ends = lines[-1].endswith(("\n", "\r"))
            if not ends:
                lines[-1] += "\n"
            lines, cut = strip_ipython_prefixes(lines)
            cuts.update((row + index, prefix) for index, prefix in enumerate(cut) if prefix)
            masked = mask_ipython(lines)
            if cell.number in hidden:
                masked = [_ending(line) for line in masked]
            parts.extend(masked)
            spans.append(CellSpan(cell.number, row, len(lines), ends))
            row += len(lines)
        return Program("".join(parts), tuple(spans), cuts)


@dataclass(frozen=True)
class Program:
    """The notebook's code as one Python source, with the cell each row came from."""

    source: str
    spans: tuple[CellSpan, ...]
    # Program row -> the indentation IPython's leading-indent rule cut from it (rows not cut
    # are absent).
    cuts: Mapping[int, str] = field(default_factory=dict)

    def in_cell(self, finding: Finding) -> Finding:
        """The finding with the cell it is in, its columns and its fix's the cell's own."""
        span = self.span_of(finding.start.row) or (self.spans[-1] if self.spans else None)
        if span is None:
            return finding
        located = replace(finding, cell=span.number, cell_first_row=span.first)
        if not self.cuts:
            return located
        fix = finding.fix
        if fix is not None:
            fix = replace(fix, edits=tuple(self._uncut(edit) for edit in fix.edits))
        start, end = self.column(finding.start), self.column(finding.end)
        return replace(located, start=start, end=end, fix=fix)

    def column(self, position: Position) -> Position:
        """A program position in its cell's columns (the same unless the row was cut)."""
        cut = self.cuts.get(position.row)
        return Position(position.row, position.column + len(cut)) if cut else position

    def _uncut(self, edit: Edit) -> Edit:
        """An edit in the cell's columns; a new line it adds gets the cut indentation back."""
        cut = self.cuts.get(edit.start.row, "")
        if cut and edit.start == edit.end and edit.start.column == 1:
            # Whole lines inserted before a row: before its cut indentation, each with its own.
            lines = edit.content.split("\n")
            content = "\n".join(cut + line if line else line for line in lines)
            return Edit(edit.start, edit.end, content)
        content = _recut(edit.content, cut) if cut else edit.content
        return Edit(self.column(edit.start), self.column(edit.end), content)

    def cite(self, row: int) -> str:
        """A program row as a message names it: ``3 of cell 4``."""
        span = self.span_of(row)
        return f"{row - span.first + 1} of cell {span.number}" if span is not None else str(row)

    def span_of(self, row: int) -> Optional[CellSpan]:
        """The cell holding program row ``row`` (1-based); None past the last cell."""
        index = bisect.bisect_right([span.first for span in self.spans], row) - 1
        if index < 0:
            return None
        span = self.spans[index]
        return span if row < span.first + span.rows else None


def _recut(content: str, cut: str) -> str:
    """``content``'s new lines with the cut indentation or prompt back, but for blank ones (a
    blank line stays empty, with no trailing whitespace); the last part runs into the line the
    edit was made in, which always had it."""
    first, *rest = content.split("\n")
    last = len(rest) - 1
    return first + "".join(
        "\n" + (cut if part or index == last else "") + part for index, part in enumerate(rest)
    )


def source_lines(source: str) -> list[str]:
    """A source's lines, each with its ending, split where Python's parser splits them."""
    return _LINE.findall(source)


def strip_ipython_prefixes(lines: Sequence[str]) -> tuple[list[str], list[str]]:
    """What IPython cuts from the front of a cell's lines before it reads them: the cell's
    leading indentation, then pasted prompts (``>>> ``, ``... ``, ``In [3]: ``). The lines, and
    what each lost ('' for none)."""
    lines, cut = leading_indent(lines)
    # IPython drops the blank lines that open a cell first.
    opening = lines[next((n for n, line in enumerate(lines) if line.strip()), 0) :]
    for prompt, initial in _PROMPTS:
        if opening and (
            initial.match(opening[0]) or (len(opening) > 1 and prompt.match(opening[1]))
        ):
            taken = [match.group(0) if (match := prompt.match(line)) else "" for line in lines]
            lines = [line[len(prefix) :] for line, prefix in zip(lines, taken)]
            cut = [a + b for a, b in zip(cut or [""] * len(lines), taken)]
            opening = lines[len(lines) - len(opening) :]
    return lines, cut


def leading_indent(lines: Sequence[str]) -> tuple[list[str], list[str]]:
    """IPython's leading-indent rule: where a cell's first non-blank line is indented, that
    indentation is cut from every line that starts with it. The lines, and what each lost."""
    first = next((line for line in lines if line.strip()), "")
    match = _LEADING_INDENT.match(first)
    if match is None:
        return list(lines), []
    prefix = match.group(0)
    cut = [prefix if line.startswith(prefix) else "" for line in lines]
    return [line[len(taken) :] for line, taken in zip(lines, cut)], cut


def mask_ipython(lines: Sequence[str]) -> list[str]:
    """A cell's lines with IPython syntax replaced by ``pass`` (or blank for a hidden cell),
    each line kept in its place."""
    masked = list(lines)
    if masked and masked[0].lstrip().startswith("%%"):
        name = masked[0].lstrip()[2:].split(maxsplit=1)
        if not name or name[0] not in _PYTHON_CELL_MAGICS:
            return [_ending(line) for line in masked]  # %%bash, %%writefile ...: not Python
        masked[0] = _ending(masked[0])
    if not any(_is_ipython(line.rstrip("\r\n")) for line in masked):
        return masked  # most cells: no IPython syntax, and nothing to scan
    scanner = _Scanner()
    continued = False  # the line before was IPython ending in a backslash
    for index, line in enumerate(masked):
        body = line.rstrip("\r\n")
        if continued:
            masked[index] = _ending(line)
        elif scanner.at_statement_start() and _is_ipython(body):
            # At the top level a blank line (it does not end the file's opening imports); in
            # a block, `pass` keeps the block a block.
            indent = _INDENT.match(body)
            prefix = indent.group(0) if indent else ""
            masked[index] = (prefix + "pass" if prefix else "") + _ending(line)
        else:
            scanner.feed(body)
            continue
        continued = body.endswith("\\")
    return masked


class _Scanner:
    """Just enough of Python's tokenizer to tell whether a line starts a statement: not inside
    brackets, a string or a backslash continuation (``% n)`` continuing a formatted string is
    Python's modulo, not a magic)."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""  # the delimiter of a string still open at the end of a line
        self.continued = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and not self.quote and not self.continued

    def feed(self, line: str) -> None:
        index, size = 0, len(line)
        while index < size:
            char = line[index]
            if self.quote:
                if char == "\\":
                    index += 2
                elif line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = ""
                else:
                    index += 1
                continue
            if char == "#":
                break
            if char in "\"'":
                triple = line[index : index + 3]
                self.quote = triple if triple in ('"""', "'''") else char
                index += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            index += 1
        self.continued = not self.quote and line.endswith("\\")
        if self.quote in ("'", '"'):
            self.quote = ""  # a one-line string ends with its line (or is an error)


def syntax_errors(notebook: Notebook) -> dict[int, SyntaxError]:
    """The cells that are not Python on their own (IPython syntax masked), with CPython's error:
    one such cell must not hide the findings in the others."""
    errors: dict[int, SyntaxError] = {}
    for cell in notebook.cells:
        lines = strip_ipython_prefixes(source_lines(cell.source))[0]
        source = "".join(mask_ipython(lines))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(source, "<cell>", "exec", ast.PyCF_ONLY_AST | _TOP_LEVEL_AWAIT)
        except SyntaxError as error:
            errors[cell.number] = error
        except (ValueError, RecursionError, MemoryError):
            pass  # the program's own parse reports these
    return errors


def displayed_rows(program: Program, tree: ast.Module) -> frozenset[int]:
    """The rows of each cell's last statement where it is an expression: Jupyter shows its value
    (unless a ``;`` ends it), so that value is not thrown away."""
    last: dict[int, ast.stmt] = {}
    for statement in tree.body:
        span = program.span_of(statement.lineno)
        if span is not None:
            last[span.number] = statement
    lines: list[str] = []
    rows: set[int] = set()
    for statement in last.values():
        if not isinstance(statement, ast.Expr):
            continue
        end = statement.end_lineno or statement.lineno
        lines = lines or program.source.splitlines()
        after = lines[end - 1].encode("utf-8")[statement.end_col_offset or 0 :]
        if after.decode("utf-8", "replace").lstrip().startswith(";"):
            continue  # `x.cpu();` shows nothing
        rows.update(range(statement.lineno, end + 1))
    return frozenset(rows)


def _is_ipython(body: str) -> bool:
    stripped = body.lstrip()
    if not stripped or stripped.startswith("#"):
        return False
    return bool(
        _ESCAPE.match(body)
        or _SHELL_ASSIGNMENT.match(body)
        or _AUTOMAGIC.match(body)
        or (_AUTOMAGIC_BEFORE_OPERATOR.match(body) and _no_python(stripped))
        or (_HELP.search(body) and "#" not in body)
    )


def _no_python(line: str) -> bool:
    """Whether ``line`` is no Python even where a statement could go on after it: a syntax
    error that is not a bracket, a string or a backslash left open for the next line
    (`time -= (end` continues; `ls /content/checkpoints/` cannot)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (`SyntaxWarning`s of the line are not ours to show)
        try:
            compile(line, "<cell line>", "exec", dont_inherit=True)
        except SyntaxError as error:
            message = error.msg or ""
            return not any(open_end in message for open_end in _OPEN_ENDS)
        except ValueError:
            return False
    return False


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def parse_notebook(data: bytes) -> Notebook:
    """The notebook's code cells, or a NotebookError saying why it cannot be read."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        row = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise NotebookError(
            f"not valid UTF-8: byte 0x{data[error.start]:02x} cannot be decoded", row, column
        ) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(
            f"not a notebook: invalid JSON ({error.msg})", error.lineno, error.colno
        ) from None
    except RecursionError:
        raise NotebookError("not a notebook: JSON nested too deeply") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a notebook: no list of `cells` at the top level")
    # Only nbformat 4 keeps `cells` at the top level (3 nests them in worksheets); editors
    # write such files without a version key too, and Jupyter and VS Code open them.
    version = document.get("nbformat", 4)
    if version != 4:
        raise NotebookError(f"nbformat {version!r} is not supported (devlint reads nbformat 4)")
    if not _is_python(document.get("metadata")):
        return Notebook(text, ())  # an R or Julia notebook: no Python to lint
    cells: list[CodeCell] = []
    for number, cell in enumerate(document["cells"], start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {number} is not a JSON object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            joined = "".join(source)
        elif isinstance(source, str):
            joined = source
        else:
            raise NotebookError(f"cell {number}: `source` must be a string or a list of strings")
        cells.append(CodeCell(number, joined, isinstance(source, list)))
    return Notebook(text, tuple(cells))


def json_row(notebook: Notebook, cell_number: int, row: int) -> int:
    """The row of the notebook's JSON text that holds a cell's source line ``row`` (1-based): the
    line a reader of the raw file (a pull request's diff, a code-scanning alert) finds it on."""
    for cell in notebook.cells:
        if cell.number != cell_number:
            continue
        try:
            value_start, value_end = notebook.source_span(cell)
        except NotebookError:
            return 1
        value = notebook.text[value_start:value_end]
        items = _list_items(value) if cell.as_list else [value]
        index, offset = min(row, len(items)) - 1, 0
        for item in items[: max(index, 0)]:
            offset = value.index(item, offset) + len(item)
        start = value_start + (value.index(items[index], offset) if items else 0)
        return notebook.text.count("\n", 0, start) + 1
    return 1


def _is_python(metadata: Any) -> bool:
    """Whether the notebook's kernel runs Python (or says nothing of its language)."""
    if not isinstance(metadata, dict):
        return True
    for table, key in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(table)
        language = value.get(key) if isinstance(value, dict) else None
        if isinstance(language, str) and language.lower() not in ("python", "python3", ""):
            return False
    return True


def program_of(data: bytes) -> Optional[Program]:
    """The program of a readable notebook; None for one that cannot be read."""
    try:
        return parse_notebook(data).program()
    except NotebookError:
        return None


# ---------------------------------------------------------------------------------------------
# Where each cell's `source` value lies in the text: a walk over the top-level object and the
# `cells` array only; every other value is skipped by the json module's own (C) scanner.

_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _skip_space(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    return match.end() if match else index


def _members(text: str, index: int) -> Any:
    """(key, value start, value end) of each member of the object that opens at ``index``."""
    index = _skip_space(text, index + 1)
    if text.startswith("}", index):
        return
    while True:
        key, index = _SCAN(text, index)
        index = _skip_space(text, index)
        index = _skip_space(text, index + 1)  # the colon
        _, end = _SCAN(text, index)
        yield key, index, end
        index = _skip_space(text, end)
        if text.startswith("}", index):
            return
        index = _skip_space(text, index + 1)  # the comma


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Cell index (0-based) -> the offsets of its ``source`` value in ``text``."""
    spans: dict[int, tuple[int, int]] = {}
    start = _skip_space(text, 0)
    for key, value_start, _ in _members(text, start):
        if key != "cells":
            continue
        index = _skip_space(text, value_start + 1)
        cell = 0
        while not text.startswith("]", index):
            if text.startswith("{", index):
                for cell_key, source_start, source_end in _members(text, index):
                    if cell_key == "source":
                        spans[cell] = (source_start, source_end)
            _, index = _SCAN(text, index)
            index = _skip_space(text, index)
            if text.startswith(",", index):
                index = _skip_space(text, index + 1)
            cell += 1
    return spans


# ---------------------------------------------------------------------------------------------
# Writing back.


def with_sources(notebook: Notebook, sources: dict[int, str]) -> str:
    """The notebook's text with the sources of the cells numbered in ``sources`` replaced; every
    other byte is the original's. Raises NotebookError where the result would not read back as the
    same notebook with only those sources changed."""
    text = notebook.text
    ascii_only = text.isascii()
    pieces: list[str] = []
    position = 0
    for cell in notebook.cells:
        new = sources.get(cell.number)
        if new is None or new == cell.source:
            continue
        start, end = notebook.source_span(cell)
        original = text[start:end]
        pieces += [text[position:start], _source_json(original, new, cell, ascii_only)]
        position = end
    result = "".join(pieces) + text[position:]
    _check_round_trip(notebook, result, sources)
    return result


def _source_json(original: str, new: str, cell: CodeCell, ascii_only: bool) -> str:
    """The JSON of a new source, laid out as the original value and reusing its lines' JSON."""
    if not cell.as_list:
        return json.dumps(new, ensure_ascii=ascii_only)
    items = _list_items(original)
    raw_by_line: dict[str, str] = {}
    for raw in items:
        raw_by_line.setdefault(json.loads(raw), raw)
    lines = source_lines(new)
    rendered = [
        raw_by_line.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in lines
    ]
    if not rendered:
        return "[]"
    if items:
        opening = original[1 : original.index(items[0], 1)]
        last_end = original.rindex(items[-1]) + len(items[-1])
        closing = original[last_end:-1]
        if len(items) > 1:
            first_end = original.index(items[0], 1) + len(items[0])
            separator = original[first_end : original.index(items[1], first_end)]
        else:
            separator = "," + opening
    else:
        opening, closing, separator = "", "", ", "
    return "[" + opening + separator.join(rendered) + closing + "]"


def _list_items(value: str) -> list[str]:
    """The raw JSON text of each string in a JSON array of strings."""
    items: list[str] = []
    index = _skip_space(value, 1)
    while index < len(value) and not value.startswith("]", index):
        _, end = _SCAN(value, index)
        items.append(value[index:end])
        index = _skip_space(value, end)
        if value.startswith(",", index):
            index = _skip_space(value, index + 1)
    return items


def _check_round_trip(notebook: Notebook, result: str, sources: dict[int, str]) -> None:
    before = json.loads(notebook.text)
    after = json.loads(result)
    for number, source in sources.items():
        cell = before["cells"][number - 1]
        original = cell.get("source")
        cell["source"] = source_lines(source) if isinstance(original, list) else source
    if before != after:
        raise NotebookError("writing the fixed cells back would change more than their sources")
