"""Linting across processes gives the same output, in the same order, as linting in one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from devlint import parallel
from devlint.api import lint_paths
from devlint.config import ConfigResolver, RuleSelection
from devlint.parallel import Task, lint_tasks

from .helpers import FIXTURES, run_cli


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The fixtures, plus files of many sizes, a syntax error and undecodable bytes."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES, root / "fixtures")
    for index in range(30):
        body = "".join(f"y{n} = torch.ones({n}).cuda()\n" for n in range(index * 2))
        (root / f"module_{index:02}.py").write_text(f"import torch\n{body}")
    (root / "broken.py").write_text("def f(:\n    pass\n")
    (root / "latin.py").write_bytes(b"x = '\xe9'\n")
    return root


def _summary(root: Path, jobs: int) -> tuple[list[object], list[object], int]:
    summary = lint_paths([root], ConfigResolver(RuleSelection()), False, jobs=jobs)
    return summary.findings, summary.errors, summary.files_checked


def test_two_jobs_give_what_one_gives(tree: Path) -> None:
    findings, errors, checked = _summary(tree, 1)
    assert len(findings) > 50 and checked > 30
    assert _summary(tree, 2) == (findings, errors, checked)


def test_the_pool_is_used_and_every_index_comes_back(tree: Path) -> None:
    files = sorted(tree.rglob("*.py"))
    tasks = [Task(index, path, frozenset({"DEV000", "DEV001"})) for index, path in enumerate(files)]
    outcomes = list(lint_tasks(tasks, jobs=2))
    assert sorted(index for index, _, _ in outcomes) == list(range(len(files)))
    for index, result, stamp in outcomes:
        assert result.path == str(files[index])
        assert stamp is not None and stamp.size == files[index].stat().st_size


def _die_on_crash_py(path: Path, codes: frozenset[str], *style: object) -> object:
    if path.name == "crash.py":
        os._exit(1)  # as a segmentation fault in native code would end the worker
    return real_lint_path(path, codes, *style)  # type: ignore[arg-type]


real_lint_path = parallel.lint_path


def test_a_dead_worker_costs_only_its_culprit_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "crash.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    healthy = lint_paths([tree], ConfigResolver(RuleSelection()), False, jobs=2)
    monkeypatch.setattr(parallel, "lint_path", _die_on_crash_py)
    summary = lint_paths([tree], ConfigResolver(RuleSelection()), False, jobs=2)
    assert [error.path for error in summary.errors] == [str(tree / "crash.py")]
    assert "stopped" in summary.errors[0].detail
    assert summary.files_checked == healthy.files_checked
    crashed = str(tree / "crash.py")
    assert summary.findings == [f for f in healthy.findings if f.path != crashed]


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_cli_output_is_the_same_with_two_jobs(tree: Path, output_format: str) -> None:
    one = run_cli("--no-cache", "--jobs", "1", "--format", output_format, ".", cwd=tree)
    two = run_cli("--no-cache", "--jobs", "2", "--format", output_format, ".", cwd=tree)
    assert one.returncode == two.returncode == 1
    assert one.stdout == two.stdout
    assert one.stderr == two.stderr
