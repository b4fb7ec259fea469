"""Applying fixes: edits spliced into the text, re-linted until stable, written atomically.

Every byte outside the edits is kept: the file is decoded with its own encoding
(coding cookie or BOM), edited as text, and encoded back the same way; the
edits themselves use the file's own line ending. A result that does not parse
is never written, and neither is a file that changed on disk while it was
being fixed.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import stat
import tempfile
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

import libcst as cst

from devlint.api import Linter
from devlint.config import ConfigResolver
from devlint.diagnostics import (
    Applicability,
    Edit,
    FileResult,
    Finding,
    Fix,
    InternalError,
    Position,
)
from devlint.discovery import iter_python_files
from devlint.documents import extract, is_document
from devlint.engine import RuleSet, lint_notebook, lint_source
from devlint.notebook import (
    NOTEBOOK_SUFFIX,
    Notebook,
    NotebookError,
    Program,
    parse_notebook,
    syntax_errors,
    with_sources,
)
from devlint.report import RunSummary

MAX_ITERATIONS = 10
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class FixOutcome:
    """What fixing one file did."""

    path: str
    original: str = ""
    fixed: str = ""
    applied: int = 0  # fixes applied, over all iterations
    result: FileResult = field(default_factory=lambda: FileResult(""))  # findings that remain
    error: Optional[str] = None  # why nothing was written
    # In a notebook, each changed cell: its number, its source before and after.
    cells: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.error is None and self.fixed != self.original


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(match.end() for match in _LINE_BREAK.finditer(text))
    return starts


def _offset(starts: Sequence[int], text: str, position: Position) -> int:
    if position.row > len(starts):
        return len(text)
    return min(starts[position.row - 1] + position.column - 1, len(text))


def applicable_fixes(findings: Iterable[Finding], unsafe: bool) -> list[Fix]:
    return [
        finding.fix
        for finding in findings
        if finding.fix is not None and (unsafe or finding.fix.applicability is Applicability.SAFE)
    ]


def apply_fixes(text: str, fixes: Sequence[Fix]) -> tuple[str, int]:
    """Apply every fix that does not overlap one applied before it; the rest wait for the next pass.

    An edit identical to one already applied (two findings inserting the same
    `device` definition) is applied once.
    """
    starts = _line_starts(text)
    taken: list[tuple[int, int, str]] = []
    applied = 0
    for fix in sorted(fixes, key=lambda f: min((e.start for e in f.edits), default=Position(0, 0))):
        spans = [
            (_offset(starts, text, e.start), _offset(starts, text, e.end), e.content)
            for e in fix.edits
        ]
        new = [span for span in spans if span not in taken]
        if any(_overlaps(span, other) for span in new for other in taken):
            continue
        taken.extend(new)
        applied += 1
    result = text
    for start, end, content in sorted(taken, key=lambda span: (span[0], span[1]), reverse=True):
        if start == len(result) and content and result and result[-1] not in "\r\n":
            content = _newline_of(result) + content  # inserting on a last line with no newline
        result = result[:start] + content + result[end:]
    return result, applied


def _overlaps(first: tuple[int, int, str], second: tuple[int, int, str]) -> bool:
    """Spans that share text; an insertion conflicts only with a span strictly around it."""
    (a_start, a_end, _), (b_start, b_end, _) = first, second
    return a_start < b_end and b_start < a_end


def _newline_of(text: str) -> str:
    match = _LINE_BREAK.search(text)
    return match.group(0) if match else "\n"


def _encoding(data: bytes) -> str:
    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return "utf-8"


def fix_source(path: str, data: bytes, rules: RuleSet, unsafe: bool) -> FixOutcome:
    """Fix one file's bytes in memory, re-linting until nothing applies (at most MAX_ITERATIONS)."""
    if path.endswith(NOTEBOOK_SUFFIX):
        return fix_notebook(path, data, rules, unsafe)
    outcome = FixOutcome(path)
    result = lint_source(path, data, rules)
    encoding = _encoding(data)
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        outcome.result = result
        return outcome  # DEV000 already says why
    outcome.original = outcome.fixed = text
    for _ in range(MAX_ITERATIONS):
        fixes = applicable_fixes(result.findings, unsafe)
        if not fixes:
            break
        text, applied = apply_fixes(text, fixes)
        if not applied:
            break
        outcome.applied += applied
        result = lint_source(path, text.encode(encoding), rules)
    else:
        if applicable_fixes(result.findings, unsafe):
            outcome.error = (
                f"fixes did not converge after {MAX_ITERATIONS} passes; file left as it was"
            )
            outcome.result = lint_source(path, data, rules)
            return outcome
    try:
        if text != outcome.original:
            # A page's blocks must still be Python; the rest of a page is not.
            cst.parse_module(extract(text, path).source if is_document(path) else text)
    except Exception as error:
        outcome.error = (
            f"a fix produced code that does not parse ({type(error).__name__}); file left as it was"
        )
        outcome.result = lint_source(path, data, rules)
        return outcome
    outcome.fixed, outcome.result = text, result
    return outcome


