"""Bad input: one DEV000 naming the file and the reason, the run going on, never a traceback."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.diagnostics import PARSE_ERROR_CODE
from devlint.engine import RuleSet, lint_source
from devlint.rules import ALL_RULES
from tests.helpers import findings_of, run_cli, without_fix_hint

RULES = RuleSet({rule.code for rule in ALL_RULES} | {PARSE_ERROR_CODE})
BUG = "import torch\nmodel.cuda()\n"


def _lint(data: bytes) -> list[tuple[str, int, int, str]]:
    result = lint_source("bad.py", data, RULES)
    assert not result.errors
    return [(f.code, f.start.row, f.start.column, f.message) for f in result.findings]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"def f(:\n    pass\n", (1, 7, "syntax error"), id="syntax-error"),
        pytest.param(b"print 'py2'\n", (1, 1, "Missing parentheses"), id="python-2"),
        pytest.param(b"x = '\xff'\n", (1, 6, "not valid utf-8: byte 0xff"), id="not-utf8"),
        pytest.param(b"x = 1\x00\n", (1, 1, "null bytes"), id="nul-byte"),
        pytest.param(
            b"# -*- coding: klingon -*-\nx = 1\n", (1, 1, "unknown encoding"), id="bad-cookie"
        ),
        pytest.param(
            b"x = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n",
            (1, 205, "too many nested parentheses"),
            id="deep-parentheses",
        ),
        pytest.param(
            b"x = " + b"-" * 100_000 + b"1\n", (1, 1, "nested too deeply"), id="deep-unary"
        ),
        pytest.param(
            b"x = " + b"+".join([b"a"] * 50_000) + b"\n",
            (1, 1, "nested too deeply"),
            id="long-chain",
        ),
    ],
)
def test_bad_source_is_one_parse_error(data: bytes, expected: tuple[int, int, str]) -> None:
    [(code, row, column, message)] = _lint(data)
    assert (code, row, column) == (PARSE_ERROR_CODE, *expected[:2])
    assert expected[2] in message


def test_a_coding_cookie_for_another_encoding_is_honoured() -> None:
    data = "# -*- coding: latin-1 -*-\nimport torch\nname = 'café'\nmodel.cuda()\n".encode(
        "latin-1"
    )
    assert [code for code, *_ in _lint(data)] == ["DEV001"]


def test_an_empty_file_is_clean() -> None:
    assert _lint(b"") == []


def test_deep_but_valid_nesting_is_linted() -> None:
    data = b"import torch\nx = " + b"[" * 150 + b"]" * 150 + b"\nmodel.cuda()\n"
    assert [code for code, *_ in _lint(data)] == ["DEV001"]


def test_a_ten_megabyte_file_is_refused_with_its_size(tmp_path: Path) -> None:
    body = "value = compute(1, 2) + other\n" * 340_000
    (tmp_path / "big.py").write_text(f"import torch\n{body}model.cuda()\n", encoding="utf-8")
    (tmp_path / "small.py").write_text(BUG, encoding="utf-8")
    result = run_cli("--no-cache", ".", cwd=tmp_path)
    assert findings_of(result.stdout) == [("big.py", 1, 1, "DEV000"), ("small.py", 2, 1, "DEV001")]
    assert "too large to analyse (9.7 MB; devlint parses files up to 5 MB)" in result.stdout


def test_filesystem_oddities_each_report_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(BUG, encoding="utf-8")
    os.symlink("loop_b.py", tmp_path / "loop_a.py")
    os.symlink("loop_a.py", tmp_path / "loop_b.py")
    os.symlink("missing.py", tmp_path / "dangling.py")
    (tmp_path / "folder.py").mkdir()
    (tmp_path / "folder.py" / "inner.py").write_text(BUG, encoding="utf-8")
    result = run_cli("--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = without_fix_hint(result.stdout)
    assert [line.split(": ", 1)[0] for line in lines[:-1]] == [
        "dangling.py:1:1",
        "folder.py/inner.py:2:1",
        "good.py:2:1",
        "loop_a.py:1:1",
        "loop_b.py:1:1",
    ]
    assert "DEV000 cannot read: No such file or directory" in lines[0]
    assert "DEV000 cannot read: Too many levels of symbolic links" in lines[3]


def test_an_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from devlint.api import Linter
    from devlint.config import ConfigResolver, RuleSelection

    target = tmp_path / "secret.py"
    target.write_text(BUG, encoding="utf-8")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", refuse)  # root reads any file: simulate the refusal
    result = Linter(ConfigResolver(RuleSelection())).lint_file(target)
    [finding] = result.findings
    assert (finding.code, finding.message) == (PARSE_ERROR_CODE, "cannot read: Permission denied")


def test_a_missing_path_and_a_bad_config_exit_2_naming_them(tmp_path: Path) -> None:
    missing = run_cli("nowhere.py", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere.py" in missing.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.devlint]\nselct = []\n", encoding="utf-8")
    (tmp_path / "a.py").write_text(BUG, encoding="utf-8")
    config = run_cli("a.py", cwd=tmp_path)
    assert config.returncode == 2 and "selct" in config.stderr and "Traceback" not in config.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_the_engine_never_raises_on_arbitrary_bytes(data: bytes) -> None:
    result = lint_source("fuzz.py", data, RULES)
    assert not result.errors


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="()[]{}:=+-*/.,'\"#\\\n xyzaif0123torchcuda", max_size=200))
def test_the_engine_never_raises_on_python_like_text(text: str) -> None:
    result = lint_source("fuzz.py", text.encode(), RULES)
    assert not result.errors


hypothesmith = pytest.importorskip("hypothesmith")


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_the_engine_never_raises_on_generated_programs(source: str) -> None:
    result = lint_source("generated.py", source.encode("utf-8", "surrogatepass"), RULES)
    assert not result.errors


# hypothesmith compiles what it generates, and CPython warns about some of it (`1.0()`).
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_node())
def test_the_engine_never_raises_on_generated_syntax_trees(source: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # the user's code is not devlint's: nothing may leak
        result = lint_source("generated.py", source.encode("utf-8", "surrogatepass"), RULES)
    assert not result.errors
    assert not [warning for warning in caught if warning.category is SyntaxWarning]
