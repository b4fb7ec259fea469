"""Findings as LSP diagnostics, and devlint's positions (1-based, in characters) as the
client's (0-based, in the position encoding it negotiated: UTF-16 by default)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from lsprotocol import types
from pygls.workspace import PositionCodec

from devlint.diagnostics import PARSE_ERROR_CODE, Edit, Finding, InternalError, Position
from devlint.report import rule_url

SOURCE = "devlint"
_DEPRECATED_CODES = frozenset({"DEV002"})


def rule_docs_url(code: str) -> str:
    """The documentation of rule ``code``: the same address as the JSON `url` and SARIF's
    `helpUri`."""
    return rule_url(code, "")


def to_client(position: Position, lines: Sequence[str], codec: PositionCodec) -> types.Position:
    """A devlint position (1-based row and column in characters) in the client's units."""
    line = max(position.row - 1, 0)
    if line >= len(lines):
        # Past the last line (an insertion at the end of a file with no final newline).
        return types.Position(line=len(lines), character=0)
    server = types.Position(line=line, character=max(position.column - 1, 0))
    return codec.position_to_client_units(lines, server)


def to_range(
    start: Position, end: Position, lines: Sequence[str], codec: PositionCodec
) -> types.Range:
    return types.Range(start=to_client(start, lines, codec), end=to_client(end, lines, codec))


def severity_of(code: str) -> types.DiagnosticSeverity:
    """A file devlint cannot parse is an error; a finding is a warning, as linters' are."""
    if code == PARSE_ERROR_CODE:
        return types.DiagnosticSeverity.Error
    return types.DiagnosticSeverity.Warning


def _related(
    finding: Finding, uri: str, lines: Sequence[str], codec: PositionCodec
) -> Optional[list[types.DiagnosticRelatedInformation]]:
    """The lines a device-flow message cites (where the tensor was made, where the model was
    moved), as places the editor can jump to."""
    if not finding.cited or finding.cell is not None:
        return None
    related = []
    for cited in finding.cited:
        text = lines[cited.row - 1].strip() if 0 < cited.row <= len(lines) else ""
        where = to_client(cited, lines, codec)
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=types.Range(start=where, end=where)),
                message=f"cited: line {cited.row}: {text}" if text else f"line {cited.row}",
            )
        )
    return related


def to_diagnostic(
    finding: Finding, uri: str, lines: Sequence[str], codec: PositionCodec, data: Any = None
) -> types.Diagnostic:
    return types.Diagnostic(
        range=to_range(finding.start, finding.end, lines, codec),
        message=finding.message,
        severity=severity_of(finding.code),
        code=finding.code,
        code_description=types.CodeDescription(href=rule_docs_url(finding.code)),
        source=SOURCE,
        tags=[types.DiagnosticTag.Deprecated] if finding.code in _DEPRECATED_CODES else None,
        related_information=_related(finding, uri, lines, codec),
        data=data,
    )


def problem_diagnostic(message: str) -> types.Diagnostic:
    """A problem with devlint itself or its configuration, shown on the first line."""
    start = types.Position(line=0, character=0)
    return types.Diagnostic(
        range=types.Range(start=start, end=start),
        message=message,
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
    )


def error_diagnostic(error: InternalError) -> types.Diagnostic:
    """A crash inside devlint while linting the file: shown, never a dead server."""
    return problem_diagnostic(f"devlint internal error: {error.detail}")


def text_edits(
    edits: Sequence[Edit], lines: Sequence[str], codec: PositionCodec
) -> list[types.TextEdit]:
    return [
        types.TextEdit(range=to_range(edit.start, edit.end, lines, codec), new_text=edit.content)
        for edit in edits
    ]
