"""JSON in Ruff's schema, so tools that read ``ruff --output-format json`` read this too."""

from __future__ import annotations

import json
import os
from typing import Any, Optional, TextIO

from devlint.diagnostics import Finding, Fix, Position
from devlint.report import ReportOptions, RunSummary, edit_position, rule_url


def _position(position: Position) -> dict[str, int]:
    return {"row": position.row, "column": position.column}


def fix_to_json(fix: Fix, finding: Optional[Finding] = None) -> dict[str, Any]:
    """Ruff's shape: applicability, message, and edits with 1-based locations (in a notebook,
    as Ruff gives them: rows within the cell each edit falls in)."""

    def shown(position: Position) -> Position:
        return edit_position(finding, position) if finding is not None else position

    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [
            {
                "content": edit.content,
                "location": _position(shown(edit.start)),
                "end_location": _position(shown(edit.end)),
            }
            for edit in fix.edits
        ],
    }


def finding_to_json(finding: Finding) -> dict[str, Any]:
    return {
        "cell": finding.cell,
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "filename": finding.path if finding.path == "-" else os.path.abspath(finding.path),
        "location": _position(finding.shown(finding.start)),
        "end_location": _position(finding.shown(finding.end)),
        "fix": None if finding.fix is None else fix_to_json(finding.fix, finding),
        "url": rule_url(finding.code, finding.name),
        "noqa_row": finding.shown(Position(finding.noqa_row, 1)).row,
    }


def render(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    json.dump([finding_to_json(finding) for finding in run.findings], out, indent=2)
    out.write("\n")
