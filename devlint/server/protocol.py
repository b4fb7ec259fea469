"""`devlint server`: the language server's handlers (pygls 2 over standard input and output).

Linting runs on one worker thread, off the event loop, so the server keeps answering while it
lints. Each document has at most one lint in flight: a change that arrives meanwhile is linted
when that run ends, and the stale run's findings are never published.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from devlint import __version__
from devlint.diagnostics import Applicability, Finding, InternalError
from devlint.rule_info import explanation
from devlint.rules import RULES_BY_CODE
from devlint.server.actions import (
    FIX_ALL_KIND,
    diff_edits,
    disable_action,
    fix_all_action,
    quick_fix,
)
from devlint.server.convert import (
    error_diagnostic,
    problem_diagnostic,
    to_diagnostic,
    to_range,
)
from devlint.server.imports import imported_modules, imports_any, module_names
from devlint.server.notebooks import Cell, findings_by_cell, notebook_json
from devlint.server.session import LintOutcome, LintSession, ServerSettings
from devlint.suppression import split_lines

logger = logging.getLogger("devlint.server")
PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Published:
    """What the client was last told about a document, and the text it was computed on."""

    version: Optional[int]
    lines: list[str]
    findings: list[Finding] = field(default_factory=list)


@dataclass
class _Run:
    task: asyncio.Task[None]
    again: bool = False  # a save or a setting changed while it ran: lint once more
    cascade: bool = False  # then re-lint the open files that import this one


# Notebooks with Python cells are synced as notebooks (LSP 3.17), their cells not as files.
_NOTEBOOKS = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage("python")])
    ],
    save=True,
)


class DevlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("devlint", __version__, notebook_document_sync=_NOTEBOOKS)
        self.session = LintSession(ServerSettings())
        # One worker: rule sets carry per-file state, and a second core is the editor's.
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="devlint-lint")
        self.published: dict[str, Published] = {}
        self.runs: dict[str, _Run] = {}
        # The last outcome of each document with what it was computed from: a save, or a
        # change in a file it imports that changes nothing it reads, costs no lint.
        self.memo: dict[str, tuple[tuple[object, ...], LintOutcome]] = {}

    # Documents -----------------------------------------------------------------------------

    def path_of(self, uri: str) -> Path:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        # An unsaved buffer is linted as a file in the workspace's root.
        return Path(path) if path else self.session.root / "untitled.py"

    def is_python(self, uri: str) -> bool:
        """A Python file open on its own (a notebook's cell is linted with its notebook)."""
        document = self.workspace.text_documents.get(uri)
        if document is None or self.workspace.get_notebook_document(cell_uri=uri) is not None:
            return False
        return document.language_id == "python" or uri.endswith(PYTHON_SUFFIXES)

    def cells(self, uri: str) -> Optional[list[Cell]]:
        """The open notebook's cells, in order; None where ``uri`` is no open notebook."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return None
        cells = []
        for cell in notebook.cells:
            document = self.workspace.text_documents.get(cell.document)
            code = cell.kind == types.NotebookCellKind.Code and document is not None
            if code and document is not None and document.language_id != "python":
                code = False
            source = document.source if document is not None else ""
            cells.append(Cell(cell.document, "code" if code else "markdown", source))
        return cells

    def snapshot(self, uri: str) -> Optional[tuple[Optional[int], str]]:
        """The version and the text to lint of an open file or notebook."""
        cells = self.cells(uri)
        if cells is not None:
            notebook = self.workspace.get_notebook_document(notebook_uri=uri)
            return (notebook.version if notebook is not None else None), notebook_json(cells)
        document = self.workspace.text_documents.get(uri)
        return None if document is None else (document.version, document.source)

    def schedule(self, uri: str, cascade: bool = False) -> None:
        """Lint ``uri`` now, or as soon as the run in flight for it ends."""
        if not (self.is_python(uri) or uri in self.workspace.notebook_documents):
            return
        run = self.runs.get(uri)
        if run is not None:
            run.again = True
            run.cascade |= cascade
            return
        task = asyncio.get_running_loop().create_task(self._lint_until_current(uri))
        self.runs[uri] = _Run(task, cascade=cascade)

    def relint_all(self) -> None:
        for uri in [*self.workspace.text_documents, *self.workspace.notebook_documents]:
            self.schedule(uri)

    async def _lint_until_current(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while (snapshot := self.snapshot(uri)) is not None:
                run = self.runs[uri]
                run.again = False
                version, text = snapshot
                key = (text, self._dependencies(uri, text), *self.session.stamp(self.path_of(uri)))
                memo = self.memo.get(uri)
                if memo is not None and memo[0] == key:
                    outcome = memo[1]
                else:
                    outcome = await loop.run_in_executor(self.linter, self._lint, uri, text)
                    self.memo[uri] = (key, outcome)
                current = self.snapshot(uri)
                if current is None:
                    return
                if current != snapshot or run.again:
                    continue  # superseded: the findings of an older text are never shown
                self._publish(uri, version, text, outcome)
                break
        finally:
            finished = self.runs.pop(uri, None)
        if finished is not None and finished.cascade:
            self._lint_dependents(uri)

    def _lint(self, uri: str, text: str) -> LintOutcome:
        """One lint on the worker thread; whatever happens, the server stays up."""
        path = self.path_of(uri)
        try:
            return self.session.lint(path, text)
        except Exception as error:
            detail = f"{type(error).__name__}: {error}"
            logger.error("linting %s failed:\n%s", path, traceback.format_exc())
            return LintOutcome(errors=[InternalError(str(path), detail)])

    def _publish(self, uri: str, version: Optional[int], text: str, outcome: LintOutcome) -> None:
        if outcome.skipped is not None:
            self.window_log_message(
                types.LogMessageParams(type=types.MessageType.Info, message=outcome.skipped)
            )
        cells = self.cells(uri)
        if cells is not None:
            self._publish_cells(cells, outcome)
            return
        self._publish_document(uri, version, text, outcome.findings, outcome)

    def _publish_cells(self, cells: list[Cell], outcome: LintOutcome) -> None:
        """A notebook's findings, each on its cell; problems with devlint on the first."""
        by_cell = findings_by_cell(outcome.findings, cells)
        for index, (cell_uri, findings) in enumerate(by_cell.items()):
            document = self.workspace.text_documents.get(cell_uri)
            version = document.version if document is not None else None
            source = document.source if document is not None else ""
            problems = outcome if index == 0 else LintOutcome()
            self._publish_document(cell_uri, version, source, findings, problems)

    def _publish_document(
        self,
        uri: str,
        version: Optional[int],
        text: str,
        findings: list[Finding],
        outcome: LintOutcome,
    ) -> None:
        lines = split_lines(text)
        codec = self.workspace.position_codec
        diagnostics = [to_diagnostic(f, uri, lines, codec) for f in findings]
        diagnostics += [error_diagnostic(error) for error in outcome.errors]
        if outcome.config_error is not None:
            diagnostics.append(problem_diagnostic(f"devlint: {outcome.config_error}"))
        self.published[uri] = Published(version, lines, findings)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def _dependencies(self, uri: str, text: str) -> tuple[tuple[str, int], ...]:
        """The open files this one imports, with their versions."""
        imported = imported_modules(text, self.path_of(uri))
        return tuple(
            (other, document.version or 0)
            for other, document in self.workspace.text_documents.items()
            if other != uri and imports_any(imported, module_names(self.path_of(other)))
        )

    def _lint_dependents(self, uri: str) -> None:
        """Re-lint the open files that import the one that changed."""
        names = module_names(self.path_of(uri))
        for other, document in list(self.workspace.text_documents.items()):
            if other == uri or not self.is_python(other):
                continue
            if imports_any(imported_modules(document.source, self.path_of(other)), names):
                self.schedule(other)

    def current(self, uri: str) -> Optional[Published]:
        """The findings published for the document's current text, if they are current."""
        published = self.published.get(uri)
        document = self.workspace.text_documents.get(uri)
        if published is None or document is None or published.version != document.version:
            return None
        return published

    def lazy_edits(self) -> bool:
        """Whether the client resolves a code action's edit later (`codeAction/resolve`)."""
        capabilities = self.client_capabilities.text_document
        action = capabilities.code_action if capabilities is not None else None
        support = action.resolve_support if action is not None else None
        return support is not None and "edit" in support.properties

    async def fix_all_edit(self, uri: str) -> Optional[types.WorkspaceEdit]:
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return None
        version, text = document.version, document.source
        loop = asyncio.get_running_loop()
        fixed = await loop.run_in_executor(
            self.linter, self.session.fix_all, self.path_of(uri), text
        )
        if fixed is None:
            return types.WorkspaceEdit(document_changes=[])
        edits: list[types.TextEdit | types.AnnotatedTextEdit | types.SnippetTextEdit] = []
        edits.extend(diff_edits(text, fixed, self.workspace.position_codec))
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)]
        )


