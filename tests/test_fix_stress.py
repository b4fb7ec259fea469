"""Fix safety under stress: concurrent runs and a process killed mid-write never corrupt a file."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SOURCE = "import torch\n\nprint(torch.cuda.memory_cached())  # file {index}\n" + "x = 1\n" * 200
FIXED = "import torch\n\nprint(torch.cuda.memory_reserved())  # file {index}\n" + "x = 1\n" * 200
FILES = 40


def _tree(root: Path) -> None:
    (root / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
    for index in range(FILES):
        (root / f"m{index:03d}.py").write_text(SOURCE.format(index=index), encoding="utf-8")


def _fix_process(root: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "devlint.cli", "--fix", "--no-cache", "-q", "."]
    return subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _states(root: Path) -> list[str]:
    """Each file is either untouched or fully fixed; anything else is corruption."""
    states = []
    for index in range(FILES):
        text = (root / f"m{index:03d}.py").read_text(encoding="utf-8")
        if text == SOURCE.format(index=index):
            states.append("untouched")
        elif text == FIXED.format(index=index):
            states.append("fixed")
        else:
            pytest.fail(f"m{index:03d}.py is neither untouched nor fixed:\n{text[:200]}")
    return states


def test_two_fix_runs_at_once_leave_every_file_whole(tmp_path: Path) -> None:
    _tree(tmp_path)
    first, second = _fix_process(tmp_path), _fix_process(tmp_path)
    for process in (first, second):
        _, errors = process.communicate(timeout=300)
        assert b"Traceback" not in errors
    assert set(_states(tmp_path)) == {"fixed"}
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".py")) == [
        "pyproject.toml"
    ]


@pytest.mark.parametrize("seed", range(5))
def test_a_fix_killed_at_a_random_moment_leaves_every_file_whole(tmp_path: Path, seed: int) -> None:
    _tree(tmp_path)
    process = _fix_process(tmp_path)
    time.sleep(random.Random(seed).uniform(0.2, 2.0))
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    _states(tmp_path)  # fails on any partial file
    finished = subprocess.run(
        [sys.executable, "-m", "devlint.cli", "--fix", "--no-cache", "-q", "."],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    assert finished.returncode == 0
    assert set(_states(tmp_path)) == {"fixed"}
