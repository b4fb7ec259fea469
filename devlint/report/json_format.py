"""JSON in Ruff's schema, so tools that read ``ruff --output-format json`` read this too."""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

from devlint.diagnostics import Finding
from devlint.report import ReportOptions, RunSummary


def finding_to_json(finding: Finding) -> dict[str, Any]:
    return {
        "cell": None,
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "filename": finding.path if finding.path == "-" else os.path.abspath(finding.path),
        "location": {"row": finding.start.row, "column": finding.start.column},
        "end_location": {"row": finding.end.row, "column": finding.end.column},
        "fix": None,
        "url": None,  # no hosted docs yet: `devlint explain CODE` prints them
        "noqa_row": finding.noqa_row,
    }


def render(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    json.dump([finding_to_json(finding) for finding in run.findings], out, indent=2)
    out.write("\n")
