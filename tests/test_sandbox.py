"""Running the user's code safely: timeouts, crashes, limits, and a user tree left untouched.

These scripts need no torch: the sandbox is the same for every profile, and ``cpu-host`` runs the
user's code as it is.

The hostile cases (a loop without end, endless allocation, a fork bomb, writes outside the run's
folder, signals to devlint) each end in the verdict ``error`` with the reason, well within the
run's limits, with devlint alive and the user's tree unchanged byte for byte. The cases through
``ctypes`` test the OS-level backstop and run where the system has it.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest

from devlint.diagnostics import Finding, Position
from devlint.runtime import confine, processes, sandbox
from devlint.runtime.child import confine_self
from devlint.runtime.confirm import run_one
from devlint.runtime.guard import Policy, Refused
from devlint.runtime.outcome import (
    COMPLETED,
    CRASHED,
    FAILED,
    REFUSED,
    TIMEOUT,
    Entry,
    Guard,
    Job,
    RunOutcome,
)
from devlint.runtime.profiles import CPU_HOST
from devlint.runtime.sandbox import (
    Limits,
    SandboxError,
    memory_limit,
    project_copy,
    resource_limits,
)
from devlint.runtime.verdicts import ERROR, NOT_REACHED, Verdict, decide
from tests.helpers import run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and limits")


def _run_prefix(tmp_path: Path) -> str:
    """The name this test's run folders start with (short: socket paths live below them)."""
    return f"devlint-confirm-{hashlib.sha256(str(tmp_path).encode()).hexdigest()[:8]}-"


@pytest.fixture(autouse=True)
def _runs_named_for_the_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's run folders carry a mark of the test: what is left of a run is its own."""
    mkdtemp = tempfile.mkdtemp

    def marked(
        suffix: Optional[str] = None, prefix: Optional[str] = None, dir: Optional[str] = None
    ) -> str:
        return mkdtemp(suffix, _run_prefix(tmp_path), dir)

    monkeypatch.setattr(sandbox.tempfile, "mkdtemp", marked)


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


@pytest.mark.parametrize("session", ["the run's session", "a session of their own"])
def test_grandchildren_die_with_the_run(tmp_path: Path, session: str) -> None:
    own = session == "a session of their own"
    root = _project(
        tmp_path,
        f"""
        import subprocess, sys
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session={own}
        )
        """,
    )
    started = time.monotonic()
    outcome = _run(root)
    assert outcome.status == COMPLETED, outcome.failures
    assert time.monotonic() - started < 20  # the sleeping grandchild did not hold devlint
    _no_leftovers(tmp_path)  # nor did it outlive the run


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


# -- hostile code --------------------------------------------------------------------------------

HOSTILE = Limits(timeout=20, memory_mb=512, max_processes=4)
WITHIN_LIMITS = 60  # seconds: generous, machines are shared; the runs take a few


def _tree_hash(root: Path) -> str:
    """Every entry under root: its path, kind, mode and bytes (or link target)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest.update(f"{path.relative_to(root)}\0{info.st_mode}\0".encode())
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _judged(root: Path, outcome: RunOutcome, name: str = "script.py") -> Verdict:
    """The verdict a finding on the script's first line gets from this run."""
    start = Position(1, 1)
    finding = Finding(str(root / name), "DEV001", "unguarded-cuda", "demo", start, start, 1)
    verdict = decide([finding], [outcome], root)[0]
    assert verdict is not None
    return verdict


def _leftovers(tmp_path: Path) -> list[int]:
    """Processes still working in one of this test's run folders, which devlint has removed."""
    mark = os.sep + _run_prefix(tmp_path)
    found = []
    for pid in processes.pids() or ():
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if mark in cwd and cwd.endswith(" (deleted)"):
            found.append(pid)
    return found


def _no_leftovers(tmp_path: Path) -> None:
    deadline = time.monotonic() + 10  # processes killed at the end may take a moment to go
    while _leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _leftovers(tmp_path)


