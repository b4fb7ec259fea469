"""Verdicts in text and JSON, next to the static findings they judge."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, TextIO

from devlint.config import ConfigResolver
from devlint.report import display_path
from devlint.report.json_format import finding_to_json
from devlint.runtime.confirm import ConfirmOptions, ConfirmReport, confirm_paths, default_progress
from devlint.runtime.device_rules import load_rules
from devlint.runtime.outcome import COMPLETED, FAILED, REFUSED, TESTS_FAILED, RunOutcome
from devlint.runtime.verdicts import CONFIRMED, VERDICTS, Verdict

_DETAIL_LINES = 3  # of a multi-line message (CUDA's carries four)


def _verdict_line(verdict: Optional[Verdict]) -> str:
    if verdict is None:
        return "  -> no runtime check for this rule"
    where = []
    if verdict.profile:
        where.append(f"under {verdict.profile}")
    if verdict.entry:
        where.append(f"({verdict.test or verdict.entry})")
    head = " ".join([verdict.status, *where])
    detail = "\n     ".join(verdict.detail.strip().splitlines()[:_DETAIL_LINES])
    return f"  -> {head}: {detail}" if detail else f"  -> {head}"


def _past(run: RunOutcome) -> str:
    if not run.patched:
        return ""
    lines = ", ".join(f"{path}:{line}" for path, line in run.patched)
    return f" (re-run with the device calls of {lines} on the CPU)"


def _run_lines(run: RunOutcome) -> list[str]:
    text = f"{run.entry.label} under {run.profile}{_past(run)}: {run.status} in {run.seconds:.1f} s"
    shown = run.status == TESTS_FAILED or not run.failures or run.status == REFUSED
    detail = run.detail.strip().splitlines()
    if run.status != COMPLETED and detail and shown:
        text += f" ({detail[0]})"
    if run.status == FAILED and not run.failures:  # an exit status: what the code printed
        return [text, *(f"  stderr: {line}" for line in detail[1:][-_DETAIL_LINES:])]
    return [text]


def render_text(report: ConfirmReport, out: TextIO) -> None:
    for finding, verdict in zip(report.summary.findings, report.verdicts):
        position = finding.where
        out.write(f"{display_path(finding.path)}:{position}: {finding.code} {finding.message}\n")
        out.write(_verdict_line(verdict) + "\n")
    if report.runs:
        out.write("Runs:\n")
        for run in report.runs:
            out.writelines(f"  {line}\n" for line in _run_lines(run))
            out.writelines(f"    note: {note}\n" for note in run.notes)
    elif report.summary.findings and not report.entries:
        out.write("No entry point: name a script, or use --entry module:function.\n")
    counts = Counter(verdict.status for verdict in report.verdicts if verdict is not None)
    parts = ", ".join(f"{counts[status]} {status}" for status in VERDICTS)
    out.write(f"{len(report.summary.findings)} findings: {parts}.\n")


def _verdict_json(verdict: Optional[Verdict]) -> Optional[dict[str, Any]]:
    if verdict is None:
        return None
    return {
        "status": verdict.status,
        "profile": verdict.profile,
        "entry": verdict.entry,
        "test": verdict.test,
        "detail": verdict.detail,
    }


def report_json(report: ConfirmReport) -> dict[str, Any]:
    return {
        "root": str(report.root),
        "device_rules": load_rules()[1],
        "findings": [
            {**finding_to_json(finding), "verdict": _verdict_json(verdict)}
            for finding, verdict in zip(report.summary.findings, report.verdicts)
        ],
        "runs": [
            {
                "entry": run.entry.label,
                "kind": run.entry.kind,
                "profile": run.profile,
                "status": run.status,
                "seconds": run.seconds,
                "detail": run.detail,
                "failed_tests": run.failed_tests,
                "patched": [{"path": path, "line": line} for path, line in run.patched],
                "notes": run.notes,
            }
            for run in report.runs
        ],
    }


def render_json(report: ConfirmReport, out: TextIO) -> None:
    json.dump(report_json(report), out, indent=2)
    out.write("\n")


def run_and_report(
    paths: Sequence[Path],
    resolver: ConfigResolver,
    options: ConfirmOptions,
    output_format: str,
    quiet: bool,
    out: TextIO,
) -> int:
    """Confirm, print the report; the exit code: 1 when a finding is confirmed, else 0."""
    report = confirm_paths(paths, resolver, options, None if quiet else default_progress)
    (render_json if output_format == "json" else render_text)(report, out)
    confirmed = any(verdict and verdict.status == CONFIRMED for verdict in report.verdicts)
    return 1 if confirmed else 0
