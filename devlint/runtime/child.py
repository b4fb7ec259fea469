"""The process that runs the user's code under one profile and reports what happened.

Started by ``sandbox.run_job`` as ``python -c ... main(JOB)`` in a temporary copy of the
project, with resource limits already set. It sets the profile up, watches which of the lines
that carry findings execute, runs the entry point (a script's ``__main__``, the test suite, or a
named function), and writes a ``RunOutcome`` as JSON, also when the entry point fails or the
parent's timeout arrives as SIGTERM.

Before anything else it confines itself (``confine``: the pids cgroup, then Landlock, while it
has a single thread; not Landlock on a machine with the NVIDIA driver, which does not start
under it) and installs the audit hook (``guard``); every process the user's code starts
inherits both, except that a program it executes keeps only the OS-level limits.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import runpy
import signal
import sys
import threading
import time
import traceback
import types
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Optional, TextIO, Union

from devlint.notebook import NOTEBOOK_SUFFIX, parse_notebook
from devlint.runtime import confine
from devlint.runtime.guard import Policy
from devlint.runtime.outcome import (
    COMPLETED,
    FAILED,
    REFUSED,
    TESTS_FAILED,
    TIMEOUT,
    UNAVAILABLE,
    Failure,
    Frame,
    Job,
    RunOutcome,
    Warned,
)
from devlint.runtime.processes import kill_descendants
from devlint.runtime.profiles import CPU_HOST, GPU, MPS, VGPU
from devlint.runtime.sandbox import apply_limits


class _TimedOut(BaseException):
    """Raised in the main thread when the parent's SIGTERM arrives."""


class _Project:
    """Paths of the project copy: which frames are the user's, and their relative names."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)

    def relative(self, filename: str) -> Optional[str]:
        if filename.startswith("<"):  # <frozen runpy>, <string>: no file of the project
            return None
        path = os.path.realpath(filename)
        if not path.startswith(self.root + os.sep):
            return None
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def frames(self, summary: traceback.StackSummary) -> list[Frame]:
        frames = []
        for frame in summary:
            relative = self.relative(frame.filename)
            if relative is not None and frame.lineno:
                frames.append((relative, frame.lineno))
        return frames


class _LineWatch:
    """Records which watched lines execute, tracing only the frames of watched files."""

    def __init__(self, project: _Project, watch: dict[str, list[int]]) -> None:
        self.lines = {
            os.path.join(project.root, relative): (relative, frozenset(lines))
            for relative, lines in watch.items()
        }
        self.reached: dict[str, set[int]] = defaultdict(set)
        self.entered: set[str] = set()
        # Every new frame in the process comes through trace(): answer from a cache by file.
        self.by_filename: dict[str, Optional[tuple[str, frozenset[int]]]] = {}

    def _local(self, relative: str, lines: frozenset[int]) -> Callable[..., Any]:
        reached = self.reached[relative]

        def trace(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line" and frame.f_lineno in lines:
                reached.add(frame.f_lineno)
            return trace

        return trace

    def trace(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        filename = frame.f_code.co_filename
        try:
            entry = self.by_filename[filename]
        except KeyError:
            entry = self.lines.get(filename) or self.lines.get(os.path.realpath(filename))
            self.by_filename[filename] = entry
        if entry is None:
            return None
        self.entered.add(entry[0])
        return self._local(*entry)

    def start(self) -> None:
        if self.lines:
            sys.settrace(self.trace)
            threading.settrace(self.trace)


def _provenance(error: BaseException, project: _Project) -> dict[str, Any]:
    """For a device error the virtual GPU raised: where its CPU operands came from."""
    vgpu = sys.modules.get("devlint.runtime.vgpu")
    if vgpu is None or not vgpu.LAST_ERROR or vgpu.LAST_ERROR[0].message != str(error):
        return {}
    from devlint.runtime.vgpu import mode

    operands = vgpu.LAST_ERROR[0].cpu_operands
    moved_at = []
    for operand in operands:
        for tensor in (operand, getattr(operand, "_base", None)):
            ref, site = mode.MOVES.get(id(tensor), (None, None))
            if ref is not None and tensor is not None and ref() is tensor and site is not None:
                relative = project.relative(site[0])
                if relative is not None:
                    moved_at.append((relative, site[1]))
    return {"moved_at": moved_at, "attributes": _plain_attributes(error, operands, project)}


def _same_data(first: Any, second: Any) -> bool:
    try:
        pointer = first.untyped_storage().data_ptr()
        return bool(first is second or pointer == second.untyped_storage().data_ptr())
    except (RuntimeError, AttributeError):
        return first is second


def _plain_attributes(
    error: BaseException, operands: list[Any], project: _Project
) -> list[dict[str, Any]]:
    """Plain tensors stored on a module's ``self`` that are among the CPU operands (DEV009)."""
    import torch

    found = []
    for frame, _ in traceback.walk_tb(error.__traceback__):
        owner = frame.f_locals.get("self")
        if not isinstance(owner, torch.nn.Module):
            continue
        for name, value in vars(owner).items():
            if not isinstance(value, torch.Tensor):
                continue
            if any(_same_data(value, operand) for operand in operands):
                found.append({"name": name, **_class_span(type(owner), project)})
    return found


