"""`devlint server` settings (initializationOptions, didChangeConfiguration), the baseline, the
size limit, and failures inside devlint that must never take the server down."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the server extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from devlint.complexity import MAX_FILE_BYTES  # noqa: E402
from tests.helpers import run_cli  # noqa: E402
from tests.server_helpers import (  # noqa: E402
    SCRIPT,
    SERVER_COMMAND,
    apply_edits,
    codes,
    edits_of,
    initialize,
    make_project,
    open_document,
    wait_for,
)

pytestmark = pytest.mark.asyncio

UNSAFE_ONLY = 'import torch\nckpt = torch.load("a.pt")\n'


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


async def _fix_all(client: LanguageClient, uri: str) -> list[types.CodeAction]:
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0),
                              end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.devlint"]),
        )
    )  # fmt: skip
    return [a for a in actions or [] if isinstance(a, types.CodeAction)]


def _configure(client: LanguageClient, uri: str, settings: object) -> None:
    client.diagnostics.pop(uri, None)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def test_initialization_options_then_did_change_configuration(
    client: LanguageClient, project: Path
) -> None:
    await initialize(client, project, {"select": ["DEV00"], "ignore": "DEV001,DEV004"})
    path = project / "a.py"
    path.write_text(SCRIPT, encoding="utf-8")
    uri = open_document(client, path)
    assert codes(await wait_for(client, uri)) == ["DEV002", "DEV005", "DEV008"]
    # VS Code's shape, a section named after the server; the open files are linted again.
    _configure(client, uri, {"devlint": {"ignore": ["DEV002", "DEV001"]}})
    assert codes(await wait_for(client, uri)) == ["DEV004", "DEV005", "DEV008"]
    (project / "strict.toml").write_text('select = ["DEV008"]\n', encoding="utf-8")
    _configure(client, uri, {"config": "strict.toml"})
    assert codes(await wait_for(client, uri)) == ["DEV008"]
    (project / "strict.toml").write_text('select = ["NOPE1"]\n', encoding="utf-8")
    _configure(client, uri, {"configFile": "strict.toml"})
    (diagnostic,) = await wait_for(client, uri)
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert "unknown rule code or prefix 'NOPE1'" in diagnostic.message


async def test_unsafe_fixes_setting_and_a_client_without_resolve(
    client: LanguageClient, project: Path
) -> None:
    await initialize(client, project, {"unsafeFixes": True}, resolve_edits=False)
    path = project / "load.py"
    path.write_text(UNSAFE_ONLY, encoding="utf-8")
    uri = open_document(client, path)
    await wait_for(client, uri, lambda d: codes(d) == ["DEV008"])
    (action,) = await _fix_all(client, uri)
    # This client cannot resolve an action's edit later, so the edit comes with the action.
    assert apply_edits(UNSAFE_ONLY, edits_of(action.edit)) == (
        'import torch\nckpt = torch.load("a.pt", map_location="cpu")\n'
    )
    _configure(client, uri, {"unsafeFixes": False})
    await wait_for(client, uri)
    assert await _fix_all(client, uri) == []  # nothing safe to fix
    text = "import torch\ntorch.cuda.memory_cached()\n"
    safe = project / "safe.py"
    safe.write_text(text, encoding="utf-8")
    uri = open_document(client, safe)
    await wait_for(client, uri, lambda d: codes(d) == ["DEV002"])
    (action,) = await _fix_all(client, uri)
    assert (
        apply_edits(text, edits_of(action.edit)) == "import torch\ntorch.cuda.memory_reserved()\n"
    )


async def test_baseline_setting_and_the_size_limit(client: LanguageClient, project: Path) -> None:
    path = project / "legacy.py"
    path.write_text(SCRIPT, encoding="utf-8")
    written = run_cli("--write-baseline", "baseline.json", "legacy.py", cwd=project)
    assert written.returncode == 0, written.stderr
    await initialize(client, project, {"baseline": "baseline.json"})
    new_bug = SCRIPT + "torch.cuda.max_memory_cached()\n"
    diagnostics = await wait_for(client, open_document(client, path, new_bug))
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("DEV002", 11)]
    # A file over the size limit is skipped, and the log says why.
    line = "x = torch.zeros(2).cuda()\n"
    text = "import torch\n" + line * (MAX_FILE_BYTES // len(line) + 1)
    uri = open_document(client, project / "huge.py", text)
    assert await wait_for(client, uri) == []
    assert any("over devlint's size limit" in m.message for m in client.log_messages)
