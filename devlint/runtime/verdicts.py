"""From what the runs saw to one verdict per finding.

- ``confirmed``: a profile that can show the rule raised the rule's PyTorch error, and the
  innermost frame of the traceback that sits on a finding sits on this one (or, for a discarded
  move or a plain tensor attribute, the error's CPU operand came from this line);
- ``not-reproduced``: a run executed the line and ran to completion without that error;
- ``not-reached``: an exception in the code stopped every run that could reach the line before
  it ran (the crash of another finding, which ``confirm`` then re-runs past where it can);
- ``unreachable``: no entry point executed the line;
- ``error``: the runs that could have reached it failed for another reason (given): a crash, a
  timeout, the sandbox's refusal.

A failure that confirms no finding is a finding of its own (``DEV900``, ``runtime_findings``):
the companion then reports what the static rules missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from devlint.diagnostics import Finding, Position
from devlint.notebook import NOTEBOOK_SUFFIX, Program, program_of
from devlint.runtime.outcome import FAILED, FINISHED, REFUSED, Failure, RunOutcome
from devlint.runtime.profiles import (
    GPU,
    RUNTIME_ERROR_CODE,
    VGPU,
    RuleRuntime,
    device_error,
    runtime_of,
)

CONFIRMED, NOT_REPRODUCED, NOT_REACHED, UNREACHABLE, ERROR = (
    "confirmed",
    "not-reproduced",
    "not-reached",
    "unreachable",
    "error",
)
VERDICTS = (CONFIRMED, NOT_REPRODUCED, NOT_REACHED, UNREACHABLE, ERROR)
RUNTIME_ERROR_NAME = "runtime-error"

# The project files an entry point can reach (relative paths), or None when any may be reached.
Scope = Union[frozenset[str], None]


@dataclass(frozen=True)
class Verdict:
    status: str
    profile: Optional[str] = None
    entry: Optional[str] = None
    detail: str = ""
    test: Optional[str] = None


@dataclass(frozen=True)
class _Site:
    """A finding as the runs see it: a path relative to the project root and a line span."""

    index: int
    path: str
    first: int
    last: int
    finding: Finding
    rule: RuleRuntime

    def covers(self, path: str, line: int) -> bool:
        return path == self.path and self.first <= line <= self.last


def relative_path(finding: Finding, root: Path) -> Optional[str]:
    try:
        return Path(finding.path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _runs_for(rule: RuleRuntime, runs: Sequence[RunOutcome]) -> list[RunOutcome]:
    profiles = set(rule.profiles) | ({GPU} if VGPU in rule.profiles else set())
    return [run for run in runs if run.profile in profiles]


def _can_reach(run: RunOutcome, site: _Site, scopes: dict[str, Scope]) -> bool:
    """Whether the run could have executed the finding's file: it did, or its entry imports it
    (or is a test suite or a named function, whose imports are not followed)."""
    scope = scopes.get(run.entry.label)
    return scope is None or site.path in scope or site.path in run.entered


def _where(failure: Failure) -> str:
    if not failure.frames:
        return ""
    path, line = failure.frames[-1]
    return f" (at {path}:{line})"


class _Attribution:
    """Which finding each failure confirms."""

    def __init__(self, sites: Sequence[_Site], runs: Sequence[RunOutcome]) -> None:
        self.confirmed: dict[int, Verdict] = {}
        self.explained: set[int] = set()  # ids of the failures that confirmed a finding
        for run in runs:
            for failure in run.failures:
                if self._attribute(failure, run, sites):
                    self.explained.add(id(failure))
            for warned in run.warnings:
                self._attribute_warning(warned.category, warned.message, warned.frames, run, sites)

    def _confirm(self, site: _Site, run: RunOutcome, detail: str, test: Optional[str]) -> None:
        verdict = Verdict(CONFIRMED, run.profile, run.entry.label, detail, test)
        self.confirmed.setdefault(site.index, verdict)

    def _attribute(self, failure: Failure, run: RunOutcome, sites: Sequence[_Site]) -> bool:
        """Confirm the findings the failure shows; whether there was one."""
        matching = [
            site
            for site in sites
            if site.rule.error is not None
            and site.rule.error.search(failure.text)
            and run in _runs_for(site.rule, [run])
        ]
        found = False
        for site in matching:
            if self._by_provenance(site, failure):
                self._confirm(site, run, failure.text, failure.test)
                found = True
        framed = [site for site in matching if site.rule.provenance is None]
        for path, line in reversed(failure.frames):  # innermost first
            hit = [site for site in framed if site.covers(path, line)]
            for site in hit:
                self._confirm(site, run, failure.text, failure.test)
            if hit:
                return True
        return found

    @staticmethod
    def _by_provenance(site: _Site, failure: Failure) -> bool:
        kind = site.rule.provenance
        if kind == "moved_at":
            return any(site.covers(path, line) for path, line in failure.moved_at)
        if kind == "attributes":
            return any(
                attribute["path"] == site.path
                and attribute["first"] <= site.first <= attribute["last"]
                and f"`self.{attribute['name']}`" in site.finding.message
                for attribute in failure.attributes
            )
        return False

    def _attribute_warning(
        self,
        category: str,
        message: str,
        frames: Sequence[tuple[str, int]],
        run: RunOutcome,
        sites: Sequence[_Site],
    ) -> None:
        for site in sites:
            rule = site.rule
            if rule.warning != category or run not in _runs_for(rule, [run]):
                continue
            if any(site.covers(path, line) for path, line in frames):
                self._confirm(site, run, f"{category}: {message}", None)


def _reached(site: _Site, run: RunOutcome) -> Optional[int]:
    lines = run.reached.get(site.path, ())
    return next((line for line in lines if site.first <= line <= site.last), None)


def _run_problem(run: RunOutcome) -> str:
    if run.status == REFUSED:  # what the sandbox refused, not the error that followed
        return run.detail
    if run.failures:
        failure = run.failures[-1]
        return f"{failure.text}{_where(failure)}"
    return run.detail or run.status


def _shown(site: _Site, line: int) -> str:
    """A line of the finding as its reader finds it: ``3 of cell 4`` in a notebook."""
    finding = site.finding
    if finding.cell is None:
        return str(line)
    return f"{line - finding.cell_first_row + 1} of cell {finding.cell}"


def _undecided(site: _Site, runs: Sequence[RunOutcome], scopes: dict[str, Scope]) -> Verdict:
    rule = site.rule
    relevant = [run for run in _runs_for(rule, runs) if _can_reach(run, site, scopes)]
    reaching = [(run, line) for run in relevant if (line := _reached(site, run)) is not None]
    for run, line in reaching:
        if run.status in FINISHED:
            detail = f"line {_shown(site, line)} ran under {run.profile} without the error"
            return Verdict(NOT_REPRODUCED, run.profile, run.entry.label, detail)
    for run, line in reaching:
        detail = f"line {_shown(site, line)} ran, then the run failed: {_run_problem(run)}"
        return Verdict(ERROR, run.profile, run.entry.label, detail)
    stopped = [run for run in relevant if run.status not in FINISHED]
    # The last re-run got furthest; an exception in the code is the normal end of a run.
    for run in sorted(stopped, key=lambda run: (run.status != FAILED, -len(run.patched))):
        detail = f"the run stopped before line {_shown(site, site.first)}: {_run_problem(run)}"
        status = NOT_REACHED if run.status == FAILED else ERROR
        return Verdict(status, run.profile, run.entry.label, detail)
    if not relevant:
        needed = " or ".join(rule.profiles)
        return Verdict(UNREACHABLE, detail=f"no entry point that reaches it ran under {needed}")
    ran = ", ".join(f"{run.entry.label} under {run.profile}" for run in relevant)
    return Verdict(UNREACHABLE, detail=f"line {_shown(site, site.first)} never ran ({ran})")


def decide(
    findings: Sequence[Finding],
    runs: Iterable[RunOutcome],
    root: Path,
    scopes: Optional[dict[str, Scope]] = None,
) -> list[Optional[Verdict]]:
    """A verdict for each finding whose rule has a runtime check (None for the others)."""
    return judge(findings, runs, root, scopes).verdicts


@dataclass
class Judgement:
    verdicts: list[Optional[Verdict]]  # aligned with the findings judged
    explained: set[int]  # ids of the failures that confirmed a finding


def _sites(findings: Sequence[Finding], root: Path) -> list[_Site]:
    sites = []
    for index, finding in enumerate(findings):
        path = relative_path(finding, root)
        rule = runtime_of(finding.code, finding.message)
        if path is not None and rule is not None:
            sites.append(_Site(index, path, finding.start.row, finding.end.row, finding, rule))
    return sites


def judge(
    findings: Sequence[Finding],
    runs: Iterable[RunOutcome],
    root: Path,
    scopes: Optional[dict[str, Scope]] = None,
) -> Judgement:
    """The verdicts, and which failures they account for (the others: ``runtime_findings``)."""
    runs = list(runs)
    sites = _sites(findings, root)
    attribution = _Attribution(sites, runs)
    verdicts: list[Optional[Verdict]] = [None] * len(findings)
    for site in sites:
        verdict = attribution.confirmed.get(site.index)
        verdicts[site.index] = verdict or _undecided(site, runs, scopes or {})
    return Judgement(verdicts, attribution.explained)


def _chains(failures: Sequence[Failure]) -> list[list[Failure]]:
    """The exception chains of a run (each cause first, the exception raised last)."""
    chains: list[list[Failure]] = [[]]
    for failure in failures:
        chains[-1].append(failure)
        if not failure.cause:
            chains.append([])
    return [chain for chain in chains if chain]


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _notebook_program(path: Path) -> Optional[Program]:
    """A notebook's code cells as the one program its runs executed, or None for a script."""
    if path.suffix != NOTEBOOK_SUFFIX:
        return None
    try:
        return program_of(path.read_bytes())
    except OSError:
        return None