def fix_notebook(path: str, data: bytes, rules: RuleSet, unsafe: bool) -> FixOutcome:
    """Fix a notebook's code cells; the notebook's text changes only inside the changed cells'
    ``source`` values."""
    outcome = FixOutcome(path)
    result = lint_source(path, data, rules)
    try:
        notebook = parse_notebook(data)
    except NotebookError:
        outcome.result = result
        return outcome  # DEV000 already says why
    outcome.original = outcome.fixed = notebook.text
    current = notebook
    for _ in range(MAX_ITERATIONS):
        fixes = applicable_fixes(result.findings, unsafe)
        if not fixes:
            break
        sources, applied = apply_cell_fixes(current, fixes)
        if not applied:
            break
        outcome.applied += applied
        current = replace(
            current,
            cells=tuple(replace(c, source=sources.get(c.number, c.source)) for c in current.cells),
        )
        result = lint_notebook(path, current, rules)
    else:
        if applicable_fixes(result.findings, unsafe):
            outcome.error = (
                f"fixes did not converge after {MAX_ITERATIONS} passes; file left as it was"
            )
            outcome.result = lint_source(path, data, rules)
            return outcome
    before = {cell.number: cell.source for cell in notebook.cells}
    changed = {c.number: c.source for c in current.cells if c.source != before[c.number]}
    try:
        if changed:
            # The cells that were not Python before the fixes stay out of the check.
            cst.parse_module(current.program(frozenset(syntax_errors(notebook))).source)
            outcome.fixed = with_sources(notebook, changed)
    except NotebookError as error:
        outcome.error = f"{error.message}; file left as it was"
    except Exception as error:
        outcome.error = (
            f"a fix produced code that does not parse ({type(error).__name__}); file left as it was"
        )
    if outcome.error is not None:
        outcome.fixed = outcome.original
        outcome.result = lint_source(path, data, rules)
        return outcome
    outcome.cells = [(number, before[number], source) for number, source in changed.items()]
    outcome.result = result
    return outcome


def apply_cell_fixes(notebook: Notebook, fixes: Sequence[Fix]) -> tuple[dict[int, str], int]:
    """The new sources of the cells the fixes edit, and how many fixes were applied. Edits are in
    the program's rows; a fix whose edit crosses from one cell into another is left out (as
    Ruff leaves it), and so is one that overlaps a fix applied before it."""
    program = notebook.program()
    texts = {cell.number: cell.source for cell in notebook.cells}
    chosen: dict[int, list[Fix]] = {}
    taken: dict[int, list[tuple[int, int, str]]] = {}
    applied = 0
    for fix in sorted(fixes, key=lambda f: min((e.start for e in f.edits), default=Position(0, 0))):
        placed = [_in_cell(program, edit) for edit in fix.edits]
        if any(place is None for place in placed):
            continue
        spans = []
        for place in placed:
            assert place is not None
            number, edit = place
            text = _with_newline(texts[number])
            starts = _line_starts(text)
            start, end = _offset(starts, text, edit.start), _offset(starts, text, edit.end)
            span = (start, end, edit.content)
            spans.append((number, span, edit))
        new = [item for item in spans if item[1] not in taken.get(item[0], [])]
        if any(
            _overlaps(span, other) for number, span, _ in new for other in taken.get(number, [])
        ):
            continue
        for number, span, edit in new:
            taken.setdefault(number, []).append(span)
            chosen.setdefault(number, []).append(Fix(fix.applicability, fix.message, (edit,)))
        applied += 1
    sources: dict[int, str] = {}
    for number, cell_fixes in chosen.items():
        original = texts[number]
        fixed, _ = apply_fixes(_with_newline(original), cell_fixes)
        if not original.endswith(("\n", "\r")) and fixed.endswith("\n"):
            fixed = fixed[:-1]  # the newline the program added to the cell's last line
        sources[number] = fixed
    return sources, applied


