"""Notebooks in the editor (LSP 3.17 notebook sync): the open notebook's cells become the
`.ipynb` JSON the engine reads from disk, and its findings go back to the cells they are in."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Optional

from devlint.diagnostics import Edit, Finding, Fix, Position


@dataclass(frozen=True)
class Cell:
    uri: str
    kind: str  # "code" for a Python cell, else "markdown" (kept: it counts in cell numbers)
    source: str


def notebook_json(cells: Sequence[Cell]) -> str:
    """An nbformat 4 notebook of these cells, in order."""
    document = {
        "cells": [
            {"cell_type": cell.kind, "metadata": {}, "source": cell.source}
            | ({"execution_count": None, "outputs": []} if cell.kind == "code" else {})
            for cell in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document)


def _local(position: Position, first_row: int) -> Position:
    return Position(position.row - first_row + 1, position.column)


def _local_fix(fix: Optional[Fix], first_row: int, rows: int) -> Optional[Fix]:
    """The fix in the cell's own rows; None where an edit reaches outside the cell."""
    if fix is None:
        return None
    edits = []
    for edit in fix.edits:
        start, end = _local(edit.start, first_row), _local(edit.end, first_row)
        if start.row < 1 or end.row > rows + 1:
            return None
        edits.append(Edit(start, end, edit.content))
    return replace(fix, edits=tuple(edits))


def findings_by_cell(
    findings: Sequence[Finding], cells: Sequence[Cell]
) -> dict[str, list[Finding]]:
    """Each code cell's findings, with rows counted within the cell (as the editor shows it)."""
    by_cell: dict[str, list[Finding]] = {cell.uri: [] for cell in cells if cell.kind == "code"}
    for finding in findings:
        if finding.cell is None or not 0 < finding.cell <= len(cells):
            continue
        cell = cells[finding.cell - 1]
        if cell.uri not in by_cell:
            continue
        first = finding.cell_first_row
        rows = cell.source.count("\n") + 1
        by_cell[cell.uri].append(
            replace(
                finding,
                start=_local(finding.start, first),
                end=_local(finding.end, first),
                noqa_row=_local(Position(finding.noqa_row, 1), first).row,
                fix=_local_fix(finding.fix, first, rows),
                cell=None,
                cell_first_row=1,
                cited=(),
            )
        )
    return by_cell
