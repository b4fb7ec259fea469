"""``path:line:col: CODE message``, then a summary line."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

import click

from devlint.report import ReportOptions, RunSummary, display_path


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def render(run: RunSummary, out: TextIO, options: ReportOptions) -> None:
    def style(text: str, **colours: object) -> str:
        return click.style(text, **colours) if options.color else text  # type: ignore[arg-type]

    for finding in run.findings:
        where = style(display_path(finding.path), bold=True)
        position = finding.where
        code = style(finding.code, fg="red", bold=True)
        out.write(f"{where}:{position}: {code} {finding.message}\n")
    if options.statistics:
        _render_statistics(run, out)
    if options.quiet:
        return
    if run.fixed:
        out.write(f"Fixed {_plural(run.fixed, 'problem')}, {len(run.findings)} remaining.\n")
    if run.findings:
        files = len({finding.path for finding in run.findings})
        out.write(
            f"Found {_plural(len(run.findings), 'problem')} in {_plural(files, 'file')} "
            f"({_plural(run.files_checked, 'file')} checked).\n"
        )
    else:
        out.write(f"All checks passed! ({_plural(run.files_checked, 'file')} checked)\n")


def _render_statistics(run: RunSummary, out: TextIO) -> None:
    counts = Counter((finding.code, finding.name) for finding in run.findings)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    width = max((len(str(count)) for _, count in rows), default=1)
    for (code, name), count in rows:
        out.write(f"{count:>{width}}\t{code}\t{name}\n")
