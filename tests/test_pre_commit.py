"""devlint's pre-commit hooks, run by the real pre-commit in throwaway git repositories.

The hook environment is built once (pip installs devlint from a snapshot of this checkout into
a virtual environment), so these tests are marked slow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, write

pytest.importorskip("pre_commit")
pytestmark = pytest.mark.slow

BUGGY = """\
import torch

model = torch.nn.Linear(2, 2).cuda()
"""
CLEAN = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 2).to(device)
"""
# Both findings have a safe fix: a `device` is in scope, and memory_cached was only renamed.
FIXABLE = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 2).cuda()
print(torch.cuda.memory_cached())
"""


def _notebook(*cells: str) -> str:
    """A Jupyter notebook (nbformat 4) with these code cells."""
    code = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": cell.splitlines(keepends=True)}
        for cell in cells
    ]  # fmt: skip
    return json.dumps({"cells": code, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}) + "\n"


def _git(*args: str, cwd: Path, env: dict[str, str]) -> str:
    completed = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return completed.stdout


def _snapshot_of_this_checkout(destination: Path, env: dict[str, str]) -> str:
    """This checkout's files (tracked, and untracked unless ignored) committed in a new repository.

    pre-commit installs a hook repository at a commit; uncommitted work would be invisible to
    it, and a snapshot keeps these tests independent of the state of this checkout's index.
    """
    listed = _git(
        "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO_ROOT, env=env
    )
    for relative in filter(None, listed.split("\0")):
        source = REPO_ROOT / relative
        if source.is_file():
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    _git("init", "-q", cwd=destination, env=env)
    _git("add", "-A", cwd=destination, env=env)
    _git("commit", "-q", "-m", "snapshot", cwd=destination, env=env)
    return _git("rev-parse", "HEAD", cwd=destination, env=env).strip()


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Git with a fixed identity and no user configuration; pre-commit's cache shared by the
    module's tests, so the hook environment is built once."""
    home = tmp_path_factory.mktemp("home")
    return {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "devlint tests",
        "GIT_AUTHOR_EMAIL": "tests@example.invalid",
        "GIT_COMMITTER_NAME": "devlint tests",
        "GIT_COMMITTER_EMAIL": "tests@example.invalid",
        "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-cache")),
    }


@pytest.fixture(scope="module")
def hook_repo(
    tmp_path_factory: pytest.TempPathFactory, environment: dict[str, str]
) -> tuple[Path, str]:
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of devlint")
    destination = tmp_path_factory.mktemp("devlint-hook-repo")
    return destination, _snapshot_of_this_checkout(destination, environment)


@pytest.fixture
def project(tmp_path: Path, environment: dict[str, str]) -> Iterator[Path]:
    """A user's repository; its `legacy/` folder is excluded in its configuration."""
    _git("init", "-q", cwd=tmp_path, env=environment)
    write(tmp_path, {"pyproject.toml": '[tool.devlint]\nextend-exclude = ["legacy/"]\n'})
    yield tmp_path


def _pre_commit(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _commit(project: Path, env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    """`git commit`, which runs the installed hooks; its failure is the hook's answer."""
    return subprocess.run(
        ["git", "commit", "-m", message],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_lint_hook_fails_and_lists_the_finding(
    hook_repo: tuple[Path, str], project: Path, environment: dict[str, str]
) -> None:
    write(project, {"buggy.py": BUGGY, "clean.py": CLEAN, "legacy/old.py": BUGGY})
    _git("add", "-A", cwd=project, env=environment)
    repo, rev = hook_repo
    result = _pre_commit(
        "try-repo", str(repo), "devlint", "--ref", rev, "--all-files", cwd=project, env=environment
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "buggy.py:3:9: DEV001 `torch.nn.Linear(2, 2).cuda()`" in output
    assert "clean.py:" not in output
    # pre-commit names every file; --force-exclude keeps the configured exclude working.
    assert "legacy/old.py" not in output


def test_fix_hook_rewrites_and_fails_once(
    hook_repo: tuple[Path, str], project: Path, environment: dict[str, str]
) -> None:
    # Needs the lead's `--fix --exit-non-zero-on-fix`: safe fixes for DEV001 and DEV002.
    write(project, {"train.py": FIXABLE})
    _git("add", "-A", cwd=project, env=environment)
    repo, rev = hook_repo
    hook = ("try-repo", str(repo), "devlint-fix", "--ref", rev, "--all-files")
    first = _pre_commit(*hook, cwd=project, env=environment)
    fixed = (project / "train.py").read_text(encoding="utf-8")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "model = torch.nn.Linear(2, 2).to(device)\n" in fixed
    assert "print(torch.cuda.memory_reserved())\n" in fixed
    assert ".cuda()" not in fixed and "memory_cached" not in fixed
    _git("add", "-A", cwd=project, env=environment)
    second = _pre_commit(*hook, cwd=project, env=environment)
    assert second.returncode == 0, second.stdout + second.stderr


def test_installed_hook_passes_a_commit_without_python_and_stops_a_buggy_one(
    hook_repo: tuple[Path, str], project: Path, environment: dict[str, str]
) -> None:
    repo, rev = hook_repo
    config = f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: devlint\n"
    write(project, {".pre-commit-config.yaml": config, "README.md": "# notes\n"})
    installed = _pre_commit("install", cwd=project, env=environment)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    _git("add", "-A", cwd=project, env=environment)
    commit = _commit(project, environment, "docs only")
    assert commit.returncode == 0, commit.stdout + commit.stderr
    assert "(no files to check)Skipped" in commit.stdout + commit.stderr
    write(project, {"buggy.py": BUGGY})
    _git("add", "buggy.py", cwd=project, env=environment)
    blocked = _commit(project, environment, "a bug")
    assert blocked.returncode != 0
    assert "buggy.py:3:9: DEV001" in blocked.stdout + blocked.stderr
    assert _git("log", "--format=%s", cwd=project, env=environment).split() == ["docs", "only"]


def test_both_hooks_take_notebooks(
    hook_repo: tuple[Path, str], project: Path, environment: dict[str, str]
) -> None:
    device = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    notebook = _notebook("import torch\n" + device, "model = torch.nn.Linear(2, 2).cuda()\n")
    write(project, {"explore.ipynb": notebook})
    _git("add", "-A", cwd=project, env=environment)
    repo, rev = hook_repo
    lint = _pre_commit(
        "try-repo", str(repo), "devlint", "--ref", rev, "--all-files", cwd=project, env=environment
    )
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "explore.ipynb:cell 2:1:9: DEV001 " in lint.stdout + lint.stderr
    hook = ("try-repo", str(repo), "devlint-fix", "--ref", rev, "--all-files")
    fixed = _pre_commit(*hook, cwd=project, env=environment)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    cells = json.loads((project / "explore.ipynb").read_text(encoding="utf-8"))["cells"]
    assert cells[1]["source"] == ["model = torch.nn.Linear(2, 2).to(device)\n"]
    _git("add", "-A", cwd=project, env=environment)
    assert _pre_commit(*hook, cwd=project, env=environment).returncode == 0
