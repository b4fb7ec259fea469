"""Running the user's code safely: a copy of the project, a child process, limits, a deadline.

Each (entry point, profile) runs in its own process, in its own temporary copy of the project,
so that nothing in the user's tree changes and no run sees another's files. The child starts in
a new session (its own process group), with limits on address space, CPU time and file size and
no core dumps; at the deadline the whole group gets SIGTERM (the child then reports what it
reached), then SIGKILL, and so do the processes that left the group (the child is their
subreaper; as root, the run's pids cgroup holds them all). Output goes to files, not pipes, so a
grandchild holding a pipe open cannot hang devlint.

The code may write only in the run's folder, signal only its own processes, and keep at most
``max_processes`` processes alive: an audit hook in the child refuses the rest (``guard``), and
Landlock, a pids cgroup or RLIMIT_NPROC hold code that bypasses Python (``confine``). A refusal
ends the run as ``refused``, with the reason.

This module imports no torch; the child does.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from devlint.runtime import confine
from devlint.runtime.guard import kill_descendants
from devlint.runtime.outcome import CRASHED, REFUSED, TIMEOUT, Job, RunOutcome
from devlint.runtime.profiles import CPU_HOST

try:
    import resource
except ImportError:  # Windows: no POSIX limits; the timeout still applies
    resource = None  # type: ignore[assignment]

# Never copied: version control, tool environments and caches, and any folder holding a
# `pyvenv.cfg` (a virtual environment, whatever its name: `env/` may also be a package).
SKIPPED_DIRS = frozenset(
    ".git .hg .svn .tox .nox node_modules __pycache__ .mypy_cache .pytest_cache .ruff_cache "
    ".ipynb_checkpoints".split()
)
_GRACE_SECONDS = 3.0
_TAIL = 2000  # characters of the child's stderr kept in a crash report


@dataclass(frozen=True)
class Limits:
    timeout: float = 120.0  # wall-clock seconds per run
    memory_mb: int = 8192  # address space
    cpu_seconds: Optional[int] = None  # default: 4 CPU-seconds per wall-clock second
    file_size_mb: int = 1024  # largest file the run may write
    max_copy_mb: int = 2048  # largest project devlint agrees to copy
    max_processes: int = 32  # processes alive in a run at once (DataLoader workers, ...)

    def cpu_limit(self) -> int:
        return self.cpu_seconds or int(self.timeout * 4) + 10

    def task_limit(self) -> int:
        """Processes and threads, for the OS-level limits: each process may hold a thread per
        core (PyTorch's pools) and a few more."""
        return self.max_processes * ((os.cpu_count() or 1) + 16)


class SandboxError(Exception):
    """The run could not be set up (the project is too large to copy, ...)."""


def _ignored(folder: str, names: list[str]) -> set[str]:
    return {
        name
        for name in names
        if name in SKIPPED_DIRS
        or name.endswith(".egg-info")
        or os.path.isfile(os.path.join(folder, name, "pyvenv.cfg"))
    }


def project_size(root: Path) -> int:
    total = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if name not in _ignored(folder, dirs)]
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                total += os.path.getsize(path)
    return total


def copy_project(root: Path, destination: Path) -> None:
    """A full copy (no hard links: a write through one would reach the user's file)."""
    shutil.copytree(root, destination, symlinks=True, ignore=_ignored)


def resource_limits(limits: Limits) -> dict[str, int]:
    """The child sets these on itself before it runs anything of the user's (not through
    ``preexec_fn``, which can deadlock when devlint runs several jobs from threads)."""
    megabyte = 1024 * 1024
    values = {
        "RLIMIT_AS": limits.memory_mb * megabyte,
        "RLIMIT_CPU": limits.cpu_limit(),
        "RLIMIT_FSIZE": limits.file_size_mb * megabyte,
        "RLIMIT_CORE": 0,
    }
    nproc = confine.nproc_limit(limits.task_limit())
    if nproc is not None:
        values["RLIMIT_NPROC"] = nproc
    return values


def apply_limits(values: dict[str, int]) -> None:
    if resource is None:
        return
    for name, value in values.items():
        kind = getattr(resource, name, None)
        if kind is None:
            continue
        # A hard limit below ours, or a platform without this limit: keep what is there.
        with suppress(ValueError, OSError):
            resource.setrlimit(kind, (value, value))


def _kill_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _bootstrap() -> str:
    """Import devlint from where this process found it, then forget that folder: the user's
    code must see its own sys.path."""
    parent = str(Path(__file__).resolve().parents[2])
    return (
        f"import sys; sys.path.insert(0, {parent!r}); "
        "from devlint.runtime.child import main; "
        f"sys.path.remove({parent!r}) if {parent!r} in sys.path else None; "
        "main(sys.argv[1])"
    )


