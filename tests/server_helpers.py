"""What the language server tests share: the server command, a project folder, waiting."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

SERVER_COMMAND = [sys.executable, "-m", "devlint.cli", "server"]

SCRIPT = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
model.to("cuda")
x = torch.randn(3, 4)
y = model(x)
torch.cuda.memory_cached()
t = torch.zeros(2)
t.cuda()
ckpt = torch.load("a.pt")
"""


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


def make_project(folder: Path, table: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(f"[tool.devlint]\n{table}", encoding="utf-8")
    return folder


def capabilities(resolve_edits: bool = True) -> types.ClientCapabilities:
    resolve = types.ClientCodeActionResolveOptions(properties=["edit"]) if resolve_edits else None
    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(resolve_support=resolve),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        ),
        workspace=types.WorkspaceClientCapabilities(configuration=False),
    )


async def initialize(
    client: LanguageClient, root: Path, options: Any = None, resolve_edits: bool = True
) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(resolve_edits),
            root_uri=uri_of(root),
            workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name="project")],
            initialization_options=options,
        )
    )


async def wait_for(
    client: LanguageClient,
    uri: str,
    check: Callable[[list[types.Diagnostic]], bool] = lambda _: True,
    timeout: float = 15.0,
) -> list[types.Diagnostic]:
    """The document's diagnostics once ``check`` holds for them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        published = client.diagnostics.get(uri)
        diagnostics = list(published) if published is not None else None
        if diagnostics is not None and check(diagnostics):
            return diagnostics
        await asyncio.sleep(0.02)
    raise AssertionError(f"no matching diagnostics for {uri}: {client.diagnostics.get(uri)}")


def open_document(client: LanguageClient, path: Path, text: Optional[str] = None) -> str:
    uri = uri_of(path)
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id="python",
                version=1,
                text=path.read_text(encoding="utf-8") if text is None else text,
            )
        )
    )
    return uri


def replace_text(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def codes(diagnostics: Sequence[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


def apply_edits(text: str, edits: Sequence[Any]) -> str:
    """Apply LSP text edits (ranges in the original text; UTF-16 equals characters here)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return starts[position.line] + position.character

    result = text
    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        result = (
            result[: offset(edit.range.start)] + edit.new_text + result[offset(edit.range.end) :]
        )
    return result


def edits_of(edit: Optional[types.WorkspaceEdit]) -> list[Any]:
    assert edit is not None and edit.document_changes is not None
    changes = [c for c in edit.document_changes if isinstance(c, types.TextDocumentEdit)]
    return [e for change in changes for e in change.edits]
