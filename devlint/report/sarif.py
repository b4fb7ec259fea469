"""SARIF 2.1.0, the format GitHub code scanning (and many editors and dashboards) reads.

One run, with every rule in ``tool.driver.rules`` (help from the rule's documentation, as
`devlint explain` prints it), one result per finding with a 1-based region, and the fix as
SARIF replacements where the finding has one. Internal errors become tool notifications, so a
viewer shows that the run was incomplete.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from devlint import __version__
from devlint.diagnostics import Finding, Fix, InternalError, Position
from devlint.report import ReportOptions, RunSummary, display_path, file_row, rule_url
from devlint.rule_info import first_paragraph
from devlint.rules import ALL_RULES, Rule

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_RULE_INDEX = {rule.code: index for index, rule in enumerate(ALL_RULES)}


# Relative URIs are relative to this base, which the log defines as the folder devlint ran in
# (``originalUriBaseIds``), so a reader elsewhere still finds the files.
SRCROOT = "%SRCROOT%"


def artifact_uri(path: str) -> str:
    """A relative URI for a file under the working folder (GitHub resolves it against the
    repository root), a ``file://`` URI otherwise."""
    shown = display_path(path)
    if os.path.isabs(shown):
        return Path(shown).as_uri()
    return quote(Path(shown).as_posix())


def artifact_location(path: str) -> dict[str, str]:
    """``uri``, with ``uriBaseId`` where the URI is relative to the working folder."""
    uri = artifact_uri(path)
    return {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": SRCROOT}


def _base_ids() -> dict[str, Any]:
    return {SRCROOT: {"uri": Path(os.getcwd()).as_uri() + "/"}}


def _region(start: Position, end: Position) -> dict[str, int]:
    # devlint's end is exclusive, as SARIF's endColumn is ("the character after the region").
    return {
        "startLine": start.row,
        "startColumn": start.column,
        "endLine": end.row,
        "endColumn": end.column,
    }


def _rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    documentation = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": first_paragraph(rule)},
        "help": {"text": documentation, "markdown": documentation},
        "helpUri": rule_url(rule.code, rule.name),
        "defaultConfiguration": {"level": "error", "enabled": rule.default_enabled},
        "properties": {"tags": ["pytorch", "device"], "precision": "high"},
    }


def _fix(fix: Fix, location: dict[str, str]) -> dict[str, Any]:
    return {
        "description": {"text": f"{fix.message} ({fix.applicability.value} fix)"},
        "artifactChanges": [
            {
                "artifactLocation": location,
                "replacements": [
                    {
                        "deletedRegion": _region(edit.start, edit.end),
                        "insertedContent": {"text": edit.content},
                    }
                    for edit in fix.edits
                ],
            }
        ],
    }


def _result(finding: Finding) -> dict[str, Any]:
    location = artifact_location(finding.path)
    region = _region(finding.start, finding.end)
    message = finding.message
    if finding.cell is not None:
        # A notebook: the line of its JSON that holds the cell's source line; the cell, row and
        # column a reader finds in Jupyter are in the message and the properties.
        region = {"startLine": file_row(finding)}
        message = f"{finding.where}: {message}"
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": "error",
        "message": {"text": message},
        "locations": [{"physicalLocation": {"artifactLocation": location, "region": region}}],
    }
    if finding.cell is not None:
        start = finding.shown(finding.start)
        result["properties"] = {"cell": finding.cell, "row": start.row, "column": start.column}
    elif finding.cited:
        # The evidence the message cites (where the tensor was made, where the model moved),
        # which code scanning shows beside the result.
        result["relatedLocations"] = [
            {
                "id": index,
                "physicalLocation": {
                    "artifactLocation": location,
                    "region": {"startLine": cited.row, "startColumn": cited.column},
                },
                "message": {"text": f"cited: line {cited.row}"},
            }
            for index, cited in enumerate(finding.cited)
        ]
    if finding.code in _RULE_INDEX:
        result["ruleIndex"] = _RULE_INDEX[finding.code]
    if finding.fix is not None and finding.fix.edits and finding.cell is None:
        result["fixes"] = [_fix(finding.fix, location)]
    return result


def _notification(error: InternalError) -> dict[str, Any]:
    return {
        "level": "error",
        "message": {"text": error.detail},
        "locations": [{"physicalLocation": {"artifactLocation": artifact_location(error.path)}}],
    }


def sarif_log(run: RunSummary) -> dict[str, Any]:
    invocation: dict[str, Any] = {"executionSuccessful": not run.errors}
    if run.errors:
        invocation["toolExecutionNotifications"] = [_notification(e) for e in run.errors]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "devlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule_descriptor(rule) for rule in ALL_RULES],
                    }
                },
                "invocations": [invocation],
                "originalUriBaseIds": _base_ids(),
                # Columns count characters, as devlint's do everywhere.
                "columnKind": "unicodeCodePoints",
                "results": [_result(finding) for finding in run.findings],
            }
        ],
    }


def render(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    json.dump(sarif_log(run), out, indent=2)
    out.write("\n")