def child_environment(profile: str, scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        MPLBACKEND="Agg",  # plt.show() would wait for a window
        TMPDIR=str(scratch),
        # Caches that would live in the home folder, outside the run's folder:
        MPLCONFIGDIR=str(scratch / "matplotlib"),
        TRITON_CACHE_DIR=str(scratch / "triton"),
        CUDA_CACHE_PATH=str(scratch / "nv"),
        TORCH_EXTENSIONS_DIR=str(scratch / "torch_extensions"),
    )
    env.pop("PYTHONSTARTUP", None)
    if profile == CPU_HOST:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a GPU machine plays one without a GPU
    return env


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


_SIGNAL_HINTS = {
    "SIGKILL": "killed: out of memory, or the CPU-time limit",
    "SIGXCPU": "the CPU-time limit was reached",
    "SIGXFSZ": "the file-size limit was reached",
    "SIGABRT": "aborted",
    "SIGSEGV": "segmentation fault",
}


def _crash_detail(returncode: int, stderr: str) -> str:
    if returncode < 0:
        name = _signal_name(returncode)
        reason = f"{_SIGNAL_HINTS.get(name, 'killed')} ({name})"
    else:
        reason = f"the process exited with status {returncode} without a report"
    tail = stderr.strip()[-_TAIL:]
    return f"{reason}\n{tail}" if tail else reason


def _wait(process: subprocess.Popen[bytes], limits: Limits) -> bool:
    """Wait for the child; at the deadline SIGTERM the group, then SIGKILL. True: timed out."""
    try:
        process.wait(timeout=limits.timeout)
        return False
    except subprocess.TimeoutExpired:
        _kill_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        kill_descendants(process.pid)  # while the child still holds them (their subreaper)
        _kill_group(process, signal.SIGKILL)
        process.wait()
    return True


def run_job(job: Job, workdir: Path, limits: Limits) -> RunOutcome:
    """Run one prepared job in a child process and read back its outcome."""
    job_file, result, refusals = workdir / "job.json", Path(job.result), workdir / "refusals"
    group = confine.PidsGroup.create(limits.task_limit())
    job.limits = resource_limits(limits)
    job.guard = {
        "writable": [os.path.realpath(workdir)],
        "max_processes": limits.max_processes,
        "log": str(refusals),
        "cgroup": group.procs if group is not None else None,
    }
    job.write(job_file)
    scratch = workdir / "tmp"
    scratch.mkdir(exist_ok=True)
    started = time.perf_counter()
    try:
        with open(workdir / "stdout", "wb") as out, open(workdir / "stderr", "wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-c", _bootstrap(), str(job_file)],
                cwd=job.cwd,
                env=child_environment(job.profile, scratch),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            timed_out = _wait(process, limits)
        _kill_group(process, signal.SIGKILL)  # stray grandchildren (DataLoader workers, ...)
        limit_reached = group is not None and group.limit_reached()
    finally:
        if group is not None:  # also the processes that left the session
            group.kill()
            group.remove()
    seconds = round(time.perf_counter() - started, 3)
    stderr = (workdir / "stderr").read_text(encoding="utf-8", errors="replace")
    if result.is_file():
        outcome = RunOutcome.read(result)
        if timed_out:
            outcome.status, outcome.detail = TIMEOUT, f"timed out after {limits.timeout:g} s"
    elif timed_out:
        outcome = RunOutcome(
            job.entry, job.profile, TIMEOUT, f"timed out after {limits.timeout:g} s"
        )
    else:
        outcome = RunOutcome(
            job.entry, job.profile, CRASHED, _crash_detail(process.returncode, stderr)
        )
    refused = _first_refusal(refusals)
    if refused:
        outcome.status, outcome.detail = REFUSED, refused
    elif limit_reached:
        outcome.status = REFUSED
        outcome.detail = (
            f"the code reached its limit of {limits.task_limit()} processes and threads "
            f"(a fork bomb?)"
        )
    outcome.seconds = seconds
    return outcome


def _first_refusal(log: Path) -> str:
    """The first thing the audit hook refused, in any process of the run."""
    try:
        with open(log, encoding="utf-8", errors="replace") as lines:
            return lines.readline(_TAIL).strip()
    except OSError:
        return ""


@contextmanager
def project_copy(root: Path, limits: Limits) -> Iterator[Path]:
    """A temporary folder holding ``copy/`` (the project) and room for a run's files."""
    size = project_size(root)
    if size > limits.max_copy_mb * 1024 * 1024:
        raise SandboxError(
            f"{root} holds {size // (1024 * 1024)} MB; devlint copies at most "
            f"{limits.max_copy_mb} MB (--max-copy-mb)"
        )
    folder = Path(tempfile.mkdtemp(prefix="devlint-confirm-"))
    try:
        copy_project(root, folder / "copy")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
