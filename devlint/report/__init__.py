"""Output formats: one module each, one ``render`` function with the same signature."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, TextIO

from devlint.diagnostics import Applicability, Finding, InternalError, Position
from devlint.notebook import Notebook, NotebookError, json_row, parse_notebook


@dataclass
class RunSummary:
    findings: list[Finding] = field(default_factory=list)
    errors: list[InternalError] = field(default_factory=list)
    files_checked: int = 0
    fixed: int = 0  # findings fixed by --fix
    baseline_hidden: int = 0  # findings a --baseline recorded, so not reported
    # --show-fixes: per file, per (code, name), how many findings --fix fixed.
    fixed_by_file: dict[str, dict[tuple[str, str], int]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportOptions:
    color: bool = False
    quiet: bool = False
    statistics: bool = False
    # None: unsafe fixes are neither applied nor refused, so the summary hints at them (Ruff's
    # "hint"); True: --unsafe-fixes; False: shown as fixable only when safe, no hint.
    unsafe_fixes: Optional[bool] = None
    show_fixes: bool = False


def applies(finding: Finding, unsafe_fixes: Optional[bool]) -> bool:
    """Whether ``--fix`` (with the unsafe-fix choice given) would apply the finding's fix."""
    if finding.fix is None or not finding.fix.edits:
        return False
    return bool(unsafe_fixes) or finding.fix.applicability is Applicability.SAFE


def hidden_unsafe(finding: Finding, unsafe_fixes: Optional[bool]) -> bool:
    """A fix that ``--unsafe-fixes`` would enable."""
    fix = finding.fix
    return (
        unsafe_fixes is None
        and fix is not None
        and bool(fix.edits)
        and fix.applicability is Applicability.UNSAFE
    )


# One place for the address of each rule's documentation (SARIF's helpUri, JSON's url): the
# anchor of the rule in the README's Rules section on GitHub (an `id` per rule above the table).
DOCS_URL = "https://github.com/devlint/devlint/blob/main/README.md"


def rule_url(code: str, name: str) -> str:
    return f"{DOCS_URL}#{code.lower()}"


def display_path(path: str) -> str:
    """Paths under the working folder are shown relative to it, as Ruff does."""
    if path == "-":
        return path
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative


Renderer = Callable[[RunSummary, TextIO, ReportOptions], None]


@functools.lru_cache(maxsize=64)
def _notebook(path: str) -> Optional[Notebook]:
    try:
        return parse_notebook(Path(path).read_bytes())
    except (OSError, NotebookError):
        return None


def edit_position(finding: Finding, position: Position) -> Position:
    """A fix's edit position as Ruff's JSON gives it: in a notebook, the row within the cell the
    edit falls in (which may not be the finding's: a definition added after the imports)."""
    if finding.cell is None:
        return position
    notebook = _notebook(finding.path)
    span = notebook.program().span_of(position.row) if notebook is not None else None
    if span is None:
        return finding.shown(position)
    return Position(position.row - span.first + 1, position.column)


def file_row(finding: Finding) -> int:
    """The row of the file that holds a finding's start: in a notebook, the row of the JSON text
    where its cell's source line is (formats that point into the raw file need it)."""
    if finding.cell is None:
        return finding.start.row
    notebook = _notebook(finding.path)
    if notebook is None:
        return 1
    return json_row(notebook, finding.cell, finding.shown(finding.start).row)


def renderer(format_name: str) -> Renderer:
    from devlint.report import github, json_format, sarif, text

    renderers: dict[str, Renderer] = {
        "text": text.render,
        "json": json_format.render,
        "github": github.render,
        "sarif": sarif.render,
    }
    return renderers[format_name]


FORMATS = ("text", "json", "github", "sarif")
