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
from devlint.runtime.imports import ImportGraph
from devlint.runtime.outcome import Entry, Job, RunOutcome
from devlint.runtime.profiles import PROFILES, RULES
from devlint.runtime.sandbox import Limits, project_copy, run_job
from devlint.runtime.verdicts import Scope, Verdict, decide, relative_path, watched_lines

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ConfirmOptions:
    profiles: tuple[str, ...] = ()  # empty: the profiles each finding's rule needs
    functions: tuple[str, ...] = ()  # `module:function` entry points
    tests: Optional[bool] = None  # None: run the test suite when the paths hold tests
    limits: Limits = field(default_factory=Limits)
    root: Optional[Path] = None
    jobs: int = 1  # runs at once (each is a process with its own memory limit)


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
    """The requested profiles, or the first profile of the rule of each finding in scope."""
    if requested:
        return [profile for profile in PROFILES if profile in requested]
    wanted = {
        RULES[finding.code].profiles[0]
        for finding in findings
        if finding.code in RULES and (scope is None or relative_path(finding, root) in scope)
    }
    return [profile for profile in PROFILES if profile in wanted]


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


def run_one(
    entry: Entry, profile: str, root: Path, watch: dict[str, list[int]], limits: Limits
) -> RunOutcome:
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
        )
        return run_job(job, folder, limits)


def confirm_paths(
    paths: Sequence[Path],
    resolver: ConfigResolver,
    options: ConfirmOptions,
    progress: Optional[Progress] = None,
) -> ConfirmReport:
    summary = lint_paths(paths, resolver, False)
    root = (options.root or entry_points.project_root(paths)).resolve()
    entries = _entries(paths, list(iter_python_files(paths, resolver, False)), root, options)
    watch = watched_lines(summary.findings, root)
    plan = [
        (entry, profile)
        for entry, scope in (entries.items() if watch else ())
        for profile in needed_profiles(summary.findings, root, scope, options.profiles)
    ]

    def run(step: tuple[Entry, str]) -> RunOutcome:
        if progress is not None:
            progress(f"running {step[0].label} under {step[1]}")
        return run_one(step[0], step[1], root, watch, options.limits)

    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        runs = list(pool.map(run, plan))
    scopes = {entry.label: scope for entry, scope in entries.items()}
    verdicts = decide(summary.findings, runs, root, scopes)
    return ConfirmReport(summary, verdicts, runs, root, list(entries))


def default_progress(message: str) -> None:
    print(f"devlint: {message}", file=sys.stderr, flush=True)
