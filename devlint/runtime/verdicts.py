"""From what the runs saw to one verdict per finding.

- ``confirmed``: a profile that can show the rule raised the rule's PyTorch error, and the
  innermost frame of the traceback that sits on a finding sits on this one (or, for a discarded
  move or a plain tensor attribute, the error's CPU operand came from this line);
- ``not-reproduced``: a run executed the line and ran to completion without that error;
- ``unreachable``: no entry point executed the line;
- ``error``: the runs that could have reached it failed for another reason (given).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from devlint.diagnostics import Finding
from devlint.runtime.outcome import COMPLETED, REFUSED, Failure, RunOutcome
from devlint.runtime.profiles import GPU, RULES, VGPU, RuleRuntime

CONFIRMED, NOT_REPRODUCED, UNREACHABLE, ERROR = (
    "confirmed",
    "not-reproduced",
    "unreachable",
    "error",
)
VERDICTS = (CONFIRMED, NOT_REPRODUCED, UNREACHABLE, ERROR)

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
        for run in runs:
            for failure in run.failures:
                self._attribute(failure, run, sites)
            for warned in run.warnings:
                self._attribute_warning(warned.category, warned.message, warned.frames, run, sites)

    def _confirm(self, site: _Site, run: RunOutcome, detail: str, test: Optional[str]) -> None:
        verdict = Verdict(CONFIRMED, run.profile, run.entry.label, detail, test)
        self.confirmed.setdefault(site.index, verdict)

    def _attribute(self, failure: Failure, run: RunOutcome, sites: Sequence[_Site]) -> None:
        matching = [
            site
            for site in sites
            if (rule := RULES[site.finding.code]).error is not None
            and rule.error.search(failure.text)
            and run in _runs_for(rule, [run])
        ]
        for site in matching:
            if self._by_provenance(site, failure):
                self._confirm(site, run, failure.text, failure.test)
        framed = [site for site in matching if RULES[site.finding.code].provenance is None]
        for path, line in reversed(failure.frames):  # innermost first
            hit = [site for site in framed if site.covers(path, line)]
            for site in hit:
                self._confirm(site, run, failure.text, failure.test)
            if hit:
                return

    @staticmethod
    def _by_provenance(site: _Site, failure: Failure) -> bool:
        kind = RULES[site.finding.code].provenance
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
            rule = RULES[site.finding.code]
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
    rule = RULES[site.finding.code]
    relevant = [run for run in _runs_for(rule, runs) if _can_reach(run, site, scopes)]
    reaching = [(run, line) for run in relevant if (line := _reached(site, run)) is not None]
    for run, line in reaching:
        if run.status == COMPLETED:
            detail = f"line {_shown(site, line)} ran under {run.profile} without the error"
            return Verdict(NOT_REPRODUCED, run.profile, run.entry.label, detail)
    for run, line in reaching:
        detail = f"line {_shown(site, line)} ran, then the run failed: {_run_problem(run)}"
        return Verdict(ERROR, run.profile, run.entry.label, detail)
    for run in relevant:
        if run.status != COMPLETED:
            detail = f"the run stopped before line {_shown(site, site.first)}: {_run_problem(run)}"
            return Verdict(ERROR, run.profile, run.entry.label, detail)
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
    runs = list(runs)
    sites = []
    for index, finding in enumerate(findings):
        path = relative_path(finding, root)
        if path is not None and finding.code in RULES:
            sites.append(_Site(index, path, finding.start.row, finding.end.row, finding))
    confirmed = _Attribution(sites, runs).confirmed
    verdicts: list[Optional[Verdict]] = [None] * len(findings)
    for site in sites:
        verdicts[site.index] = confirmed.get(site.index) or _undecided(site, runs, scopes or {})
    return verdicts


def watched_lines(findings: Sequence[Finding], root: Path) -> dict[str, list[int]]:
    """The lines whose execution the runs must record: every line of every finding."""
    lines: dict[str, set[int]] = {}
    for finding in findings:
        path = relative_path(finding, root)
        if path is not None and finding.code in RULES:
            lines.setdefault(path, set()).update(range(finding.start.row, finding.end.row + 1))
    return {path: sorted(rows) for path, rows in lines.items()}
