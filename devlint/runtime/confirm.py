"""``devlint confirm``: lint, run the code under the profiles that can show each finding, and
give every finding a verdict.

Nothing here imports torch: the runs happen in child processes (``sandbox``, ``child``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from devlint.api import lint_paths
from devlint.config import ConfigResolver
from devlint.diagnostics import Finding
from devlint.discovery import iter_python_files
from devlint.report import RunSummary
from devlint.runtime import entry_points
from devlint.runtime import settings as run_settings
from devlint.runtime.imports import ImportGraph
from devlint.runtime.outcome import FAILED, Entry, Frame, Job, RunOutcome
from devlint.runtime.profiles import CPU_HOST, PROFILES, patchable, runtime_of
from devlint.runtime.sandbox import Limits, project_copy, run_job
from devlint.runtime.verdicts import (
    Scope,
    Verdict,
    judge,
    relative_path,
    runtime_findings,
    watched_lines,
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ConfirmOptions:
    profiles: tuple[str, ...] = ()  # empty: the profiles each finding's rule needs
    functions: tuple[str, ...] = ()  # `module:function` entry points
    tests: Optional[bool] = None  # None: run the test suite when the paths hold tests
    limits: Limits = field(default_factory=Limits)
    root: Optional[Path] = None
    jobs: int = 1  # runs at once (each is a process with its own memory limit)
    args: Optional[tuple[str, ...]] = None  # every script's arguments (else configured ones)
    reruns: int = 5  # re-runs of one entry point past its crashes without an accelerator
    keep: Optional[Callable[[list[Finding]], list[Finding]]] = None  # a baseline's filter


@dataclass
class ConfirmReport:
    summary: RunSummary
    verdicts: list[Optional[Verdict]]  # aligned with summary.findings
    runs: list[RunOutcome]
    root: Path
    entries: list[Entry]


def needed_profiles(
    findings: Sequence[Finding], root: Path, scope: Scope, requested: Sequence[str]
) -> list[str]:
    """The requested profiles, or the first profile of the rule of each finding in scope; an
    entry point with no finding in scope runs on the machine at hand (no GPU), where any crash
    it meets is a finding of its own."""
    if requested:
        return [profile for profile in PROFILES if profile in requested]
    wanted = {
        rule.profiles[0]
        for finding in findings
        if (rule := runtime_of(finding.code, finding.message)) is not None
        and (scope is None or relative_path(finding, root) in scope)
    }
    return [profile for profile in PROFILES if profile in (wanted or {CPU_HOST})]


def _entries(
    paths: Sequence[Path], linted: Sequence[Path], root: Path, options: ConfirmOptions
) -> dict[Entry, Scope]:
    """Entry points, each with the files it can reach (None: any file, for test suites and
    named functions, whose imports are not followed)."""
    graph = ImportGraph(linted, root)
    entries: dict[Entry, Scope] = {
        entry: frozenset(graph.reachable(entry.target))
        for entry in entry_points.scripts(paths, linted, root, graph)
    }
    named_folder = any(path.is_dir() for path in paths)
    if options.tests or (options.tests is None and named_folder):
        entries.update((entry, None) for entry in entry_points.test_suite(paths, linted, root))
    entries.update((entry, None) for entry in entry_points.functions(options.functions))
    return entries


def _cwd_in_copy(root: Path, copy: Path) -> Path:
    """The copy of the folder devlint runs in, when it lies inside the project."""
    here = Path.cwd().resolve()
    try:
        return copy / here.relative_to(root)
    except ValueError:
        return copy


@dataclass(frozen=True)
class Step:
    """One run to make: an entry point, a profile, and the lines sent to the CPU (a re-run)."""

    entry: Entry
    profile: str
    patch: tuple[Frame, ...] = ()


def run_one(
    entry: Entry,
    profile: str,
    root: Path,
    watch: dict[str, list[int]],
    limits: Limits,
    settings: Optional[run_settings.RunSettings] = None,
    args: Optional[Sequence[str]] = None,
    patch: Sequence[Frame] = (),
) -> RunOutcome:
    """One run in its own copy of the project; a script's ``args`` default to the configured
    ones, and the source roots to the project's root."""
    settings = settings or run_settings.RunSettings(paths=["."])
    if args is None:
        args = settings.args.get(entry.target, []) if entry.kind == "script" else []
    with project_copy(root, limits) as folder:
        copy = folder / "copy"
        cwd = _cwd_in_copy(root, copy)
        job = Job(
            entry,
            profile,
            str(copy),
            str(cwd if cwd.is_dir() else copy),
            watch,
            str(folder / "result.json"),
            args=list(args),
            paths=list(settings.paths),
            patch=list(patch),
        )
        return run_job(job, folder, limits)


def rerun_past(run: RunOutcome) -> Optional[Step]:
    """The re-run that goes past the crash that stopped a run without an accelerator: the
    crashing line's device calls sent to the CPU. None where there is nothing to go past (a
    test suite: one test's crash does not stop the others)."""
    if run.status != FAILED or run.profile != CPU_HOST or not run.failures:
        return None
    if run.entry.kind == "pytest":
        return None
    raised = run.failures[-1]
    if not raised.frames or not patchable(raised.text) or raised.frames[-1] in run.patched:
        return None
    return Step(run.entry, run.profile, (*run.patched, raised.frames[-1]))


def confirm_paths(
    paths: Sequence[Path],
    resolver: ConfigResolver,
    options: ConfirmOptions,
    progress: Optional[Progress] = None,
) -> ConfirmReport:
    summary = lint_paths(paths, resolver, False)
    root = (options.root or entry_points.project_root(paths)).resolve()
    settings = run_settings.load(root)
    entries = _entries(paths, list(iter_python_files(paths, resolver, False)), root, options)
    watch = watched_lines(summary.findings, root)
    plan = [
        Step(entry, profile)
        for entry, scope in entries.items()
        for profile in needed_profiles(summary.findings, root, scope, options.profiles)
    ]

    def run(step: Step) -> RunOutcome:
        if progress is not None:
            past = f" past line {step.patch[-1][1]} of {step.patch[-1][0]}" if step.patch else ""
            progress(f"running {step.entry.label} under {step.profile}{past}")
        return run_one(
            step.entry,
            step.profile,
            root,
            watch,
            options.limits,
            settings,
            options.args,
            step.patch,
        )

    runs: list[RunOutcome] = []
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        batch = list(pool.map(run, plan))
        while batch:  # each re-run goes past one more crash, at most `reruns` times
            runs.extend(batch)
            again = [step for outcome in batch if (step := rerun_past(outcome)) is not None]
            batch = list(pool.map(run, [s for s in again if len(s.patch) <= options.reruns]))
    scopes = {entry.label: scope for entry, scope in entries.items()}
    judgement = judge(summary.findings, runs, root, scopes)
    judged = list(zip(summary.findings, judgement.verdicts))
    if options.keep is not None:  # a baseline's findings still explain their crashes, unseen
        kept = set(options.keep(summary.findings))
        judged = [(finding, verdict) for finding, verdict in judged if finding in kept]
    judged += runtime_findings(runs, root, judgement.explained)
    summary.findings = [finding for finding, _ in judged]
    return ConfirmReport(summary, [verdict for _, verdict in judged], runs, root, list(entries))


def default_progress(message: str) -> None:
    print(f"devlint: {message}", file=sys.stderr, flush=True)