def _class_span(cls: type, project: _Project) -> dict[str, Any]:
    """Where the class's methods lie, read from their code objects (a class defined in a
    script run as ``__main__`` has no module left to ask ``inspect`` about)."""
    for klass in cls.__mro__:
        codes = [v.__code__ for v in vars(klass).values() if isinstance(v, types.FunctionType)]
        relative = project.relative(codes[0].co_filename) if codes else None
        if relative is None:
            continue
        lines = [line for code in codes for _, _, line in code.co_lines() if line]
        return {"path": relative, "first": min(lines), "last": max(lines)}
    return {"path": None, "first": 0, "last": 0}


def failures_of(
    error: BaseException, project: _Project, test: Optional[str] = None
) -> list[Failure]:
    """One failure per exception in the chain (the cause first), with the project's frames."""
    chain: list[BaseException] = []
    current: Optional[BaseException] = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    failures = []
    for item in reversed(chain):
        frames = project.frames(traceback.extract_tb(item.__traceback__))
        failures.append(
            Failure(type(item).__name__, str(item), frames, test, **_provenance(item, project))
        )
        failures[-1].cause = item is not error
    return failures


class _Recorder:
    """Collects failures and warnings, from a script or through pytest's hooks."""

    def __init__(self, outcome: RunOutcome, project: _Project) -> None:
        self.outcome = outcome
        self.project = project

    def warned(self, category: str, message: str, filename: str, lineno: int) -> None:
        frames = self.project.frames(traceback.extract_stack())
        relative = self.project.relative(filename)
        if relative is not None and (not frames or frames[-1] != (relative, lineno)):
            frames.append((relative, lineno))
        if frames:
            self.outcome.warnings.append(Warned(category, message, frames))

    def install_warning_hook(self) -> None:
        show = warnings.showwarning

        def showwarning(
            message: Union[Warning, str],
            category: type[Warning],
            filename: str,
            lineno: int,
            file: Optional[TextIO] = None,
            line: Optional[str] = None,
        ) -> None:
            self.warned(category.__name__, str(message), filename, lineno)
            show(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning
        warnings.simplefilter("default")

    # pytest hooks (this object is passed to pytest.main as a plugin)
    def pytest_exception_interact(self, node: Any, call: Any, report: Any) -> None:
        excinfo = call.excinfo
        if excinfo is not None and isinstance(excinfo.value, Exception):
            self.outcome.failures.extend(failures_of(excinfo.value, self.project, node.nodeid))

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and report.nodeid not in self.outcome.failed_tests:
            self.outcome.failed_tests.append(report.nodeid)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed and report.nodeid not in self.outcome.failed_tests:
            self.outcome.failed_tests.append(report.nodeid)  # a test file that cannot import

    def pytest_warning_recorded(
        self, warning_message: Any, when: str, nodeid: str, location: Any
    ) -> None:
        self.warned(
            warning_message.category.__name__,
            str(warning_message.message),
            warning_message.filename,
            warning_message.lineno,
        )


def _set_up(profile: str, project: _Project) -> tuple[str, str]:
    """Prepare the profile; returns the profile that runs and, if it cannot, why."""
    if profile == CPU_HOST:
        return profile, ""
    try:
        import torch
    except ImportError:
        return profile, "torch is not installed (pip install 'devlint[runtime]')"
    if profile == MPS:
        return profile, _set_up_virtual("mps", project)
    if profile == GPU or torch.cuda.is_available():
        available = torch.cuda.is_available()
        return GPU, "" if available else "torch.cuda.is_available() is False: no GPU here"
    return VGPU, _set_up_virtual("cuda", project)


def _set_up_virtual(kind: str, project: _Project) -> str:
    """The virtual device playing CUDA or MPS; why it cannot, or ""."""
    from devlint.runtime import vgpu
    from devlint.runtime.vgpu import mode

    reason = vgpu.unavailable_reason()
    if reason:
        return reason
    vgpu.install(kind)
    mode.USER_ROOTS.append(project.root + os.sep)
    return ""


def _run_entry(job: Job, project: _Project, recorder: _Recorder) -> str:
    """Run the entry point; returns the detail of a non-exception failure (pytest's exit)."""
    entry = job.entry
    # The project's source roots, as pytest's rootdir and `pythonpath` put them (a src layout).
    sys.path[:0] = [os.path.normpath(os.path.join(project.root, path)) for path in job.paths]
    if entry.kind == "script":
        path = os.path.join(project.root, entry.target)
        sys.argv = [path, *job.args]
        sys.path.insert(0, os.path.dirname(path))
        if path.endswith(NOTEBOOK_SUFFIX):
            _run_notebook(path)
        else:
            runpy.run_path(path, run_name="__main__")
        return ""
    if entry.kind == "function":
        module_name, _, function_name = entry.target.partition(":")
        function = getattr(importlib.import_module(module_name), function_name)
        function()
        return ""
    import pytest

    targets = [os.path.join(project.root, target) for target in entry.target.split()]
    code = pytest.main(
        [*targets, "-q", "-p", "no:cacheprovider", "--rootdir", project.root], plugins=[recorder]
    )
    if int(code) not in (0, 1, 5):  # passed, some tests failed, no tests
        failed = f"; {_failed_tests(recorder.outcome.failed_tests)}"
        return f"pytest stopped with exit code {int(code)} ({code!r})" + (
            failed if recorder.outcome.failed_tests else ""
        )
    return ""


def _failed_tests(tests: list[str]) -> str:
    count = len(tests)
    return f"{count} test{'' if count == 1 else 's'} failed: {', '.join(tests)}"


def _run_notebook(path: str) -> None:
    """A notebook's code cells in order, as one program compiled under the notebook's name: the
    rows of tracebacks and of the line watch are the program's, as the findings' are."""
    with open(path, "rb") as handle:
        program = parse_notebook(handle.read()).program()
    code = compile(program.source, path, "exec")
    exec(code, {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _TimedOut()


def run(job: Job, policy: Optional[Policy] = None) -> RunOutcome:
    project = _Project(job.root)
    outcome = RunOutcome(job.entry, job.profile, COMPLETED)
    started = time.perf_counter()
    profile, reason = _set_up(job.profile, project)
    outcome.profile = profile
    if reason:
        outcome.status, outcome.detail = UNAVAILABLE, reason
        return outcome
    if job.patch:  # a re-run past lines already confirmed
        from devlint.runtime import cpu_patch

        cpu_patch.install(project.root, job.patch)
        outcome.patched = list(job.patch)
    recorder = _Recorder(outcome, project)
    recorder.install_warning_hook()
    watch = _LineWatch(project, job.watch)
    os.chdir(job.cwd)
    signal.signal(signal.SIGTERM, _on_sigterm)
    watch.start()
    try:
        detail = _run_entry(job, project, recorder)
        if detail:
            outcome.status, outcome.detail = FAILED, detail
        elif outcome.failed_tests:
            outcome.status, outcome.detail = TESTS_FAILED, _failed_tests(outcome.failed_tests)
    except _TimedOut:
        outcome.status, outcome.detail = TIMEOUT, "stopped by the timeout"
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            outcome.status, outcome.detail = FAILED, f"exited with status {exit_.code!r}"
    except BaseException as error:  # the user's code may raise anything; report it
        outcome.status = FAILED
        outcome.failures.extend(failures_of(error, project))
        outcome.detail = f"{type(error).__name__}: {error}"
    finally:
        sys.settrace(None)
        threading.settrace(None)
        outcome.reached = {path: sorted(lines) for path, lines in watch.reached.items()}
        outcome.entered = sorted(watch.entered)
        outcome.seconds = round(time.perf_counter() - started, 3)
    _refused(outcome, policy)
    return outcome


def _refused(outcome: RunOutcome, policy: Optional[Policy]) -> None:
    """The run ends as ``refused`` on a refused process, signal or limit, also when the code
    caught the error, and on a refused write the code did not catch (it ended the entry point
    or a test). A refused write that was caught changed nothing: the parent notes it."""
    hostile = policy.hostile() if policy is not None else None
    uncaught = next((item for item in outcome.failures if item.type == "Refused"), None)
    if hostile:
        outcome.status, outcome.detail = REFUSED, hostile
    elif uncaught is not None:
        outcome.status, outcome.detail = REFUSED, uncaught.message


def confine_self(job: Job) -> tuple[Optional[Policy], list[str]]:
    """The OS-level limits, then the audit hook, before any of the user's code runs. Returns
    the hook's policy and notes on what could not be confined."""
    guard = job.guard
    if guard is None:
        return None, []
    if guard.cgroup:
        confine.join(guard.cgroup)
    confine.become_subreaper()
    notes: list[str] = []
    if not confine.nvidia_driver():
        confine.restrict(list(guard.writable))
    elif confine.landlock_abi() >= 1:
        notes.append(confine.NO_LANDLOCK_WITH_CUDA)
    kept = confine.drop_capabilities()
    policy = Policy(guard.writable, guard.max_processes, guard.log)
    policy.install()
    return policy, notes + ([kept] if kept else [])


def main(job_path: str) -> None:
    faulthandler.enable()  # a crash (SIGSEGV, SIGABRT) leaves its stack in the run's stderr
    job = Job.read(Path(job_path))
    apply_limits(job.limits)
    policy, notes = confine_self(job)
    first = os.getpid()
    outcome = run(job, policy)
    outcome.notes.extend(notes)
    if os.getpid() != first:  # a fork of the user's code that unwound this far: not the report
        os._exit(1)
    kill_descendants(first)  # also those that left the session, which the parent cannot see
    outcome.write(Path(job.result))
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter shutdown: the user's threads or atexit handlers must not hang the run.
    os._exit(0)