server = DevlintServer()


def _root_of(params: types.InitializeParams) -> Optional[Path]:
    uri = params.workspace_folders[0].uri if params.workspace_folders else params.root_uri
    path = to_fs_path(uri) if uri else params.root_path
    return Path(path) if path else None


@server.feature(types.INITIALIZE)
def initialize(ls: DevlintServer, params: types.InitializeParams) -> None:
    ls.session.root = _root_of(params) or Path.cwd()
    ls.session.configure(ServerSettings.from_options(params.initialization_options))


@server.feature(types.SHUTDOWN)
def shutdown(ls: DevlintServer, params: None) -> None:
    for run in ls.runs.values():
        run.task.cancel()
    ls.linter.shutdown(wait=False, cancel_futures=True)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: DevlintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: DevlintServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, cascade=True)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: DevlintServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, cascade=True)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: DevlintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.published.pop(uri, None)
    ls.memo.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def did_open_notebook(ls: DevlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def did_change_notebook(ls: DevlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def did_save_notebook(ls: DevlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def did_close_notebook(ls: DevlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    ls.memo.pop(params.notebook_document.uri, None)
    for cell in params.cell_text_documents:
        ls.published.pop(cell.uri, None)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[])
        )


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: DevlintServer, params: types.DidChangeConfigurationParams) -> None:
    if params.settings is not None:  # a client may only signal a change
        ls.session.configure(ServerSettings.from_options(params.settings))
    ls.relint_all()


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: DevlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    ls.relint_all()  # a pyproject.toml or baseline may have changed: lints re-read them by mtime


def _overlaps(finding: types.Range, wanted: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return (position.line, position.character)

    return key(finding.start) <= key(wanted.end) and key(wanted.start) <= key(finding.end)


def _wants(only: Optional[list[str]], kind: str) -> bool:
    return only is None or any(kind == k or kind.startswith(f"{k}.") for k in only)


_ACTION_KINDS = [types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND]


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=_ACTION_KINDS, resolve_provider=True),
)
async def code_action(
    ls: DevlintServer, params: types.CodeActionParams
) -> Optional[list[types.CodeAction]]:
    uri = params.text_document.uri
    published = ls.current(uri)
    if published is None:
        return None
    only = [str(kind) for kind in params.context.only] if params.context.only else None
    codec = ls.workspace.position_codec
    lines, version = published.lines, published.version
    actions: list[types.CodeAction] = []
    if _wants(only, types.CodeActionKind.QuickFix):
        for finding in published.findings:
            if not _overlaps(to_range(finding.start, finding.end, lines, codec), params.range):
                continue
            for action in (
                quick_fix(finding, uri, version, lines, codec),
                disable_action(finding, uri, version, lines, codec),
            ):
                if action is not None:
                    actions.append(action)
    unsafe = ls.session.settings.unsafe_fixes
    fixable = [
        f
        for f in published.findings
        if f.fix is not None and (unsafe or f.fix.applicability is Applicability.SAFE)
    ]
    in_notebook = ls.workspace.get_notebook_document(cell_uri=uri) is not None
    if fixable and _wants(only, FIX_ALL_KIND) and not in_notebook:  # a cell is not a file
        action = fix_all_action(uri, version)
        if not ls.lazy_edits():  # a client that cannot resolve gets the edit now
            action.edit = await ls.fix_all_edit(uri)
        actions.append(action)
    return actions


