"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request."""

from __future__ import annotations

from typing import TextIO

from devlint.report import ReportOptions, RunSummary, display_path


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    for finding in run.findings:
        properties = ",".join(
            (
                f"file={_escape_property(display_path(finding.path))}",
                f"line={finding.start.row}",
                f"col={finding.start.column}",
                f"endLine={finding.end.row}",
                f"endColumn={finding.end.column}",
                f"title={_escape_property(finding.code)}",
            )
        )
        out.write(f"::error {properties}::{_escape_data(f'{finding.code} {finding.message}')}\n")
