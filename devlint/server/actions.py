"""Code actions: a quick fix per fixable finding, "Disable DEVxxx for this line", and
`source.fixAll.devlint`. The server only proposes workspace edits; the client applies them."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Optional

from lsprotocol import types
from pygls.workspace import PositionCodec

from devlint.diagnostics import Applicability, Edit, Finding, Position
from devlint.notebook import source_lines
from devlint.server.convert import text_edits, to_client, to_diagnostic

FIX_ALL_KIND = "source.fixAll.devlint"
# A noqa comment with codes (which can be extended) or without (which silences everything).
_CODE_LIST = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
_NOQA = re.compile(rf"#\s*noqa(?:\s*:\s*(?P<codes>{_CODE_LIST}))?", re.IGNORECASE)


def _edit(uri: str, edits: list[types.TextEdit], version: Optional[int]) -> types.WorkspaceEdit:
    document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return types.WorkspaceEdit(
        document_changes=[types.TextDocumentEdit(text_document=document, edits=list(edits))]
    )


def quick_fix(
    finding: Finding, uri: str, version: Optional[int], lines: Sequence[str], codec: PositionCodec
) -> Optional[types.CodeAction]:
    """The finding's own fix; an unsafe one is offered too, and says so."""
    if finding.fix is None:
        return None
    unsafe = finding.fix.applicability is Applicability.UNSAFE
    title = f"{finding.fix.message} ({finding.code}{', unsafe' if unsafe else ''})"
    return types.CodeAction(
        title=f"Unsafe fix: {title}" if unsafe else f"Fix: {title}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[to_diagnostic(finding, uri, lines, codec)],
        is_preferred=not unsafe,
        edit=_edit(uri, text_edits(finding.fix.edits, lines, codec), version),
    )


def _comment_start(line: str) -> Optional[int]:
    """Where a line's comment starts, skipping `#` inside simple string literals."""
    quote: Optional[str] = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote is not None:
            if char == "\\":
                index += 1
            elif line.startswith(quote, index):
                index += len(quote) - 1
                quote = None
        elif char in "'\"":
            quote = line[index : index + 3] if line[index : index + 3] in ('"""', "'''") else char
            index += len(quote) - 1
        elif char == "#":
            return index
        index += 1
    return None


def noqa_edit(line: str, row: int, code: str) -> Optional[Edit]:
    """The edit that silences ``code`` on ``line`` (1-based ``row``): extend its `# noqa: ...`
    or append one; None where a bare `# noqa` already silences everything."""
    body = line.rstrip("\r\n")
    start = _comment_start(body)
    match = _NOQA.search(body, start) if start is not None else None
    if match is not None:
        if match.group("codes") is None:
            return None
        end = match.end("codes")
        return Edit(Position(row, end + 1), Position(row, end + 1), f", {code}")
    stripped = body.rstrip()
    end = len(stripped)
    return Edit(Position(row, end + 1), Position(row, len(body) + 1), f"  # noqa: {code}")


def disable_action(
    finding: Finding, uri: str, version: Optional[int], lines: Sequence[str], codec: PositionCodec
) -> Optional[types.CodeAction]:
    """The action "Disable DEVxxx for this line": a noqa comment that silences the finding."""
    row = finding.noqa_row
    if not 0 < row <= len(lines):
        return None
    edit = noqa_edit(lines[row - 1], row, finding.code)
    if edit is None:
        return None
    return types.CodeAction(
        title=f"Disable {finding.code} for this line",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[to_diagnostic(finding, uri, lines, codec)],
        edit=_edit(uri, text_edits([edit], lines, codec), version),
    )


def fix_all_action(uri: str, version: Optional[int]) -> types.CodeAction:
    """`source.fixAll.devlint`, its edit computed on `codeAction/resolve` (it lints the file
    until its fixes are stable, which the light bulb need not wait for)."""
    return types.CodeAction(
        title="devlint: fix all safe problems",
        kind=FIX_ALL_KIND,
        data={"uri": uri, "version": version, "action": "fixAll"},
    )


def diff_edits(old: str, new: str, codec: PositionCodec) -> list[types.TextEdit]:
    """The fewest line-level edits that turn ``old`` into ``new`` (a cursor on an untouched line
    stays where it was, as it would not with one whole-file replacement)."""
    old_lines, new_lines = source_lines(old), source_lines(new)
    edits = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, first, last, new_first, new_last in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = Position(first + 1, 1)
        end = Position(last + 1, 1)
        edits.append(
            types.TextEdit(
                range=types.Range(
                    start=to_client(start, old_lines, codec),
                    end=to_client(end, old_lines, codec),
                ),
                new_text="".join(new_lines[new_first:new_last]),
            )
        )
    return edits
