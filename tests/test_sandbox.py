"""Running the user's code safely: timeouts, crashes, limits, and a user tree left untouched.

These scripts need no torch: the sandbox is the same for every profile, and ``cpu-host`` runs the
user's code as it is.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Optional

import pytest

from devlint.runtime.confirm import run_one
from devlint.runtime.outcome import COMPLETED, CRASHED, FAILED, TIMEOUT, Entry, RunOutcome
from devlint.runtime.profiles import CPU_HOST
from devlint.runtime.sandbox import Limits, SandboxError, project_copy

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and limits")


def _project(tmp_path: Path, script: str, name: str = "script.py") -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / name).write_text(textwrap.dedent(script))
    return root


def _run(root: Path, limits: Optional[Limits] = None, name: str = "script.py") -> RunOutcome:
    limits = limits or Limits(timeout=30)
    return run_one(Entry("script", name), CPU_HOST, root, {name: [1, 2, 3]}, limits)


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path.relative_to(root)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_a_script_that_loops_forever_is_killed_by_the_timeout(tmp_path: Path) -> None:
    root = _project(tmp_path, "x = 0\nwhile True:\n    x += 1\n")
    started = time.monotonic()
    outcome = _run(root, Limits(timeout=2))
    assert outcome.status == TIMEOUT
    assert time.monotonic() - started < 20
    assert outcome.reached == {"script.py": [1, 2, 3]}  # the child still reported what ran


def test_a_script_that_ignores_sigterm_is_killed_anyway(tmp_path: Path) -> None:
    root = _project(
        tmp_path, "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: pass\n"
    )
    started = time.monotonic()
    outcome = _run(root, Limits(timeout=1))
    assert outcome.status == TIMEOUT
    assert "timed out after 1 s" in outcome.detail
    assert time.monotonic() - started < 20


def test_a_script_writing_to_the_users_tree_leaves_it_unchanged(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        """
        import os, pathlib, shutil
        here = pathlib.Path(__file__).parent
        (here / "out.txt").write_text("written by the run")
        pathlib.Path("relative.txt").write_text("written by the run")
        with open(__file__, "a") as source:
            source.write("# appended by the run")
        (here / "data.csv").unlink()
        (here / "results").mkdir()
        shutil.rmtree(here / "models")
        """,
    )
    (root / "data.csv").write_text("a,b\n1,2\n")
    (root / "models").mkdir()
    (root / "models" / "weights.bin").write_bytes(b"\x00" * 64)
    before = _snapshot(root)
    outcome = _run(root)
    assert outcome.status == COMPLETED, outcome.detail
    assert _snapshot(root) == before
    assert not (root / "results").exists()


def test_a_crash_is_reported_not_hung_on(tmp_path: Path) -> None:
    root = _project(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGABRT)\n")
    outcome = _run(root)
    assert outcome.status == CRASHED
    assert "SIGABRT" in outcome.detail


def test_the_memory_limit_turns_a_huge_allocation_into_an_error(tmp_path: Path) -> None:
    root = _project(tmp_path, "blob = bytearray(4 * 1024 ** 3)\n")
    outcome = _run(root, Limits(timeout=30, memory_mb=1024))
    assert outcome.status == FAILED
    assert outcome.failures[-1].type == "MemoryError"


def test_the_file_size_limit_stops_a_runaway_write(tmp_path: Path) -> None:
    root = _project(tmp_path, "open('big.bin', 'wb').write(b'x' * (3 * 1024 * 1024))\n")
    outcome = _run(root, Limits(timeout=30, file_size_mb=1))
    assert outcome.status == FAILED
    assert "File too large" in outcome.failures[-1].message


def test_no_core_dumps_and_a_cpu_time_limit(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        """
        import resource
        assert resource.getrlimit(resource.RLIMIT_CORE) == (0, 0)
        assert resource.getrlimit(resource.RLIMIT_CPU)[0] == 50
        """,
    )
    outcome = _run(root, Limits(timeout=10))
    assert outcome.status == COMPLETED, outcome.failures


def test_grandchildren_die_with_the_run(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        """
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        """,
    )
    started = time.monotonic()
    outcome = _run(root)
    assert outcome.status == COMPLETED, outcome.failures
    assert time.monotonic() - started < 20  # the sleeping grandchild did not hold devlint


def test_an_exception_is_reported_with_the_users_frames(tmp_path: Path) -> None:
    root = _project(tmp_path, "def f():\n    raise ValueError('boom')\nf()\n")
    outcome = _run(root)
    assert outcome.status == FAILED
    failure = outcome.failures[-1]
    assert (failure.type, failure.message) == ("ValueError", "boom")
    assert failure.frames == [("script.py", 3), ("script.py", 2)]


def test_a_project_too_large_to_copy_is_refused(tmp_path: Path) -> None:
    root = _project(tmp_path, "pass\n")
    (root / "big.bin").write_bytes(b"\x00" * (2 * 1024 * 1024))
    with pytest.raises(SandboxError, match="MB"), project_copy(root, Limits(max_copy_mb=1)):
        pass


def test_environment_caches_and_vcs_folders_are_not_copied(tmp_path: Path) -> None:
    root = _project(tmp_path, "pass\n")
    for folder in (".git", "__pycache__", "node_modules", "env", "venv-3.11"):
        (root / folder).mkdir()
        (root / folder / "file").write_text("x")
    (root / "venv-3.11" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "env" / "__init__.py").write_text("")  # a package named env is the project's
    with project_copy(root, Limits()) as folder:
        copied = {path.name for path in (folder / "copy").iterdir()}
    assert copied == {"pyproject.toml", "script.py", "env"}
    assert os.path.isdir(root / ".git")
