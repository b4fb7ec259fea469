"""The progress bar: drawn on a terminal for long runs, silent otherwise."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.api import lint_paths
from devlint.config import ConfigResolver, RuleSelection
from devlint.progress import MIN_FILES, ProgressBar, progress_bar
from tests.helpers import write


def _many_files(root: Path, count: int) -> None:
    write(root, {f"pkg/module_{index:04}.py": f"x = {index}\n" for index in range(count)})


def test_silent_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    with progress_bar(stream=stream) as progress:
        assert progress is None
    assert stream.getvalue() == ""


def test_renders_when_forced_and_erases_itself(tmp_path: Path) -> None:
    _many_files(tmp_path, MIN_FILES + 50)
    stream = io.StringIO()
    with progress_bar(stream=stream, force=True) as progress:
        summary = lint_paths([tmp_path], ConfigResolver(RuleSelection()), False, progress)
    assert summary.files_checked == MIN_FILES + 50
    drawn = stream.getvalue()
    assert f"devlint [{'#' * 30}] {MIN_FILES + 50}/{MIN_FILES + 50} files" in drawn
    assert f"] 1/{MIN_FILES + 50} files" in drawn
    assert drawn.endswith("\r")  # the last write blanks the line and returns to its start
    # Redrawn once per whole percent (0 to 100), not once per file.
    assert drawn.count("\rdevlint [") == 101


def test_disabled_draws_nothing_even_when_forced() -> None:
    stream = io.StringIO()
    with progress_bar(enabled=False, stream=stream, force=True) as progress:
        assert progress is None
    assert stream.getvalue() == ""


def test_short_runs_draw_nothing() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, min_files=10)
    for done in range(1, 10):
        bar(done, 9)
    bar.close()
    assert stream.getvalue() == ""


def _stderr_on_a_terminal(*args: str, cwd: Path) -> str:
    """Run the CLI with its standard error on a pseudo-terminal, as in an interactive shell."""
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "devlint.cli", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=300,
        )
        assert completed.returncode == 0, completed.stdout
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode()
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_cli_draws_on_a_terminal_unless_told_not_to(tmp_path: Path) -> None:
    _many_files(tmp_path, MIN_FILES + 10)
    drawn = _stderr_on_a_terminal("pkg", cwd=tmp_path)
    assert f"{MIN_FILES + 10}/{MIN_FILES + 10} files" in drawn
    assert _stderr_on_a_terminal("--no-progress", "pkg", cwd=tmp_path) == ""
    assert _stderr_on_a_terminal("--quiet", "pkg", cwd=tmp_path) == ""


def test_cli_is_silent_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    _many_files(tmp_path, MIN_FILES + 10)
    completed = subprocess.run(
        [sys.executable, "-m", "devlint.cli", "pkg"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0
    assert completed.stderr == ""
    assert f"({MIN_FILES + 10} files checked)" in completed.stdout
