"""The linting API the CLI (and tests) call: paths or standard input in, a RunSummary out."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from devlint.cache import Cache
from devlint.config import ConfigResolver, Settings
from devlint.diagnostics import FileResult, Finding
from devlint.discovery import iter_python_files
from devlint.engine import RuleSet, Unreadable, lint_source, unreadable_result, without_fixes
from devlint.parallel import Task, lint_tasks
from devlint.progress import ProgressCallback
from devlint.report import RunSummary
from devlint.torch_floor import DeviceStyle

log = logging.getLogger("devlint")


RuleSets = dict[tuple[frozenset[str], Optional[frozenset[str]], DeviceStyle], RuleSet]


def rule_set_for(settings: Settings, path: Path, built: RuleSets) -> RuleSet:
    """The rules ``settings`` enable for ``path`` (codes, fixable ones, device style), built
    once per distinct selection and kept in ``built``."""
    codes = settings.codes_for(path)
    fixable = None if settings.fixable >= codes else settings.fixable
    key = (codes, fixable, settings.device_style)
    rules = built.get(key)
    if rules is None:
        rules = built[key] = RuleSet(codes, fixable, settings.device_style)
    return rules


class Linter:
    """Lints files with the settings that apply to each, building each rule set once."""

    def __init__(self, resolver: ConfigResolver) -> None:
        self._resolver = resolver
        self._rule_sets: RuleSets = {}

    def rules_for(self, path: Path) -> RuleSet:
        return rule_set_for(self._resolver.settings_for(path), path, self._rule_sets)

    def lint_bytes(self, path: Path, data: bytes, shown_as: str) -> FileResult:
        return lint_source(shown_as, data, self.rules_for(path))

    def lint_file(self, path: Path) -> FileResult:
        try:
            data = path.read_bytes()
        except OSError as error:
            reason = error.strerror or type(error).__name__
            return unreadable_result(
                str(path), Unreadable(f"cannot read: {reason}"), self.rules_for(path)
            )
        return self.lint_bytes(path, data, str(path))


def _collect(summary: RunSummary, result: FileResult) -> None:
    summary.files_checked += 1
    summary.findings.extend(result.findings)
    summary.errors.extend(result.errors)


def lint_paths(
    paths: Sequence[Path],
    resolver: ConfigResolver,
    force_exclude: bool,
    progress: Optional[ProgressCallback] = None,
    jobs: int = 1,
    cache_dir: Optional[Path] = None,
) -> RunSummary:
    """Lint every Python file under ``paths``; ``progress(done, total)`` follows each file.

    ``jobs`` processes share the files; with a ``cache_dir``, unchanged files are not linted
    again. The summary lists files in discovery order, whichever finished first.
    """
    files = list(iter_python_files(paths, resolver, force_exclude))  # the total, for progress
    cache = Cache(cache_dir) if cache_dir is not None else None
    results: list[Optional[FileResult]] = [None] * len(files)
    tasks: dict[int, Task] = {}
    for index, path in enumerate(files):
        settings = resolver.settings_for(path)
        codes, style = settings.codes_for(path), settings.device_style
        # Fixes differ by the torch floor: the style is part of the cache key.
        keyed = (*codes, f"style={style.key}")
        results[index] = cache.lookup(path, keyed, str(path)) if cache is not None else None
        if results[index] is None:
            tasks[index] = Task(index, path, codes, style)
    done = len(files) - len(tasks)
    for index, result, stamp in lint_tasks(list(tasks.values()), jobs):
        results[index] = result
        if cache is not None and stamp is not None:
            task = tasks[index]
            cache.store(files[index], (*task.codes, f"style={task.style.key}"), stamp, result)
        done += 1
        if progress is not None:
            progress(done, len(files))
    if cache is not None:
        cache.save()
    summary = RunSummary()
    for path, outcome in zip(files, results):
        assert outcome is not None, "every file has a result"
        fixable = resolver.settings_for(path).fixable
        outcome.findings = without_fixes(outcome.findings, fixable)
        _collect(summary, outcome)
    if cache is not None:
        log.debug("cache %s: %d of %d files unchanged", cache_dir, len(files) - len(tasks),
                  len(files))  # fmt: skip
    summary.findings.sort(key=Finding.sort_key)
    return summary


def lint_stdin(
    data: bytes, filename: str, resolver: ConfigResolver, force_exclude: bool
) -> RunSummary:
    """Standard input, linted as if it were ``filename`` (for its settings and its name)."""
    path = Path(filename)
    summary = RunSummary()
    if force_exclude and resolver.settings_for(path).is_excluded(path):
        return summary
    _collect(summary, Linter(resolver).lint_bytes(path, data, filename))
    return summary
