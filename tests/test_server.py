"""`devlint server` end to end through pytest-lsp's client: diagnostics, actions, hover."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the server extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed")

from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcMethodNotFound  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from devlint.server.notebooks import Cell, notebook_json  # noqa: E402
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
    replace_text,
    uri_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("server") / "project")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER_COMMAND))
async def client(lsp_client: LanguageClient, project: Path):  # type: ignore[no-untyped-def]
    await initialize(lsp_client, project)
    yield
    await lsp_client.shutdown_session()
    # shutdown then exit: the server leaves cleanly, with status 0.
    assert lsp_client._server is not None and lsp_client._server.returncode == 0


def _range(line: int, character: int, end_line: int, end_character: int) -> types.Range:
    return types.Range(
        start=types.Position(line=line, character=character),
        end=types.Position(line=end_line, character=end_character),
    )


def _write(project: Path, name: str, text: str) -> Path:
    path = project / name
    path.write_text(text, encoding="utf-8")
    return path


async def test_saved_file_diagnostics_equal_the_cli_json(
    client: LanguageClient, project: Path
) -> None:
    path = _write(project, "train.py", SCRIPT)
    uri = open_document(client, path)
    diagnostics = await wait_for(client, uri)
    result = run_cli("--format", "json", "--no-cache", str(path), cwd=project)
    expected = [
        (f["code"], f["message"], f["location"]["row"] - 1, f["location"]["column"] - 1,
         f["end_location"]["row"] - 1, f["end_location"]["column"] - 1)
        for f in json.loads(result.stdout)
    ]  # fmt: skip
    got = [
        (d.code, d.message, d.range.start.line, d.range.start.character,
         d.range.end.line, d.range.end.character)
        for d in diagnostics
    ]  # fmt: skip
    assert got == expected
    assert len(got) == 6
    for diagnostic in diagnostics:
        assert diagnostic.source == "devlint"
        assert diagnostic.severity == types.DiagnosticSeverity.Warning
        assert diagnostic.code_description is not None
        assert diagnostic.code_description.href.endswith(f"README.md#{diagnostic.code.lower()}")
    by_code = {str(d.code): d for d in diagnostics}
    assert list(by_code["DEV002"].tags or ()) == [types.DiagnosticTag.Deprecated]
    assert by_code["DEV001"].tags is None
    # The device-flow finding points at the lines its message cites: made at 6, moved at 5.
    related = by_code["DEV005"].related_information
    assert related is not None
    assert [(r.location.uri, r.location.range.start.line) for r in related] == [
        (uri, 5),
        (uri, 4),
    ]
    assert related[0].message == "cited: line 6: x = torch.randn(3, 4)"


async def test_half_typed_line_gives_dev000_and_the_server_stays_up(
    client: LanguageClient, project: Path
) -> None:
    path = _write(project, "half_typed.py", "import torch\nx = torch.zeros(2)\n")
    uri = open_document(client, path)
    assert await wait_for(client, uri) == []
    replace_text(client, uri, 2, "import torch\nx = torch.zeros(2)\ny = x.cuda(\n")
    diagnostics = await wait_for(client, uri, lambda d: bool(d))
    assert codes(diagnostics) == ["DEV000"]
    assert diagnostics[0].severity == types.DiagnosticSeverity.Error
    assert diagnostics[0].range.start.line == 2
    replace_text(client, uri, 3, "import torch\nx = torch.zeros(2)\ny = x.cuda()\n")
    diagnostics = await wait_for(client, uri, lambda d: codes(d) == ["DEV001"])
    assert diagnostics[0].range.start == types.Position(line=2, character=4)


async def test_rapid_changes_publish_only_the_latest(client: LanguageClient, project: Path) -> None:
    path = _write(project, "rapid.py", "import torch\n")
    uri = open_document(client, path)
    await wait_for(client, uri)
    for version in range(2, 30):
        text = "import torch\n" + "torch.zeros(2).cuda()\n" * (version % 3)
        replace_text(client, uri, version, text)
    final = "import torch\nstate = torch.load('a.pt')\n"
    replace_text(client, uri, 30, final)
    diagnostics = await wait_for(client, uri, lambda d: codes(d) == ["DEV008"])
    assert diagnostics[0].range.start.line == 1


async def test_quick_fixes_and_disable_for_this_line(client: LanguageClient, project: Path) -> None:
    path = _write(project, "actions.py", SCRIPT)
    uri = open_document(client, path)
    await wait_for(client, uri)
    whole = _range(7, 0, 7, 5)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=whole,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions is not None
    titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
    assert titles == [
        "Fix: Rename to `memory_reserved` (DEV002)",
        "Disable DEV002 for this line",
        "devlint: fix all safe problems",
    ]
    fix, disable = actions[0], actions[1]
    assert isinstance(fix, types.CodeAction) and isinstance(disable, types.CodeAction)
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    fixed = apply_edits(SCRIPT, edits_of(fix.edit))
    assert fixed.splitlines()[7] == "torch.cuda.memory_reserved()"
    silenced = apply_edits(SCRIPT, edits_of(disable.edit))
    assert silenced.splitlines()[7] == "torch.cuda.memory_cached()  # noqa: DEV002"
    # An unsafe fix is offered too, and says so.
    line_10 = _range(10, 8, 10, 8)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=line_10,
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.QuickFix]),
        )
    )
    assert actions is not None
    first = actions[0]
    assert isinstance(first, types.CodeAction)
    assert (
        first.title
        == 'Unsafe fix: Add `map_location="cpu"`: tensors then load on the CPU (DEV008, unsafe)'
    )
    assert not first.is_preferred
    assert [a.title for a in actions if isinstance(a, types.CodeAction)][1:] == [
        "Disable DEV008 for this line"
    ]


async def test_disable_extends_an_existing_noqa(client: LanguageClient, project: Path) -> None:
    text = "import torch\nx = torch.zeros(2).cuda()  # noqa: DEV004\n"
    path = _write(project, "noqa.py", text)
    uri = open_document(client, path)
    await wait_for(client, uri, lambda d: codes(d) == ["DEV001"])
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=_range(1, 4, 1, 4),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions is not None
    disable = next(a for a in actions if a.title == "Disable DEV001 for this line")
    assert isinstance(disable, types.CodeAction)
    assert apply_edits(text, edits_of(disable.edit)).splitlines()[1] == (
        "x = torch.zeros(2).cuda()  # noqa: DEV004, DEV001"
    )


async def test_fix_all_is_resolved_lazily_and_applies_the_safe_fixes(
    client: LanguageClient, project: Path
) -> None:
    text = "import torch\ntorch.cuda.memory_cached()\nx = 1\ntorch.cuda.max_memory_cached()\n"
    path = _write(project, "fixall.py", text)
    uri = open_document(client, path)
    await wait_for(client, uri, lambda d: len(d) == 2)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=_range(0, 0, 0, 0),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"]),
        )
    )
    assert actions is not None and len(actions) == 1
    action = actions[0]
    assert isinstance(action, types.CodeAction)
    assert action.kind == "source.fixAll.devlint" and action.edit is None
    resolved = await client.code_action_resolve_async(action)
    fixed = apply_edits(text, edits_of(resolved.edit))
    assert fixed == (
        "import torch\ntorch.cuda.memory_reserved()\nx = 1\ntorch.cuda.max_memory_reserved()\n"
    )
    assert path.read_text(encoding="utf-8") == text  # the server never writes a file itself


async def test_hover_shows_the_rules_explanation(client: LanguageClient, project: Path) -> None:
    path = _write(project, "hover.py", SCRIPT)
    uri = open_document(client, path)
    await wait_for(client, uri)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=10, character=10),
        )
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value.startswith('**DEV008**: `torch.load("a.pt")` has no')
    assert "# DEV008 (load-without-map-location)" in hover.contents.value
    assert "## Why is this bad?" in hover.contents.value
    nothing = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=2),
        )
    )
    assert nothing is None


async def test_unknown_request_is_method_not_found(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcMethodNotFound):
        await client.protocol.send_request_async("devlint/unknownRequest", {})


async def test_config_file_edits_apply_without_a_restart(
    client: LanguageClient, project: Path
) -> None:
    path = _write(project, "configured.py", SCRIPT)
    uri = open_document(client, path)
    await wait_for(client, uri, lambda d: "DEV008" in codes(d))
    (project / "pyproject.toml").write_text(
        '[tool.devlint]\nignore = ["DEV008"]\n', encoding="utf-8"
    )
    try:
        client.diagnostics.pop(uri, None)
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        diagnostics = await wait_for(client, uri)
        assert "DEV008" not in codes(diagnostics) and "DEV002" in codes(diagnostics)
    finally:
        (project / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")


async def test_editing_a_module_relints_the_open_files_that_import_it(
    client: LanguageClient, project: Path
) -> None:
    package = project / "pkg"
    package.mkdir()
    model = _write(package, "model.py", "import torch\n")
    user = _write(project, "user.py", "from pkg.model import Net\nimport torch\n")
    other = _write(project, "other.py", "import torch\n")
    model_uri, user_uri, other_uri = (open_document(client, p) for p in (model, user, other))
    for uri in (model_uri, user_uri, other_uri):
        await wait_for(client, uri)
    client.diagnostics.pop(user_uri, None)
    client.diagnostics.pop(other_uri, None)
    replace_text(client, model_uri, 2, "import torch\nclass Net: pass\n")
    await wait_for(client, model_uri)
    assert await wait_for(client, user_uri) == []  # published again
    assert other_uri not in client.diagnostics  # does not import it: left alone


async def test_a_closed_document_has_its_diagnostics_cleared(
    client: LanguageClient, project: Path
) -> None:
    path = _write(project, "closed.py", SCRIPT)
    uri = open_document(client, path)
    await wait_for(client, uri, lambda d: bool(d))
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert await wait_for(client, uri, lambda d: d == []) == []


async def test_a_notebooks_findings_land_on_their_cells(
    client: LanguageClient, project: Path
) -> None:
    cells = [
        ("markdown", "# Training\nMove the model to the GPU."),
        ("code", "import torch\nimport torch.nn as nn"),
        ("code", "model = nn.Linear(2, 2)\nmodel.to('cuda')\ntorch.cuda.memory_cached()"),
    ]
    path = project / "train.ipynb"
    notebook_uri = uri_of(path)
    cell_uris = [f"vscode-notebook-cell:{path}#C{n}" for n in range(len(cells))]
    path.write_text(
        notebook_json([Cell(u, kind, text) for u, (kind, text) in zip(cell_uris, cells)]), "utf-8"
    )
    language = {"markdown": "markdown", "code": "python"}
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[
                    types.NotebookCell(
                        kind=types.NotebookCellKind.Code
                        if kind == "code"
                        else types.NotebookCellKind.Markup,
                        document=cell_uri,
                    )
                    for cell_uri, (kind, _) in zip(cell_uris, cells)
                ],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=u, language_id=language[kind], version=1, text=text)
                for u, (kind, text) in zip(cell_uris, cells)
            ],
        )
    )
    diagnostics = await wait_for(client, cell_uris[2], lambda d: len(d) == 2)
    assert await wait_for(client, cell_uris[1]) == []
    assert cell_uris[0] not in client.diagnostics  # a markdown cell is never linted
    result = run_cli("--format", "json", "--no-cache", str(path), cwd=project)
    assert result.returncode == 1, result.stderr
    expected = [
        (f["cell"], f["code"], f["location"]["row"] - 1, f["location"]["column"] - 1)
        for f in json.loads(result.stdout)
    ]
    got = [(3, d.code, d.range.start.line, d.range.start.character) for d in diagnostics]
    assert got == expected == [(3, "DEV001", 1, 0), (3, "DEV002", 2, 0)]
    # The quick fix edits the cell, in the cell's own rows.
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cell_uris[2]),
            range=_range(2, 0, 2, 0),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions is not None
    titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
    assert titles == ["Fix: Rename to `memory_reserved` (DEV002)", "Disable DEV002 for this line"]
    fix = actions[0]
    assert isinstance(fix, types.CodeAction)
    assert apply_edits(cells[2][1], edits_of(fix.edit)).splitlines()[2] == (
        "torch.cuda.memory_reserved()"
    )
    # Editing a cell re-lints the notebook.
    client.diagnostics.pop(cell_uris[2], None)
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(
                uri=notebook_uri, version=2
            ),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(
                                uri=cell_uris[2], version=2
                            ),
                            changes=[
                                types.TextDocumentContentChangeWholeDocument(
                                    text="model = nn.Linear(2, 2)\n"
                                )
                            ],
                        )
                    ]
                )
            ),
        )
    )
    assert await wait_for(client, cell_uris[2]) == []