@pytest.fixture
def sigterm_watch() -> Iterator[list[int]]:
    """Signals that reached this process (devlint's, in run_one) while the test ran."""
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda number, frame: received.append(number))
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_hostile(
    root: Path, limits: Limits = HOSTILE, extra: Optional[list[Path]] = None
) -> tuple[RunOutcome, Verdict]:
    """Run the script; check the tree and other paths are unchanged and the time bounded."""
    watched = [root, *(extra or [])]
    before = [_tree_hash(path) for path in watched]
    started = time.monotonic()
    outcome = _run(root, limits)
    assert time.monotonic() - started < WITHIN_LIMITS
    assert [_tree_hash(path) for path in watched] == before
    _no_leftovers(root.parent)
    return outcome, _judged(root, outcome)


def test_hostile_a_loop_without_end_is_an_error_at_the_timeout(tmp_path: Path) -> None:
    root = _project(tmp_path, "x = 0\nwhile True:\n    x += 1\n")
    outcome, verdict = _run_hostile(root, Limits(timeout=2, memory_mb=512, max_processes=4))
    assert outcome.status == TIMEOUT
    assert verdict.status == ERROR
    assert "timed out after 2 s" in verdict.detail


def test_hostile_endless_allocation_is_an_error_at_the_memory_limit(tmp_path: Path) -> None:
    root = _project(
        tmp_path, "blobs = []\nwhile True:\n    blobs.append(bytearray(64 * 1024 * 1024))\n"
    )
    outcome, verdict = _run_hostile(root)
    assert outcome.status == FAILED
    assert verdict.status == ERROR
    assert "MemoryError" in verdict.detail


FORK_BOMBS = {
    "fork": "import os\nwhile True:\n    os.fork()\n",
    "fork and leave the session": "import os\nwhile True:\n    os.fork() or os.setsid()\n",
}


@pytest.mark.parametrize("bomb", sorted(FORK_BOMBS))
def test_hostile_a_fork_bomb_is_refused(tmp_path: Path, bomb: str) -> None:
    root = _project(tmp_path, FORK_BOMBS[bomb])
    outcome, verdict = _run_hostile(root)
    assert outcome.status == REFUSED
    assert verdict.status == ERROR
    assert "the code tried to start more than 4 processes at once" in verdict.detail


def test_hostile_a_fork_bomb_that_catches_the_refusal_is_still_refused(tmp_path: Path) -> None:
    script = """
        import multiprocessing, subprocess, sys, time
        for _ in range(20):
            try:
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            except OSError:
                pass
        time.sleep(60)
    """
    started = time.monotonic()
    outcome, verdict = _run_hostile(_project(tmp_path, script))
    assert outcome.status == REFUSED
    assert "more than 4 processes" in verdict.detail
    assert time.monotonic() - started < HOSTILE.timeout  # stopped at once, not at the timeout


@pytest.fixture(scope="session")
def backstop_for_processes() -> str:
    """Why the OS cannot cap a run's processes here ("" where it can); asked once."""
    if not sys.platform.startswith("linux"):
        return "pids cgroups and RLIMIT_NPROC as tested here are Linux's"
    if os.geteuid() != 0:
        if confine.nproc_limit(8) is None:
            return "RLIMIT_NPROC is not set inside a pid namespace"
        return ""
    with confine.pids_group(8) as group:
        if group is None:
            return "root ignores RLIMIT_NPROC, and no pids cgroup can be created here"
    return ""


