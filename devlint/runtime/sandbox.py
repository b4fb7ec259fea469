"""Running the user's code safely: a copy of the project, a child process, limits, a deadline.

Each (entry point, profile) runs in its own process, in its own temporary copy of the project,
so that nothing in the user's tree changes and no run sees another's files. The child starts in
a new session (its own process group), with limits on memory, CPU time and file size and
no core dumps; at the deadline the whole group gets SIGTERM (the child then reports what it
reached), then SIGKILL, and so do the processes that left the group (the child is their
subreaper; as root, the run's pids cgroup holds them all). Output goes to files, not pipes, so a
grandchild holding a pipe open cannot hang devlint.

The code may write only in the run's folder, signal only its own processes, and keep at most
``max_processes`` processes alive: an audit hook in the child refuses the rest (``guard``), and
Landlock, a pids cgroup or RLIMIT_NPROC hold code that bypasses Python (``confine``). A refused
process, signal or limit stops the run at once, as ``refused`` with the reason; so does a
refused write the code does not catch. A refused write the code catches is a note of the run.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from devlint.runtime import confine
from devlint.runtime.guard import HOSTILE
from devlint.runtime.outcome import CRASHED, FAILED, REFUSED, TIMEOUT, Guard, Job, RunOutcome
from devlint.runtime.processes import kill_descendants
from devlint.runtime.profiles import CPU_HOST, MPS

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
_POLL_SECONDS = 0.1  # how often the parent looks at the refusal log while the child runs
_TAIL = 2000  # characters of the child's stderr kept in a crash report
_NOTES = 10  # refused writes noted at most, the first ones


def _default_max_processes() -> int:
    """DataLoader workers and their helpers: about two per core, never fewer than 32."""
    return max(32, 2 * (os.cpu_count() or 1) + 8)


@dataclass(frozen=True)
class Limits:
    timeout: float = 120.0  # wall-clock seconds per run
    memory_mb: int = 8192  # address space (heap and private mappings on a GPU machine)
    cpu_seconds: Optional[int] = None  # default: 4 CPU-seconds per wall-clock second
    file_size_mb: int = 1024  # largest file the run may write
    max_copy_mb: int = 2048  # largest project devlint agrees to copy
    max_processes: int = field(default_factory=_default_max_processes)  # alive at once

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


def memory_limit() -> str:
    """The resource that holds a run's memory: its address space, except on a Linux machine
    with the NVIDIA driver, which reserves far more address space than it uses (under an 8 GB
    RLIMIT_AS `torch.cuda.is_available()` is False: "Unexpected error from
    cudaGetDeviceCount()", checked on an H100). There RLIMIT_DATA holds the heap and private
    mappings (Linux 4.7 and later; a 12 GB allocation is refused under 8 GB, and CUDA starts),
    but not shared memory (`MAP_SHARED`, `/dev/shm`)."""
    linux_gpu = sys.platform.startswith("linux") and confine.nvidia_driver()
    return "RLIMIT_DATA" if linux_gpu else "RLIMIT_AS"


def resource_limits(limits: Limits) -> dict[str, int]:
    """The child sets these on itself before it runs anything of the user's (not through
    ``preexec_fn``, which can deadlock when devlint runs several jobs from threads)."""
    megabyte = 1024 * 1024
    values = {
        memory_limit(): limits.memory_mb * megabyte,
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


def _cache_home(env: dict[str, str]) -> str:
    return env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def child_environment(profile: str, scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Downloaded weights stay where the user's tools keep them (read, not written: a download
    # is refused): pinned before the cache folder below moves.
    env.setdefault("TORCH_HOME", os.path.join(_cache_home(env), "torch"))
    env.setdefault("HF_HOME", os.path.join(_cache_home(env), "huggingface"))
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        MPLBACKEND="Agg",  # plt.show() would wait for a window
        TMPDIR=str(scratch),
        # Caches that would live in the home folder, outside the run's folder:
        XDG_CACHE_HOME=str(scratch / "cache"),
        MPLCONFIGDIR=str(scratch / "matplotlib"),
        TRITON_CACHE_DIR=str(scratch / "triton"),
        CUDA_CACHE_PATH=str(scratch / "nv"),
        TORCH_EXTENSIONS_DIR=str(scratch / "torch_extensions"),
    )
    env.pop("PYTHONSTARTUP", None)
    if profile in (CPU_HOST, MPS):
        env["CUDA_VISIBLE_DEVICES"] = ""  # a GPU machine plays one without a GPU (or a Mac)
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


def _wait(process: subprocess.Popen[bytes], limits: Limits, log: Path) -> str:
    """Wait for the child: to its end, to the deadline, or to the first refusal that ends the
    run (a process, signal or limit); then SIGTERM the group, then SIGKILL. Returns why the
    child was stopped: TIMEOUT, REFUSED, or "" where it ended by itself."""
    deadline = time.monotonic() + limits.timeout
    stopped = TIMEOUT
    while True:
        try:
            process.wait(timeout=max(0.0, min(_POLL_SECONDS, deadline - time.monotonic())))
            return ""
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            break
        if _refusals(log)[0]:
            stopped = REFUSED
            break
    _stop(process)
    return stopped


def _stop(process: subprocess.Popen[bytes]) -> None:
    _kill_group(process, signal.SIGTERM)  # the child then reports what it reached
    try:
        process.wait(timeout=_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        kill_descendants(process.pid)  # while the child still holds them (their subreaper)
        _kill_group(process, signal.SIGKILL)
        process.wait()


def _guard(workdir: Path, limits: Limits, group: Optional[confine.PidsGroup]) -> Guard:
    return Guard(
        writable=(os.path.realpath(workdir),),
        max_processes=limits.max_processes,
        log=str(workdir / "refusals"),
        cgroup=group.procs if group is not None else None,
    )


def _start(job: Job, job_file: Path, workdir: Path) -> subprocess.Popen[bytes]:
    scratch = workdir / "tmp"
    scratch.mkdir(exist_ok=True)
    with open(workdir / "stdout", "wb") as out, open(workdir / "stderr", "wb") as err:
        return subprocess.Popen(
            [sys.executable, "-c", _bootstrap(), str(job_file)],
            cwd=job.cwd,
            env=child_environment(job.profile, scratch),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )


def run_job(job: Job, workdir: Path, limits: Limits) -> RunOutcome:
    """Run one prepared job in a child process and read back its outcome."""
    job_file, refusals = workdir / "job.json", workdir / "refusals"
    started = time.perf_counter()
    with confine.pids_group(limits.task_limit()) as group:  # removed whatever happens
        job.limits = resource_limits(limits)
        job.guard = _guard(workdir, limits, group)
        job.write(job_file)
        process = _start(job, job_file, workdir)
        stopped = _wait(process, limits, refusals)
        _kill_group(process, signal.SIGKILL)  # stray grandchildren (DataLoader workers, ...)
        limit_reached = group is not None and group.limit_reached()
    outcome = _outcome(job, process, stopped, limits, workdir)
    hostile, writes = _refusals(refusals)
    if hostile:
        outcome.status, outcome.detail = REFUSED, hostile
    elif limit_reached:
        outcome.status = REFUSED
        outcome.detail = (
            f"the code reached its limit of {limits.task_limit()} processes and threads "
            f"(a fork bomb?)"
        )
    outcome.notes.extend(
        f"a write was refused (nothing was written): {reason}"
        for reason in writes
        if not (outcome.status == REFUSED and outcome.detail == reason)  # the run's end
    )
    outcome.seconds = round(time.perf_counter() - started, 3)
    return outcome


def _outcome(
    job: Job, process: subprocess.Popen[bytes], stopped: str, limits: Limits, workdir: Path
) -> RunOutcome:
    """What the child reported, or what its end tells where it could not report."""
    timed_out = f"timed out after {limits.timeout:g} s"
    outcome = RunOutcome.read(Path(job.result))
    if outcome is not None:
        if stopped == TIMEOUT:
            outcome.status, outcome.detail = TIMEOUT, timed_out
        elif outcome.status == FAILED and not outcome.failures:  # sys.exit(2) from argparse
            tail = _stderr(workdir).strip()[-_TAIL:]
            outcome.detail += f"\n{tail}" if tail else ""
        return outcome
    if stopped:
        return RunOutcome(job.entry, job.profile, stopped, timed_out if stopped == TIMEOUT else "")
    return RunOutcome(
        job.entry, job.profile, CRASHED, _crash_detail(process.returncode, _stderr(workdir))
    )


def _stderr(workdir: Path) -> str:
    try:
        return (workdir / "stderr").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _refusals(log: Path) -> tuple[str, list[str]]:
    """From the refusal log of every process of the run: the first refusal that ends the run
    (a process, signal or limit; "" where there is none), and the refused writes (which end it
    only where the code did not catch them, as the child reports)."""
    writes: list[str] = []
    try:
        with open(log, encoding="utf-8", errors="replace") as file:
            for line in file:
                kind, _, reason = line.partition("\t")
                reason = reason.strip()[:_TAIL]
                if kind in HOSTILE:
                    return reason, writes
                if reason and reason not in writes and len(writes) < _NOTES:
                    writes.append(reason)
    except OSError:
        pass
    return "", writes


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
