"""The results cache: hits on unchanged files, misses on any change, never trusts a bad file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from devlint import parallel
from devlint.api import lint_paths
from devlint.cache import CACHE_DIR_ENV, Cache, find_cache_dir
from devlint.config import ConfigResolver, RuleSelection
from devlint.report import RunSummary

from .helpers import run_cli

BUGGY = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
CLEAN = "import torch\nx = torch.ones(2)\n"
# Old enough that a later edit surely changes the time: no digest check needed.
LONG_AGO = time.time_ns() - 3600 * 1_000_000_000


def _write(path: Path, text: str, mtime_ns: int = LONG_AGO) -> None:
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    _write(root / "buggy.py", BUGGY)
    _write(root / "clean.py", CLEAN)
    return root


@pytest.fixture
def linted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files actually linted (not answered from the cache) during a test."""
    seen: list[str] = []
    real = parallel.lint_path

    def counting(path: Path, codes: frozenset[str], *style: object) -> object:
        seen.append(path.name)
        return real(path, codes, *style)  # type: ignore[arg-type]

    monkeypatch.setattr(parallel, "lint_path", counting)
    return seen


def _lint(root: Path, cache_dir: Path, select: tuple[str, ...] | None = None) -> RunSummary:
    resolver = ConfigResolver(RuleSelection(select))
    return lint_paths([root], resolver, False, cache_dir=cache_dir)


def _shown(summary: RunSummary) -> list[tuple[str, str, int, int, str, object]]:
    return [
        (f.path, f.code, f.start.row, f.start.column, f.message, f.fix) for f in summary.findings
    ]


def _assert_relinted_afresh(
    project: Path, cache_dir: Path, linted: list[str], expected: object
) -> None:
    """A distrusted cache: every file is linted again, and the findings are the same."""
    linted.clear()
    assert _shown(_lint(project, cache_dir)) == expected
    assert sorted(linted) == ["buggy.py", "clean.py"]