@server.feature(types.CODE_ACTION_RESOLVE)
async def resolve_code_action(ls: DevlintServer, action: types.CodeAction) -> types.CodeAction:
    data: Any = action.data
    if isinstance(data, dict) and data.get("action") == "fixAll" and action.edit is None:
        action.edit = await ls.fix_all_edit(str(data.get("uri")))
    return action


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: DevlintServer, params: types.HoverParams) -> Optional[types.Hover]:
    """The rule's `devlint explain` text, over a finding."""
    published = ls.current(params.text_document.uri)
    if published is None:
        return None
    codec = ls.workspace.position_codec
    point = types.Range(start=params.position, end=params.position)
    texts: list[str] = []
    where: Optional[types.Range] = None
    for finding in published.findings:
        span = to_range(finding.start, finding.end, published.lines, codec)
        rule = RULES_BY_CODE.get(finding.code)
        if rule is None or not _overlaps(span, point):
            continue
        text = f"**{finding.code}**: {finding.message}\n\n{explanation(rule)}"
        if text not in texts:
            texts.append(text)
            where = where or span
    if not texts:
        return None
    content = types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n---\n".join(texts))
    return types.Hover(contents=content, range=where)


def run() -> None:
    """Serve over standard input and output until the client says exit."""
    logging.basicConfig(level=logging.WARNING, format="devlint server: %(message)s")
    server.start_io()


__all__ = ["DevlintServer", "from_fs_path", "run", "server"]
