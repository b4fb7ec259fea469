"""JSON in Ruff's schema, so tools that read ``ruff --output-format json`` read this too."""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

from devlint.diagnostics import Finding, Fix, Position
from devlint.report import ReportOptions, RunSummary


def _position(position: Position) -> dict[str, int]:
    return {"row": position.row, "column": position.column}


def fix_to_json(fix: Fix) -> dict[str, Any]:
    """Ruff's shape: applicability, message, and edits with 1-based locations."""
    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [
            {
                "content": edit.content,
                "location": _position(edit.start),
                "end_location": _position(edit.end),
            }
            for edit in fix.edits
        ],
    }


def finding_to_json(finding: Finding) -> dict[str, Any]:
    return {
        "cell": None,
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "filename": finding.path if finding.path == "-" else os.path.abspath(finding.path),
        "location": {"row": finding.start.row, "column": finding.start.column},
        "end_location": {"row": finding.end.row, "column": finding.end.column},
        "fix": None if finding.fix is None else fix_to_json(finding.fix),
        "url": None,  # no hosted docs yet: `devlint explain CODE` prints them
        "noqa_row": finding.noqa_row,
    }


def render(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    json.dump([finding_to_json(finding) for finding in run.findings], out, indent=2)
    out.write("\n")