def test_unchanged_files_are_answered_from_the_cache(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    cache_dir = tmp_path / "cache"
    first = _lint(project, cache_dir)
    assert sorted(linted) == ["buggy.py", "clean.py"]
    linted.clear()
    second = _lint(project, cache_dir)
    assert linted == []
    assert _shown(second) == _shown(first) != []
    assert second.files_checked == first.files_checked == 2


def test_findings_keep_their_fixes_through_the_cache(project: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    first = _lint(project, cache_dir)
    assert any(finding.fix is not None for finding in first.findings)
    assert _lint(project, cache_dir).findings == first.findings


def test_an_edited_file_is_linted_again(project: Path, tmp_path: Path, linted: list[str]) -> None:
    cache_dir = tmp_path / "cache"
    _lint(project, cache_dir)
    linted.clear()
    _write(project / "clean.py", BUGGY, mtime_ns=time.time_ns() - 10 * 1_000_000_000)
    summary = _lint(project, cache_dir)
    assert linted == ["clean.py"]
    assert sorted({finding.path for finding in summary.findings}) == [
        str(project / "buggy.py"),
        str(project / "clean.py"),
    ]


def test_a_same_size_edit_within_the_same_instant_is_caught(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    """The racy case: new bytes, same size, same time; the digest tells them apart."""
    cache_dir = tmp_path / "cache"
    now = time.time_ns()
    _write(project / "clean.py", "import torch\nx = torch.ones(2)\n", mtime_ns=now)
    _lint(project, cache_dir)
    linted.clear()
    _write(project / "clean.py", "import torch\nx = torch.ones(3)\n", mtime_ns=now)
    _lint(project, cache_dir)
    assert linted == ["clean.py"]


def test_other_settings_miss(project: Path, tmp_path: Path, linted: list[str]) -> None:
    cache_dir = tmp_path / "cache"
    _lint(project, cache_dir)
    linted.clear()
    summary = _lint(project, cache_dir, select=("DEV008",))
    assert sorted(linted) == ["buggy.py", "clean.py"]
    assert summary.findings == []
    linted.clear()
    _lint(project, cache_dir)  # both selections are remembered side by side
    assert linted == []


def test_a_corrupt_cache_is_ignored_and_rebuilt(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    cache_dir = tmp_path / "cache"
    expected = _shown(_lint(project, cache_dir))
    results = Cache(cache_dir).file
    results.write_bytes(b"\x00not json{")
    _assert_relinted_afresh(project, cache_dir, linted, expected)
    assert json.loads(results.read_text())["entries"]  # rewritten whole


def test_malformed_entries_and_foreign_headers_are_not_trusted(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    cache_dir = tmp_path / "cache"
    expected = _shown(_lint(project, cache_dir))
    results = Cache(cache_dir).file
    document = json.loads(results.read_text())
    for entry in document["entries"].values():
        entry["findings"] = [{"code": 1}]  # the right place, the wrong shape
    results.write_text(json.dumps(document))
    _assert_relinted_afresh(project, cache_dir, linted, expected)

    document = json.loads(results.read_text())
    document["header"]["devlint"] = "0.0.0-other"
    for entry in document["entries"].values():
        entry["findings"] = []  # a plausible but foreign answer
    results.write_text(json.dumps(document))
    _assert_relinted_afresh(project, cache_dir, linted, expected)


def test_entries_of_the_wrong_types_are_dropped(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    cache_dir = tmp_path / "cache"
    expected = _shown(_lint(project, cache_dir))
    results = Cache(cache_dir).file
    document = json.loads(results.read_text())
    first, second = sorted(document["entries"])
    document["entries"][first]["seen_ns"] = "yesterday"
    document["entries"][second] = ["not", "an", "entry"]
    results.write_text(json.dumps(document))
    _assert_relinted_afresh(project, cache_dir, linted, expected)


def test_the_cache_folder_is_tagged_and_ignored(project: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    _lint(project, cache_dir)
    assert (
        (cache_dir / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    assert (cache_dir / ".gitignore").read_text().splitlines()[-1] == "*"
    leftovers = [p.name for p in cache_dir.rglob("*") if p.name.startswith(".results")]
    assert leftovers == []  # temporary files of the atomic writes are gone


def test_the_cache_lives_at_the_project_root(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    nested = tmp_path / "src" / "pkg"
    nested.mkdir(parents=True)
    assert find_cache_dir(nested) == tmp_path / ".devlint_cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "elsewhere"))
    assert find_cache_dir(nested) == tmp_path / "elsewhere"


def _cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    (tmp_path / "pyproject.toml").write_text("[tool.devlint]\n")


def test_cli_writes_the_cache_at_the_project_root_and_reuses_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cli_env(tmp_path, monkeypatch)
    first = run_cli("project", cwd=tmp_path)
    assert (tmp_path / ".devlint_cache" / "CACHEDIR.TAG").is_file()
    second = run_cli("project", cwd=tmp_path)
    assert (first.returncode, first.stdout) == (second.returncode, second.stdout)
    assert first.returncode == 1 and "DEV001" in first.stdout


def test_cli_no_cache_writes_nothing(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cli_env(tmp_path, monkeypatch)
    completed = run_cli("--no-cache", "project", cwd=tmp_path)
    assert completed.returncode == 1 and "DEV001" in completed.stdout
    assert not (tmp_path / ".devlint_cache").exists()


def test_a_new_torch_floor_is_a_new_cache_entry(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    # The fixes a finding carries follow the floor: a result cached under another floor is stale.
    cache_dir = tmp_path / "cache"
    (project / "pyproject.toml").write_text('[tool.devlint]\ntorch-version = "2.0"\n')
    _lint(project, cache_dir)
    (project / "pyproject.toml").write_text('[tool.devlint]\ntorch-version = "2.7"\n')
    linted.clear()
    fixes = [f.fix for f in _lint(project, cache_dir).findings if f.code == "DEV001"]
    assert sorted(linted) == ["buggy.py", "clean.py"]
    assert fixes and "torch.accelerator" in fixes[0].edits[-1].content
    linted.clear()
    _lint(project, cache_dir)
    assert linted == []