def _with_newline(source: str) -> str:
    return source if not source or source.endswith(("\n", "\r")) else source + "\n"


def _in_cell(program: Program, edit: Edit) -> Optional[tuple[int, Edit]]:
    """The cell an edit falls in and the edit in that cell's rows; None when it crosses cells.
    An edit that ends at the very start of the next cell ends at the end of its own."""
    span = program.span_of(edit.start.row)
    if span is not None and edit.start == edit.end == Position(span.first, 1):
        index = program.spans.index(span)
        if index > 0:  # a line inserted between two cells ends the first ("after the imports")
            span = program.spans[index - 1]
            row = span.first + span.rows
            edit = Edit(Position(row, 1), Position(row, 1), edit.content)
    if span is None:
        if not program.spans or edit.start.row != program.spans[-1].first + program.spans[-1].rows:
            return None
        span = program.spans[-1]  # an insertion after the program's last line
    end_row = edit.end.row
    ends_at_its_end = end_row == span.first + span.rows and edit.end.column == 1
    if program.span_of(end_row) is not span and not ends_at_its_end:
        return None
    shift = span.first - 1
    moved = Edit(
        Position(edit.start.row - shift, edit.start.column),
        Position(end_row - shift, edit.end.column),
        edit.content,
    )
    return span.number, moved


def encode_like(text: str, original: bytes, path: str = "") -> bytes:
    """The text in the original's encoding (a notebook is UTF-8 JSON, whatever its cells say)."""
    if path.endswith(NOTEBOOK_SUFFIX):
        return text.encode("utf-8")
    return text.encode(_encoding(original))


def write_atomically(path: Path, original: bytes, data: bytes) -> Optional[str]:
    """Replace ``path`` with ``data`` unless it changed since ``original`` was read; keep mode."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".devlint", dir=path.parent
        )
    except OSError as error:
        return f"cannot write: {error.strerror or error}"
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        if path.read_bytes() != original:
            os.unlink(temporary)
            return "changed on disk while it was being fixed; not written"
        os.replace(temporary, path)
    except OSError as error:
        if os.path.exists(temporary):
            os.unlink(temporary)
        return f"cannot write: {error.strerror or error}"
    return None


def unified_diff(outcome: FixOutcome) -> str:
    shown = outcome.path
    if outcome.cells:  # a notebook: one diff per changed cell, as Ruff shows them
        return "".join(
            line
            for number, before, after in outcome.cells
            for line in difflib.unified_diff(
                _with_newline(before).splitlines(keepends=True),
                _with_newline(after).splitlines(keepends=True),
                fromfile=f"a/{shown}:cell {number}",
                tofile=f"b/{shown}:cell {number}",
            )
        )
    return "".join(
        difflib.unified_diff(
            outcome.original.splitlines(keepends=True),
            outcome.fixed.splitlines(keepends=True),
            fromfile=f"a/{shown}",
            tofile=f"b/{shown}",
        )
    )


@dataclass
class FixRun:
    """The outcome of `--fix` or `--diff` over many files."""

    summary: RunSummary = field(default_factory=RunSummary)
    fixed: int = 0  # findings fixed
    changed_files: list[FixOutcome] = field(default_factory=list)


def fix_paths(
    paths: Sequence[Path], resolver: ConfigResolver, force_exclude: bool, unsafe: bool, write: bool
) -> FixRun:
    """Fix every file under ``paths``; with ``write`` False, compute what would change only."""
    linter = Linter(resolver)
    run = FixRun()
    for path in iter_python_files(paths, resolver, force_exclude):
        run.summary.files_checked += 1
        try:
            data = path.read_bytes()
        except OSError:
            result = linter.lint_file(path)  # reports the unreadable file as DEV000
            run.summary.findings.extend(result.findings)
            continue
        outcome = fix_source(str(path), data, linter.rules_for(path), unsafe)
        if outcome.error is None and outcome.changed and write:
            encoded = encode_like(outcome.fixed, data, str(path))
            outcome.error = write_atomically(path, data, encoded)
            if outcome.error is not None:
                outcome.result = linter.lint_file(path)
        if outcome.error is not None:
            run.summary.errors.append(InternalError(str(path), outcome.error))
        elif outcome.changed:
            run.fixed += outcome.applied
            run.changed_files.append(outcome)
        run.summary.findings.extend(outcome.result.findings)
        run.summary.errors.extend(outcome.result.errors)
    run.summary.findings.sort(key=Finding.sort_key)
    return run
