"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request."""

from __future__ import annotations

from typing import TextIO

from devlint.report import ReportOptions, RunSummary, display_path, file_row


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    for finding in run.findings:
        where: tuple[str, ...]
        if finding.cell is None:
            where = (
                f"line={finding.start.row}",
                f"col={finding.start.column}",
                f"endLine={finding.end.row}",
                f"endColumn={finding.end.column}",
                f"title={_escape_property(finding.code)}",
            )
            text = f"{finding.code} {finding.message}"
        else:  # a notebook: the line of its JSON that holds the cell's source line
            title = f"{finding.code} ({finding.where})"
            where = (f"line={file_row(finding)}", f"title={_escape_property(title)}")
            text = f"{finding.code} {finding.where}: {finding.message}"
        properties = ",".join((f"file={_escape_property(display_path(finding.path))}", *where))
        out.write(f"::error {properties}::{_escape_data(text)}\n")
