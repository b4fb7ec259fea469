"""The command line: a thin layer that parses options and hands over to the API."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, Optional

import click

from devlint import __version__
from devlint.api import lint_paths, lint_stdin
from devlint.baseline import BaselineError, SourceLines, load_baseline, new_findings
from devlint.config import ConfigError, ConfigResolver, RuleSelection, split_selectors
from devlint.discovery import PathError
from devlint.progress import progress_bar
from devlint.report import FORMATS, ReportOptions, RunSummary, renderer
from devlint.rule_info import explanation, rule_to_json, rules_table, style_markdown
from devlint.rules import ALL_RULES, RULES_BY_CODE

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_SUBCOMMANDS = ("check", "explain", "rules")


def _fail(message: str) -> NoReturn:
    click.echo(f"devlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="devlint")
def cli() -> None:
    """Find PyTorch device bugs before they reach a GPU box.

    `devlint PATHS` is short for `devlint check PATHS`.
    """


_SELECTOR_HELP = "Comma-separated rule codes or prefixes (DEV001, DEV00, ALL); repeatable."
_FORCE_EXCLUDE_HELP = "Apply excludes to paths named on the command line too (for pre-commit)."
_EXIT_ON_FIX_HELP = "Exit 1 when a fix changed a file, even if nothing remains (pre-commit)."
_CONFIG_HELP = "A pyproject.toml (its [tool.devlint]) or devlint.toml to use for every file."
_BASELINE_HELP = "Report only the findings this baseline file does not record."
_WRITE_BASELINE_HELP = "Record the findings in this baseline file (for legacy code) and exit 0."
_BASELINE_PATH = click.Path(path_type=Path, dir_okay=False)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, help=f"Enable only these rules. {_SELECTOR_HELP}")
@click.option("--ignore", multiple=True, help=f"Disable these rules. {_SELECTOR_HELP}")
@click.option("--extend-select", multiple=True, help=f"Enable these too. {_SELECTOR_HELP}")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text",
              show_default=True, help="Output format.")  # fmt: skip
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found.")
@click.option("--statistics", is_flag=True, help="Count the findings per rule.")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--no-progress", is_flag=True, help="No progress bar (else shown on a terminal).")
@click.option("--baseline", "baseline_file", type=_BASELINE_PATH, help=_BASELINE_HELP)
@click.option("--write-baseline", "write_baseline_file", type=_BASELINE_PATH,
              help=_WRITE_BASELINE_HELP)  # fmt: skip
@click.option("--force-exclude", is_flag=True, help=_FORCE_EXCLUDE_HELP)
@click.option("--stdin-filename", help="The name to lint standard input as (with the path `-`).")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help=_CONFIG_HELP)  # fmt: skip
@click.option("--fix", is_flag=True, help="Apply the safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, apply unsafe fixes too.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help=_EXIT_ON_FIX_HELP)
def check(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    output_format: str,
    exit_zero: bool,
    statistics: bool,
    quiet: bool,
    no_cache: bool,
    no_progress: bool,
    baseline_file: Optional[Path],
    write_baseline_file: Optional[Path],
    force_exclude: bool,
    stdin_filename: Optional[str],
    config_file: Optional[Path],
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    exit_non_zero_on_fix: bool,
) -> None:
    """Lint PATHS (default: the current folder) and report device bugs."""
    selection = RuleSelection(
        split_selectors(select) if select else None,
        split_selectors(extend_select),
        split_selectors(ignore),
    )
    try:
        resolver = ConfigResolver(selection, config_file)
        recorded = load_baseline(baseline_file) if baseline_file else None  # fails before linting
        lines = SourceLines()
        reading_stdin = paths == (Path("-"),) or bool(stdin_filename and not paths)
        if reading_stdin and (fix or diff):
            _fix_stdin(stdin_filename or "-", resolver, unsafe_fixes, diff)
        if fix or diff:
            targets = paths or (Path("."),)
            _fix_paths(
                targets, resolver, force_exclude, unsafe_fixes, diff,
                exit_non_zero_on_fix, exit_zero, output_format, quiet, statistics,
            )  # fmt: skip
        if reading_stdin:
            data = click.get_binary_stream("stdin").read()
            summary = lint_stdin(data, stdin_filename or "-", resolver, force_exclude)
            lines = SourceLines({stdin_filename or "-": data})
        else:
            with progress_bar(enabled=not (quiet or no_progress)) as progress:
                summary = lint_paths(paths or (Path("."),), resolver, force_exclude, progress)
        if write_baseline_file is not None:
            _write_baseline(summary, write_baseline_file, lines, quiet)
        if baseline_file is not None and recorded is not None:
            summary.findings = new_findings(summary.findings, baseline_file, recorded, lines)
    except (ConfigError, PathError, BaselineError) as error:
        _fail(str(error))
    _report(summary, output_format, quiet, statistics)
    if summary.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if summary.findings and not exit_zero else EXIT_CLEAN)


def _write_baseline(
    summary: RunSummary, baseline: Path, lines: SourceLines, quiet: bool
) -> NoReturn:
    from devlint.baseline import write_baseline

    count = write_baseline(baseline, summary.findings, lines)
    if not quiet:
        click.echo(
            f"devlint: recorded {count} finding{'' if count == 1 else 's'} in {baseline}", err=True
        )
    for problem in summary.errors:
        click.echo(f"devlint: error in {problem.path}: {problem.detail}", err=True)
    sys.exit(EXIT_ERROR if summary.errors else EXIT_CLEAN)


def _report(summary: RunSummary, output_format: str, quiet: bool, statistics: bool) -> None:
    out = click.get_text_stream("stdout")
    options = ReportOptions(color=out.isatty(), quiet=quiet, statistics=statistics)
    renderer(output_format)(summary, out, options)
    for problem in summary.errors:
        click.echo(f"devlint: error in {problem.path}: {problem.detail}", err=True)


def _fix_paths(
    paths: Sequence[Path],
    resolver: ConfigResolver,
    force_exclude: bool,
    unsafe: bool,
    diff: bool,
    exit_non_zero_on_fix: bool,
    exit_zero: bool,
    output_format: str,
    quiet: bool,
    statistics: bool,
) -> NoReturn:
    from devlint.fixing import fix_paths, unified_diff

    run = fix_paths(paths, resolver, force_exclude, unsafe, write=not diff)
    if diff:
        for outcome in run.changed_files:
            click.echo(unified_diff(outcome), nl=False)
        count = run.fixed
        click.echo(f"Would fix {count} problem{'' if count == 1 else 's'}.", err=True)
        sys.exit(EXIT_ERROR if run.summary.errors else EXIT_FINDINGS if count else EXIT_CLEAN)
    run.summary.fixed = run.fixed
    _report(run.summary, output_format, quiet, statistics)
    if run.summary.errors:
        sys.exit(EXIT_ERROR)
    remaining = bool(run.summary.findings) and not exit_zero
    changed = exit_non_zero_on_fix and bool(run.changed_files)
    sys.exit(EXIT_FINDINGS if remaining or changed else EXIT_CLEAN)


def _fix_stdin(filename: str, resolver: ConfigResolver, unsafe: bool, diff: bool) -> NoReturn:
    """Standard input fixed to standard output (or as a diff), as editors expect."""
    from devlint.api import Linter
    from devlint.fixing import fix_source, unified_diff

    data = click.get_binary_stream("stdin").read()
    outcome = fix_source(filename, data, Linter(resolver).rules_for(Path(filename)), unsafe)
    if outcome.error is not None:
        _fail(f"{filename}: {outcome.error}")
    if diff:
        click.echo(unified_diff(outcome), nl=False)
    else:
        click.echo(outcome.fixed, nl=False)
    sys.exit(EXIT_FINDINGS if outcome.result.findings else EXIT_CLEAN)


_INFO_FORMAT = click.option("--format", "output_format", type=click.Choice(("text", "json")),
                            default="text", show_default=True, help="Output format.")  # fmt: skip


@cli.command()
@click.argument("code")
@_INFO_FORMAT
def explain(code: str, output_format: str) -> None:
    """Print the documentation of the rule CODE (for example DEV001)."""
    rule = RULES_BY_CODE.get(code.upper())
    if rule is None:
        _fail(f"unknown rule code {code!r}; `devlint rules` lists them")
    if output_format == "json":
        click.echo(json.dumps(rule_to_json(rule), indent=2))
        return
    text = explanation(rule)
    # Markdown when piped (it renders anywhere); headings and code set off on a colour terminal.
    click.echo(style_markdown(text) if click.get_text_stream("stdout").isatty() else text, nl=False)


@cli.command("rules")
@_INFO_FORMAT
def list_rules(output_format: str) -> None:
    """List every rule with its code, name, default state and whether it can fix."""
    if output_format == "json":
        click.echo(json.dumps([rule_to_json(rule) for rule in ALL_RULES], indent=2))
        return
    click.echo(rules_table(ALL_RULES, click.get_text_stream("stdout").isatty()), nl=False)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    # `devlint src/` means `devlint check src/`; only --help and --version belong to the group.
    if not args or (args[0] not in _SUBCOMMANDS and args[0] not in ("-h", "--help", "--version")):
        args.insert(0, "check")
    cli.main(args, prog_name="devlint")


if __name__ == "__main__":
    main()