def test_hostile_a_fork_bomb_through_ctypes_meets_the_os_limit(
    tmp_path: Path, backstop_for_processes: str
) -> None:
    if backstop_for_processes:
        pytest.skip(backstop_for_processes)
    script = """
        import ctypes, os, time
        libc = ctypes.CDLL(None)
        started = 0
        for _ in range(3000):
            pid = libc.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            started += pid > 0
        raise RuntimeError(f"started {started} processes")
    """
    limits = Limits(timeout=20, memory_mb=512, max_processes=2)
    outcome, verdict = _run_hostile(_project(tmp_path, script), limits)
    assert verdict.status == ERROR
    started = int(outcome.failures[-1].message.split()[1])
    assert 0 < started < limits.task_limit()
    if os.geteuid() == 0:  # the cgroup tells which limit was reached
        assert outcome.status == REFUSED
        assert f"its limit of {limits.task_limit()} processes and threads" in verdict.detail


WRITES = {
    "open": "open({target!r}, 'w').write('x')",
    "append": "open({target!r}, 'a').write('x')",
    "pathlib": "import pathlib; pathlib.Path({target!r}).write_bytes(b'x')",
    "os.open": "import os; os.close(os.open({target!r}, os.O_WRONLY | os.O_CREAT))",
    "remove": "import os; os.remove({target!r})",
    "rename": "import os; os.rename({target!r}, {target!r} + '.moved')",
    "mkdir": "import os; os.mkdir({target!r} + '.d')",
    "rmtree": "import shutil; shutil.rmtree({folder!r})",
    "chmod": "import os; os.chmod({target!r}, 0o777)",
    "truncate": "import os; os.truncate({target!r}, 0)",
}