def _first_column(source: str, line: int) -> int:
    """Where the code of the line starts (a traceback gives the line only)."""
    lines = source.splitlines()
    if not 0 < line <= len(lines):
        return 1
    text = lines[line - 1]
    return len(text) - len(text.lstrip()) + 1


def _runtime_message(failure: Failure, run: RunOutcome) -> str:
    first_line = (failure.message.strip().splitlines() or [""])[0]
    where = f"test {failure.test}" if failure.test else run.entry.label
    text = f"`{failure.type}: {first_line}` raised under {run.profile} ({where})"
    known = device_error(failure.text)
    if known is not None:
        text += f": {known.meaning}"
    return text + "; no static finding explains it"


def runtime_findings(
    runs: Iterable[RunOutcome], root: Path, explained: set[int]
) -> list[tuple[Finding, Verdict]]:
    """A ``DEV900`` finding for every exception the runs saw that confirmed no finding, at the
    innermost frame of the project's code in its traceback: what the static rules missed."""
    found: dict[tuple[str, int, str], tuple[Finding, Verdict]] = {}
    for run in runs:
        for chain in _chains(run.failures):
            raised = chain[-1]
            if any(id(item) in explained for item in chain) or raised.type == "Refused":
                continue
            if not raised.frames:
                continue
            path, line = raised.frames[-1]
            key = (path, line, raised.text)
            if key in found:
                continue
            program = _notebook_program(root / path)
            source = program.source if program is not None else _read_text(root / path)
            column = _first_column(source, line)
            finding = Finding(
                str(root / path),
                RUNTIME_ERROR_CODE,
                RUNTIME_ERROR_NAME,
                _runtime_message(raised, run),
                Position(line, column),
                Position(line, column),
                line,
            )
            if program is not None:
                finding = program.in_cell(finding)  # rows of the cells' program, as a notebook's
            verdict = Verdict(CONFIRMED, run.profile, run.entry.label, raised.text, raised.test)
            found[key] = (finding, verdict)
    return sorted(found.values(), key=lambda pair: pair[0].sort_key())


def watched_lines(findings: Sequence[Finding], root: Path) -> dict[str, list[int]]:
    """The lines whose execution the runs must record: every line of every finding."""
    lines: dict[str, set[int]] = {}
    for finding in findings:
        path = relative_path(finding, root)
        if path is not None and runtime_of(finding.code, finding.message) is not None:
            lines.setdefault(path, set()).update(range(finding.start.row, finding.end.row + 1))
    return {path: sorted(rows) for path, rows in lines.items()}
