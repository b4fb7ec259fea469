"""``path:line:col: CODE [*] message``, then a summary, as Ruff writes them."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import TextIO

import click

from devlint.report import (
    ReportOptions,
    RunSummary,
    applies,
    display_path,
    hidden_unsafe,
)

_Style = Callable[..., str]


def _plural(count: int, word: str, suffix: str = "s") -> str:
    return f"{count} {word}{'' if count == 1 else suffix}"


def _styler(options: ReportOptions) -> _Style:
    def style(text: str, **colours: object) -> str:
        return click.style(text, **colours) if options.color else text  # type: ignore[arg-type]

    return style


def render(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    style = _styler(options)
    if options.statistics:  # only the counts, as Ruff's --statistics
        render_statistics(run, out, options)
        return
    marker = f"[{style('*', fg='cyan')}] "
    for finding in run.findings:
        where = style(display_path(finding.path), bold=True)
        position = finding.where
        code = style(finding.code, fg="red", bold=True)
        fixable = marker if applies(finding, options.unsafe_fixes) else ""
        out.write(f"{where}:{position}: {code} {fixable}{finding.message}\n")
    if options.quiet:
        return
    if options.show_fixes and run.fixed_by_file:
        out.write("\n")  # set off from the findings, as Ruff does
        render_fixes(run, out, options)
        out.write("\n")
    if run.fixed:
        out.write(f"Fixed {_plural(run.fixed, 'problem')}, {len(run.findings)} remaining.\n")
    checked = f"{_plural(run.files_checked, 'file')} checked"
    if run.baseline_hidden:
        checked += f", {run.baseline_hidden} hidden by the baseline"
    if run.findings:
        files = len({finding.path for finding in run.findings})
        out.write(
            f"Found {_plural(len(run.findings), 'problem')} in {_plural(files, 'file')} "
            f"({checked}).\n"
        )
    else:
        out.write(f"All checks passed! ({checked})\n")
    _render_fix_hint(run, out, options, marker)


def _render_fix_hint(run: RunSummary, out: TextIO, options: ReportOptions, marker: str) -> None:
    """Ruff's closing lines: how many findings `--fix` would fix, and how many more
    `--unsafe-fixes` would (only while unsafe fixes are neither enabled nor refused)."""
    applicable = sum(applies(finding, options.unsafe_fixes) for finding in run.findings)
    hidden = sum(hidden_unsafe(finding, options.unsafe_fixes) for finding in run.findings)
    more = _plural(hidden, "hidden fix", "es")
    if applicable and hidden:
        out.write(
            f"{marker}{applicable} fixable with the `--fix` option "
            f"({more} can be enabled with the `--unsafe-fixes` option).\n"
        )
    elif applicable:
        out.write(f"{marker}{applicable} fixable with the `--fix` option.\n")
    elif hidden:
        out.write(f"No fixes available ({more} can be enabled with the `--unsafe-fixes` option).\n")


def render_fixes(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    """--show-fixes: what --fix fixed, per file and rule (Ruff's layout)."""
    paint = _styler(options)
    total = sum(sum(table.values()) for table in run.fixed_by_file.values())
    out.write(paint(f"Fixed {_plural(total, 'problem')}:", fg="green", bold=True) + "\n")
    for path in sorted(run.fixed_by_file):
        table = run.fixed_by_file[path]
        out.write(f"- {paint(display_path(path), bold=True)}:\n")
        width = max(len(str(count)) for count in table.values())
        for (code, name), count in sorted(table.items(), key=lambda item: (-item[1], item[0])):
            out.write(f"    {count:>{width}} × {paint(code, fg='red', bold=True)} ({name})\n")  # noqa: RUF001


def statistics(run: RunSummary, options: ReportOptions) -> list[dict[str, object]]:
    """Per rule: code, name, count and whether `--fix` fixes any of them, most frequent first."""
    counts = Counter((finding.code, finding.name) for finding in run.findings)
    fixable = {
        (finding.code, finding.name)
        for finding in run.findings
        if applies(finding, options.unsafe_fixes)
    }
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        {"code": code, "name": name, "count": count, "fixable": (code, name) in fixable}
        for (code, name), count in rows
    ]


def render_statistics_json(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    json.dump(statistics(run, options), out, indent=2)
    out.write("\n")


def render_statistics(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    """Ruff's layout: count, code, `[*]` or `[ ]` (when any rule is fixable), name."""
    paint = _styler(options)
    rows = statistics(run, options)
    count_width = max((len(str(row["count"])) for row in rows), default=1)
    code_width = max((len(str(row["code"])) for row in rows), default=1)
    any_fixable = any(row["fixable"] for row in rows)
    for row in rows:
        marker = ("[*] " if row["fixable"] else "[ ] ") if any_fixable else ""
        count = f"{row['count']:>{count_width}}"
        code = f"{row['code']:<{code_width}}"
        out.write(f"{paint(count, bold=True)}\t{paint(code, fg='red', bold=True)}\t{marker}")
        out.write(f"{row['name']}\n")