@pytest.mark.parametrize("where", ["the user's project", "a folder outside"])
@pytest.mark.parametrize("operation", sorted(WRITES))
def test_hostile_a_write_outside_the_runs_folder_is_refused(
    tmp_path: Path, operation: str, where: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.csv").write_text("a,b\n1,2\n")
    root = _project(tmp_path, "")
    (root / "data.csv").write_text("a,b\n1,2\n")
    folder = root if where == "the user's project" else outside
    target = str(folder / "data.csv")
    (root / "script.py").write_text(
        WRITES[operation].format(target=target, folder=str(folder)) + "\n"
    )
    outcome, verdict = _run_hostile(root, extra=[outside])
    assert outcome.status == REFUSED
    assert verdict.status == ERROR
    assert "the code tried to write outside its folder: " in verdict.detail
    assert str(folder) in verdict.detail


def test_hostile_a_write_through_a_symlink_in_the_project_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = _project(tmp_path, "open('data/new.txt', 'w').write('x')\n")
    (root / "data").symlink_to(outside)  # copied as a link: it still points outside
    outcome, verdict = _run_hostile(root, extra=[outside])
    assert outcome.status == REFUSED
    assert f"write outside its folder: {os.path.realpath(outside)}" in verdict.detail
    assert not (outside / "new.txt").exists()


@pytest.mark.skipif(
    confine.landlock_abi() < 1 or confine.nvidia_driver(),
    reason="no Landlock (or the NVIDIA driver, which leaves it out): ctypes writes are not held",
)
def test_hostile_a_write_through_ctypes_meets_landlock(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "written.txt"
    script = f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.open({str(target).encode()!r}, os.O_WRONLY | os.O_CREAT, 0o644)
        raise RuntimeError(f"open returned {{fd}}, errno {{ctypes.get_errno()}}")
    """
    _, verdict = _run_hostile(_project(tmp_path, script), extra=[outside])
    assert verdict.status == NOT_REACHED  # the code's own exception stopped it
    assert "open returned -1, errno 13" in verdict.detail  # EACCES
    assert not target.exists()


def test_a_run_may_write_in_its_folder_and_temp_dir_and_signal_its_own_processes(
    tmp_path: Path,
) -> None:
    script = """
        import multiprocessing, os, signal, subprocess, sys, tempfile, time
        os.makedirs("checkpoints", exist_ok=True)
        with open("checkpoints/last.bin", "wb") as file:
            file.write(b"weights")
        os.replace("checkpoints/last.bin", "checkpoints/best.bin")
        with tempfile.NamedTemporaryFile("w", suffix=".log") as log:
            log.write("epoch 1")
        os.makedirs(os.path.expanduser("~"), exist_ok=True)  # exists: nothing is written
        open(os.devnull, "w").write("quiet")
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        os.kill(sleeper.pid, signal.SIGTERM)
        sleeper.wait()
        with multiprocessing.Pool(2) as pool:
            assert pool.map(abs, [-1, -2, -3]) == [1, 2, 3]
        os.kill(os.getpid(), 0)
    """
    root = _project(tmp_path, script)
    # HOSTILE's limits, with time for a process pool to start on a busy shared machine
    outcome = _run(root, Limits(timeout=WITHIN_LIMITS, memory_mb=512, max_processes=4))
    assert outcome.status == COMPLETED, (outcome.detail, outcome.failures)


def test_a_training_loop_with_dataloader_workers_still_runs(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        data = TensorDataset(torch.randn(64, 3), torch.randn(64, 1))
        model = torch.nn.Linear(3, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for x, y in DataLoader(data, batch_size=16, num_workers=2):
                optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
        torch.save(model.state_dict(), "model.pt")
    """
    root = _project(tmp_path, script)
    outcome = _run(root, Limits(timeout=120))
    assert outcome.status == COMPLETED, (outcome.detail, outcome.failures)


def test_hostile_raising_a_hard_limit_is_refused(tmp_path: Path) -> None:
    script = f"""
        import resource
        resource.setrlimit(resource.{memory_limit()}, (resource.RLIM_INFINITY,) * 2)
        blob = bytearray(4 * 1024 ** 3)
    """
    outcome, verdict = _run_hostile(_project(tmp_path, script))
    assert outcome.status == REFUSED
    assert f"the code tried to raise its resource limit {memory_limit()}" in verdict.detail


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0, reason="root's capabilities"
)
def test_a_run_started_by_root_has_no_capabilities(tmp_path: Path) -> None:
    script = f"""
        import ctypes, resource
        status = dict(line.split(":\\t") for line in open("/proc/self/status").read().splitlines())
        assert int(status["CapEff"], 16) == int(status["CapBnd"], 16) == 0, status
        libc = ctypes.CDLL(None, use_errno=True)
        limit = (ctypes.c_ulong * 2)(2 ** 40, 2 ** 40)
        assert libc.setrlimit(resource.{memory_limit()}, limit) == -1 and ctypes.get_errno() == 1
    """
    outcome = _run(_project(tmp_path, script), HOSTILE)
    assert outcome.status == COMPLETED, (outcome.detail, outcome.failures)


SIGNALS = {
    "kill SIGTERM": "os.kill(os.getppid(), signal.SIGTERM)",
    "kill SIGKILL": "os.kill(os.getppid(), signal.SIGKILL)",
    # Refused whatever the signal (0 excepted): a signal every process ignores by default keeps
    # the machine safe should the guard ever let these through.
    "killpg": "os.killpg(os.getpgid(os.getppid()), signal.SIGWINCH)",
    "every process": "os.kill(-1, signal.SIGURG)",
}


@pytest.mark.parametrize("how", sorted(SIGNALS))
def test_hostile_signalling_devlint_is_refused(
    tmp_path: Path, how: str, sigterm_watch: list[int]
) -> None:
    # run_one runs in this process: devlint's parent process is pytest itself.
    root = _project(tmp_path, f"import os, signal, time\n{SIGNALS[how]}\ntime.sleep(60)\n")
    outcome, verdict = _run_hostile(root)
    assert outcome.status == REFUSED
    assert verdict.status == ERROR
    expected = "every process" if how == "every process" else "its parent"
    assert f"the code tried to signal {expected}" in verdict.detail
    assert sigterm_watch == []  # and, for SIGKILL, this test is still running


@pytest.mark.skipif(
    confine.landlock_abi() < 6 or confine.nvidia_driver(),
    reason="signals through ctypes are held by Landlock ABI 6 (left out with the NVIDIA driver)",
)
def test_hostile_signalling_devlint_through_ctypes_meets_landlock(
    tmp_path: Path, sigterm_watch: list[int]
) -> None:
    script = """
        import ctypes, os, signal
        libc = ctypes.CDLL(None, use_errno=True)
        for number in (signal.SIGTERM, signal.SIGKILL):
            assert libc.kill(os.getppid(), number) == -1 and ctypes.get_errno() == 1  # EPERM
        raise RuntimeError("devlint was not reached")
    """
    _, verdict = _run_hostile(_project(tmp_path, script))
    assert verdict.status == NOT_REACHED  # the code's own exception stopped it
    assert "devlint was not reached" in verdict.detail
    assert sigterm_watch == []


def test_hostile_code_through_the_command_line_leaves_devlint_reporting(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        """
        import os, signal
        os.kill(os.getppid(), signal.SIGKILL)
        import torch
        x = torch.ones(1).cuda()
        """,
    )
    before = _tree_hash(root)
    completed = run_cli(
        "confirm", "--format", "json", "-q", "--timeout", "20", "script.py", cwd=root, timeout=120
    )
    assert completed.returncode == 0, completed.stderr  # neither killed nor crashed
    report = json.loads(completed.stdout)
    [finding] = [item for item in report["findings"] if item["code"] == "DEV001"]
    assert finding["verdict"]["status"] == ERROR
    assert "the code tried to signal its parent, devlint" in finding["verdict"]["detail"]
    assert [run["status"] for run in report["runs"]] == [REFUSED]
    assert _tree_hash(root) == before


# -- the guard's own checks ----------------------------------------------------------------------


def test_the_guard_reads_shutil_rmtree_as_python_3_10_raises_it(tmp_path: Path) -> None:
    policy = Policy([str(tmp_path)], 8)
    outside = str(tmp_path.parent / "elsewhere")
    for args in ((outside,), (outside, None)):  # before 3.11 and since
        with pytest.raises(Refused, match="write outside its folder"):
            policy.hook("shutil.rmtree", args)
    policy.hook("shutil.rmtree", (str(tmp_path / "inside"),))


def test_a_check_that_fails_lets_the_operation_through(tmp_path: Path) -> None:
    policy = Policy([str(tmp_path)], 8)
    for event, args in [("os.remove", ()), ("open", (None,)), ("os.kill", ("x", "y", "z"))]:
        policy.hook(event, args)  # malformed: no IndexError, TypeError, ... reaches the code
    assert policy.refusals == []


def test_without_proc_the_guard_leaves_processes_to_rlimit_nproc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = Policy([str(tmp_path)], 1)  # the first process alone: no other may start
    policy.root_pid = os.getpid()
    with pytest.raises(Refused, match="more than 1 processes"):
        policy.hook("os.fork", ())
    monkeypatch.setattr(processes, "pids", lambda: None)  # macOS: no /proc
    for _ in range(50):
        policy.hook("os.fork", ())  # not counted, so never refused (nor started)


def test_finished_processes_do_not_count_toward_the_cap(tmp_path: Path) -> None:
    script = """
        import subprocess
        for _ in range(40):
            subprocess.Popen(["true"]).wait()
        for _ in range(40):  # the backgrounded `true` is orphaned; the first process adopts it
            subprocess.Popen("true & true", shell=True).wait()
    """
    outcome = _run(_project(tmp_path, script), HOSTILE)
    assert outcome.status == COMPLETED, (outcome.detail, outcome.failures)


# -- caught writes, caches -----------------------------------------------------------------------

CAUGHT_WRITES = {
    "os.makedirs": """
        import os
        try:
            os.makedirs(os.path.expanduser("~/.cache/devlint-test/x"), exist_ok=True)
        except OSError:
            pass
    """,
    "Path.mkdir": """
        from pathlib import Path
        try:
            (Path.home() / ".cache" / "torch" / "devlint-test").mkdir(parents=True, exist_ok=True)
        except OSError:
            pass
    """,
}


def _notes_of_the_code(outcome: RunOutcome) -> list[str]:
    """The run's notes on what the code did, without the machine's (a GPU machine runs
    without Landlock and says so)."""
    return [note for note in outcome.notes if note != confine.NO_LANDLOCK_WITH_CUDA]


@pytest.mark.parametrize("how", sorted(CAUGHT_WRITES))
def test_a_write_refusal_the_code_catches_is_a_note(tmp_path: Path, how: str) -> None:
    outcome = _run(_project(tmp_path, CAUGHT_WRITES[how]), HOSTILE)
    assert outcome.status == COMPLETED, (outcome.detail, outcome.failures)
    assert _judged(tmp_path / "project", outcome).status != ERROR
    [note] = _notes_of_the_code(outcome)
    assert note.startswith("a write was refused (nothing was written): ")
    assert os.path.expanduser("~") in note


def test_a_loop_of_caught_write_refusals_keeps_the_log_and_notes_short(tmp_path: Path) -> None:
    script = """
        import os
        for number in range(2000):
            try:
                open(os.path.expanduser(f"~/devlint-test-{number}"), "w")
            except OSError:
                pass
    """
    outcome = _run(_project(tmp_path, script), HOSTILE)
    assert outcome.status == COMPLETED, (outcome.detail, outcome.failures)
    assert 1 <= len(_notes_of_the_code(outcome)) <= 20


def test_caches_go_to_the_runs_scratch_folder_and_weights_stay_found(tmp_path: Path) -> None:
    script = """
        import os
        cache = os.environ["XDG_CACHE_HOME"]
        os.makedirs(os.path.join(cache, "some-library"))
        open(os.path.join(cache, "some-library", "index"), "w").write("x")
        home = os.path.expanduser("~")
        assert os.environ["TORCH_HOME"].startswith(home), os.environ["TORCH_HOME"]
        assert os.environ["HF_HOME"].startswith(home), os.environ["HF_HOME"]
    """
    outcome = _run(_project(tmp_path, script), HOSTILE)
    assert outcome.status == COMPLETED, (outcome.detail, outcome.failures)
    assert _notes_of_the_code(outcome) == []


# -- the OS-level backstop -----------------------------------------------------------------------


def test_landlocks_structures_have_the_kernels_sizes() -> None:
    assert ctypes.sizeof(confine._PathBeneathAttr) == 12  # packed
    assert ctypes.sizeof(confine._RulesetAttr) == 24


def _devlint_groups() -> list[Path]:
    found = confine._own_pids_cgroup()
    return sorted(found[0].glob(f"devlint-{os.getpid()}-*")) if found else []


def test_no_cgroup_is_left_after_a_run(tmp_path: Path) -> None:
    outcome = _run(_project(tmp_path, "import os\nos.fork() or os.setsid()\n"), HOSTILE)
    assert outcome.status == COMPLETED, (outcome.detail, outcome.failures)
    assert _devlint_groups() == []


def _fake_cgroup(folder: Path, delegated: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """devlint's own pids cgroup, as cgroup v2 shows it, in a plain folder."""
    folder.mkdir()
    (folder / "cgroup.subtree_control").write_text(delegated)
    monkeypatch.setattr(confine, "_own_pids_cgroup", lambda: (folder, True))
    monkeypatch.setattr(confine.os, "geteuid", lambda: 0)


def test_the_pids_cgroup_is_never_made_outside_devlints_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "own"
    _fake_cgroup(own, "cpu memory\n", monkeypatch)  # pids not delegated: no group, no fallback
    with confine.pids_group(8) as group:
        assert group is None
    assert sorted(own.iterdir()) == [own / "cgroup.subtree_control"]


def _ended_pid() -> int:
    """The pid of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_pids_cgroup_lies_below_devlints_own_and_stale_ones_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "own"
    _fake_cgroup(own, "cpu pids\n", monkeypatch)
    gone = _ended_pid()
    (own / f"devlint-{gone}-0123abcd").mkdir()  # left by a devlint that was killed
    (own / f"devlint-{os.getpid()}-4567ef01").mkdir()  # a run of this devlint, going on
    monkeypatch.setattr(confine.PidsGroup, "remove", lambda self: True)  # plain files inside
    with confine.pids_group(8) as group:
        assert group is not None and group.folder.parent == own
        assert (group.folder / "pids.max").read_text() == "8"
    names = sorted(path.name for path in own.iterdir())
    assert f"devlint-{gone}-0123abcd" not in names
    assert f"devlint-{os.getpid()}-4567ef01" in names


def test_a_cgroup_that_stays_behind_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    own = tmp_path / "own"
    _fake_cgroup(own, "pids\n", monkeypatch)
    monkeypatch.setattr(confine.PidsGroup, "remove", lambda self: False)
    with confine.pids_group(8) as group:
        assert group is not None
    assert f"could not remove the cgroup {group.folder}" in capsys.readouterr().err


@pytest.mark.parametrize("written", ["", '{"entry": {"kind": "script"', "[]", '{"status": 1}'])
def test_a_report_cut_short_or_malformed_reads_as_none(tmp_path: Path, written: str) -> None:
    # The parent stops a refused run at once, perhaps while the child writes its report.
    result = tmp_path / "result.json"
    result.write_text(written, encoding="utf-8")
    assert RunOutcome.read(result) is None
    assert RunOutcome.read(tmp_path / "absent.json") is None


def test_a_report_is_written_whole(tmp_path: Path) -> None:
    result = tmp_path / "result.json"
    outcome = RunOutcome(Entry("script", "train.py"), CPU_HOST, COMPLETED, notes=["a note"])
    outcome.write(result)
    assert RunOutcome.read(result) == outcome
    assert [path.name for path in tmp_path.iterdir()] == ["result.json"]


@pytest.mark.parametrize("driver", [True, False])
def test_the_memory_limit_leaves_the_address_space_to_the_cuda_driver_on_linux(
    monkeypatch: pytest.MonkeyPatch, driver: bool
) -> None:
    monkeypatch.setattr(confine, "nvidia_driver", lambda: driver)
    values = resource_limits(Limits(memory_mb=64))
    linux_gpu = driver and sys.platform.startswith("linux")
    held = "RLIMIT_DATA" if linux_gpu else "RLIMIT_AS"
    assert values[held] == 64 * 1024 * 1024
    assert set(values) & {"RLIMIT_DATA", "RLIMIT_AS"} == {held}


@pytest.mark.parametrize("driver", [True, False])
def test_landlock_is_left_out_where_the_nvidia_driver_is(
    monkeypatch: pytest.MonkeyPatch, driver: bool
) -> None:
    restricted: list[list[str]] = []
    monkeypatch.setattr(confine, "nvidia_driver", lambda: driver)
    monkeypatch.setattr(confine, "landlock_abi", lambda: 6)
    monkeypatch.setattr(confine, "restrict", lambda writable: restricted.append(writable) or "")
    monkeypatch.setattr(confine, "become_subreaper", lambda: None)
    monkeypatch.setattr(confine, "drop_capabilities", lambda: "")
    monkeypatch.setattr(Policy, "install", lambda self: None)
    job = Job(Entry("script", "train.py"), CPU_HOST, "/run", "/run", {}, "/run/result")
    job.guard = Guard(("/run",), 8)
    _, notes = confine_self(job)
    assert restricted == ([] if driver else [["/run"]])
    assert (confine.NO_LANDLOCK_WITH_CUDA in notes) is driver
