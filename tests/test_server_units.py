"""The language server's pieces in process: settings, noqa edits, imports, failures."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

pytest.importorskip("pygls", reason="the server extra (pygls) is not installed")

import libcst as cst

from devlint.diagnostics import Edit, Position
from devlint.rules.deprecated_cuda_api import DeprecatedCudaApi
from devlint.server import session as session_module
from devlint.server.actions import noqa_edit
from devlint.server.convert import error_diagnostic, rule_docs_url
from devlint.server.imports import imported_modules, imports_any, module_names
from devlint.server.protocol import DevlintServer
from devlint.server.session import LintSession, ServerSettings, encode_source


def test_settings_accept_camel_and_kebab_case_and_a_section() -> None:
    settings = ServerSettings.from_options(
        {"devlint": {"select": "DEV001, DEV002", "extend-select": ["DEV010"],
                     "ignore": ["DEV002"], "unsafeFixes": True, "configFile": "x.toml"}}
    )  # fmt: skip
    assert settings == ServerSettings(
        ("DEV001", "DEV002"), ("DEV010",), ("DEV002",), True, "x.toml", None
    )
    assert ServerSettings.from_options(None) == ServerSettings()
    assert ServerSettings.from_options(["not", "a", "table"]) == ServerSettings()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("x = a.cuda()\n", Edit(Position(3, 13), Position(3, 13), "  # noqa: DEV001")),
        ("x = a.cuda()   \n", Edit(Position(3, 13), Position(3, 16), "  # noqa: DEV001")),
        ("x = a.cuda()  # noqa: DEV004\n", Edit(Position(3, 29), Position(3, 29), ", DEV001")),
        ("x = a.cuda()  # why  # NOQA:DEV004 more\n",
         Edit(Position(3, 35), Position(3, 35), ", DEV001")),
        ('x = f("# noqa: DEV004")\n', Edit(Position(3, 24), Position(3, 24), "  # noqa: DEV001")),
        ("x = a.cuda()  # noqa\n", None),
    ],
)  # fmt: skip
def test_noqa_edit(line: str, expected: Edit | None) -> None:
    assert noqa_edit(line, 3, "DEV001") == expected


def test_imports_and_module_names() -> None:
    text = (
        "import os, pkg.model as m\nfrom pkg import trainer\nfrom . import utils\n"
        "from ..core.layers import (Dense,\n    Sparse)\n    import nested  # in a function\n"
    )
    imported = imported_modules(text, PurePosixPath("/ws/pkg/sub/user.py"))
    assert {"os", "pkg.model", "pkg", "pkg.trainer", "nested"} <= imported
    assert {"ws.pkg.sub.utils", "ws.pkg.core.layers.Dense"} <= imported
    assert module_names(PurePosixPath("/ws/pkg/model.py")) == {"model", "pkg.model", "ws.pkg.model"}
    assert module_names(PurePosixPath("/ws/pkg/__init__.py")) == {"pkg", "ws.pkg"}
    assert imports_any(imported, module_names(PurePosixPath("/elsewhere/pkg/model.py")))
    assert imports_any(imported, module_names(PurePosixPath("/ws/pkg/sub/utils.py")))
    assert not imports_any(imported, module_names(PurePosixPath("/ws/pkg/data.py")))


def test_encode_source_keeps_a_coding_cookie() -> None:
    text = "# -*- coding: latin-1 -*-\nname = 'café'\n"
    assert encode_source(text) == text.encode("latin-1")
    assert encode_source("x = 'café'\n") == "x = 'café'\n".encode()


def test_a_crash_inside_a_rule_becomes_a_diagnostic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: DeprecatedCudaApi, node: cst.Attribute) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(DeprecatedCudaApi, "visit_Attribute", broken)
    session = LintSession(ServerSettings(), tmp_path)
    outcome = session.lint(tmp_path / "a.py", "import torch\ntorch.cuda.memory_cached()\n")
    (error,) = outcome.errors
    diagnostic = error_diagnostic(error)
    assert diagnostic.message.startswith(
        "devlint internal error: DEV002 crashed: ZeroDivisionError: boom"
    )
    assert diagnostic.range.start.line == 0


def test_an_exception_in_the_engine_never_escapes_a_lint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: object) -> None:
        raise MemoryError("out of memory")

    monkeypatch.setattr(session_module, "lint_source", explode)
    server = DevlintServer()
    server.session.root = tmp_path
    outcome = server._lint((tmp_path / "a.py").as_uri(), "import torch\n")
    assert [e.detail for e in outcome.errors] == ["MemoryError: out of memory"]


def test_rule_docs_url_names_the_readme_section() -> None:
    assert rule_docs_url("DEV001").endswith("/README.md#dev001")
