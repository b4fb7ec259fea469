"""The command line: a thin layer that parses options and hands over to the API."""

from __future__ import annotations

import json
import logging
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Optional

import click

from devlint import __version__
from devlint.api import lint_paths, lint_stdin
from devlint.baseline import (
    BaselineEntry,
    BaselineError,
    SourceLines,
    load_baseline,
    new_findings,
)
from devlint.commands import (
    add_noqa_paths,
    cache_dir_for,
    fixed_by_file,
    show_files,
    show_settings,
)
from devlint.config import (
    DOCS_INCLUDE,
    ConfigError,
    ConfigResolver,
    RuleSelection,
    split_selectors,
)
from devlint.diagnostics import Finding
from devlint.discovery import PathError
from devlint.parallel import default_jobs
from devlint.progress import progress_bar
from devlint.report import FORMATS, ReportOptions, RunSummary, renderer
from devlint.report.text import render_fixes, render_statistics, render_statistics_json
from devlint.rule_info import explanation, rule_to_json, rules_table, style_markdown
from devlint.rules import ALL_RULES, RULES_BY_CODE

if TYPE_CHECKING:  # the runtime companion is imported only when used
    from devlint.runtime.confirm import ConfirmOptions

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_SUBCOMMANDS = ("check", "explain", "rules", "confirm", "server")


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
_INCLUDE_DOCS_HELP = "Also lint the Python code blocks of Markdown and reST files in folders."
_CONFIRM_HELP = "Also run the code and give each finding a verdict (as `devlint confirm`)."
_OUTPUT_FORMAT_HELP = "Output format (default: `output-format` in the settings, else text)."
_FIX_ONLY_HELP = "Apply fixes, but neither report nor fail on the findings that remain."
_ADD_NOQA_HELP = "Add `# noqa: CODE` comments to the lines with findings, and exit."
_SHOW_SETTINGS_HELP = "Print the settings resolved for the first file, and exit."


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, help=f"Enable only these rules. {_SELECTOR_HELP}")
@click.option("--ignore", multiple=True, help=f"Disable these rules. {_SELECTOR_HELP}")
@click.option("--extend-select", multiple=True, help=f"Enable these too. {_SELECTOR_HELP}")
@click.option("--output-format", "--format", "output_format", type=click.Choice(FORMATS),
              default=None, help=_OUTPUT_FORMAT_HELP)  # fmt: skip
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found.")
@click.option("--statistics", is_flag=True, help="Print only the number of findings per rule.")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Processes to lint with (default: one per CPU).")  # fmt: skip
@click.option("--no-progress", is_flag=True, help="No progress bar (else shown on a terminal).")
@click.option("--baseline", "baseline_file", type=_BASELINE_PATH, help=_BASELINE_HELP)
@click.option("--write-baseline", "write_baseline_file", type=_BASELINE_PATH,
              help=_WRITE_BASELINE_HELP)  # fmt: skip
@click.option("--force-exclude", is_flag=True, help=_FORCE_EXCLUDE_HELP)
@click.option("--stdin-filename", help="The name to lint standard input as (with the path `-`).")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help=_CONFIG_HELP)  # fmt: skip
@click.option("--fix", is_flag=True, help="Apply the safe fixes.")
@click.option(
    "--unsafe-fixes/--no-unsafe-fixes",
    default=None,
    help="With --fix or --diff, apply unsafe fixes too (--no-: and hide the hint).",
)
@click.option("--fix-only", is_flag=True, help=_FIX_ONLY_HELP)
@click.option("--fixable", multiple=True, help=f"Rules whose fixes are offered. {_SELECTOR_HELP}")
@click.option("--unfixable", multiple=True, help=f"Rules whose fixes are not. {_SELECTOR_HELP}")
@click.option(
    "--show-fixes/--no-show-fixes",
    default=False,
    help="After --fix, list what was fixed, per file and rule.",
)
@click.option("--add-noqa", is_flag=True, help=_ADD_NOQA_HELP)
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help=_EXIT_ON_FIX_HELP)
@click.option("--confirm", "confirm_findings", is_flag=True, help=_CONFIRM_HELP)
@click.option("--include-docs", is_flag=True, help=_INCLUDE_DOCS_HELP)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the cache lives (default: .devlint_cache at the project root).",
)
@click.option("--show-files", is_flag=True, help="List the files that would be linted, and exit.")
@click.option("--show-settings", is_flag=True, help=_SHOW_SETTINGS_HELP)
@click.option("-v", "--verbose", is_flag=True, help="Log discovery, configuration and cache.")
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
    jobs: Optional[int],
    no_progress: bool,
    baseline_file: Optional[Path],
    write_baseline_file: Optional[Path],
    force_exclude: bool,
    stdin_filename: Optional[str],
    config_file: Optional[Path],
    fix: bool,
    unsafe_fixes: Optional[bool],
    fix_only: bool,
    fixable: tuple[str, ...],
    unfixable: tuple[str, ...],
    show_fixes: bool,
    add_noqa: bool,
    diff: bool,
    exit_non_zero_on_fix: bool,
    confirm_findings: bool,
    include_docs: bool,
    cache_dir: Optional[Path],
    show_files: bool,
    show_settings: bool,
    verbose: bool,
) -> None:
    """Lint PATHS (default: the current folder) and report device bugs."""
    if verbose:
        logging.basicConfig(level=logging.DEBUG, format="devlint: debug: %(message)s")
    fix = fix or fix_only
    selection = RuleSelection(
        split_selectors(select) if select else None,
        split_selectors(extend_select),
        split_selectors(ignore),
    )
    try:
        fixes = RuleSelection(
            split_selectors(fixable) if fixable else None, (), split_selectors(unfixable)
        )
        docs = DOCS_INCLUDE if include_docs else ()
        resolver = ConfigResolver(selection, config_file, docs, fixes)
        top = resolver.settings_for(Path.cwd())  # run-wide settings, as Ruff takes them
        output_format = output_format or top.output_format or "text"
        recorded = load_baseline(baseline_file) if baseline_file else None  # fails before linting
        if confirm_findings:
            refused = _not_with_confirm(
                {f"--format {output_format}": output_format not in ("text", "json"),
                 "--statistics": statistics, "--write-baseline": write_baseline_file is not None,
                 "--fix-only": fix_only, "--fix": fix, "--unsafe-fixes": bool(unsafe_fixes),
                 "--diff": diff, "--show-fixes": show_fixes, "--add-noqa": add_noqa,
                 "--show-files": show_files, "--show-settings": show_settings,
                 "--exit-non-zero-on-fix": exit_non_zero_on_fix, "--force-exclude": force_exclude,
                 "standard input": bool(stdin_filename) or paths == (Path("-"),)}
            )  # fmt: skip
            if refused:
                _fail(refused)
        if show_files or show_settings:
            _show(paths or (Path("."),), resolver, force_exclude, show_settings)
        if add_noqa:
            _add_noqa(paths or (Path("."),), resolver, force_exclude, quiet)
        if confirm_findings:
            _check_confirm(
                paths or (Path("."),), resolver, output_format, quiet or no_progress, jobs,
                (baseline_file, recorded) if baseline_file and recorded is not None else None,
                exit_zero,
            )  # fmt: skip
        lines = SourceLines()
        reading_stdin = paths == (Path("-"),) or bool(stdin_filename and not paths)
        if reading_stdin and (fix or diff):
            _fix_stdin(stdin_filename or "-", resolver, bool(unsafe_fixes), diff, fix_only)
        changed_files = False
        if fix or diff:
            summary = _apply_fixes(
                paths or (Path("."),), resolver, force_exclude, bool(unsafe_fixes), diff,
                show_fixes,
            )  # fmt: skip
            changed_files = bool(summary.fixed)
        elif reading_stdin:
            data = sys.stdin.buffer.read()
            summary = lint_stdin(data, stdin_filename or "-", resolver, force_exclude)
            lines = SourceLines({stdin_filename or "-": data})
        else:
            with progress_bar(enabled=not (quiet or no_progress)) as progress:
                summary = lint_paths(
                    paths or (Path("."),), resolver, force_exclude, progress,
                    jobs=jobs or default_jobs(),
                    cache_dir=None if no_cache else cache_dir_for(cache_dir, top.cache_dir),
                )  # fmt: skip
        if write_baseline_file is not None:
            _write_baseline(summary, write_baseline_file, lines, quiet)
        if baseline_file is not None and recorded is not None:
            reported = new_findings(summary.findings, baseline_file, recorded, lines)
            summary.baseline_hidden = len(summary.findings) - len(reported)
            summary.findings = reported
    except (ConfigError, PathError, BaselineError) as error:
        _fail(str(error))
    options = ReportOptions(
        color=sys.stdout.isatty(), quiet=quiet, statistics=statistics,
        unsafe_fixes=unsafe_fixes, show_fixes=show_fixes,
    )  # fmt: skip
    if fix_only:
        _report_fix_only(summary, options, exit_non_zero_on_fix)
    _report(summary, output_format, options)
    if summary.errors:
        sys.exit(EXIT_ERROR)
    remaining = bool(summary.findings) and not exit_zero
    sys.exit(EXIT_FINDINGS if remaining or (exit_non_zero_on_fix and changed_files) else EXIT_CLEAN)


def _show(
    paths: Sequence[Path], resolver: ConfigResolver, force_exclude: bool, settings: bool
) -> NoReturn:
    """--show-files and --show-settings: what would be linted, and with what."""
    text = (show_settings if settings else show_files)(paths, resolver, force_exclude)
    click.echo(text, nl=False)
    sys.exit(EXIT_CLEAN)


def _add_noqa(
    paths: Sequence[Path], resolver: ConfigResolver, force_exclude: bool, quiet: bool
) -> NoReturn:
    added, errors = add_noqa_paths(paths, resolver, force_exclude)
    for problem in errors:
        click.echo(f"devlint: error in {problem.path}: {problem.detail}", err=True)
    if added and not quiet:
        click.echo(f"Added {added} noqa directive{'' if added == 1 else 's'}.", err=True)
    sys.exit(EXIT_ERROR if errors else EXIT_CLEAN)


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


def _report(summary: RunSummary, output_format: str, options: ReportOptions) -> None:
    out = sys.stdout
    if options.statistics and output_format == "json":
        render_statistics_json(summary, out, options)
    elif options.statistics:
        render_statistics(summary, out, options)  # Ruff's text layout for any other format
    else:
        renderer(output_format)(summary, out, options)
    for problem in summary.errors:
        click.echo(f"devlint: error in {problem.path}: {problem.detail}", err=True)


def _report_fix_only(summary: RunSummary, options: ReportOptions, exit_on_fix: bool) -> NoReturn:
    """`--fix-only`: fix, say how many, and neither list nor fail on what remains (as Ruff)."""
    if not options.quiet:
        if options.show_fixes and summary.fixed_by_file:
            render_fixes(summary, sys.stdout, options)
        if summary.fixed:  # as Ruff, silent when nothing was fixed
            click.echo(f"Fixed {summary.fixed} problem{'' if summary.fixed == 1 else 's'}.")
    for problem in summary.errors:
        click.echo(f"devlint: error in {problem.path}: {problem.detail}", err=True)
    if summary.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if exit_on_fix and summary.fixed else EXIT_CLEAN)


def _apply_fixes(
    paths: Sequence[Path], resolver: ConfigResolver, force_exclude: bool, unsafe: bool, diff: bool,
    show_fixes: bool = False,
) -> RunSummary:  # fmt: skip
    """Fix the files (or, with ``diff``, print what would change and exit); the rest remains."""
    from devlint.fixing import fix_paths, unified_diff

    run = fix_paths(paths, resolver, force_exclude, unsafe, write=not diff)
    if show_fixes:
        run.summary.fixed_by_file = fixed_by_file(run.changed_files, resolver)
    if diff:
        for outcome in run.changed_files:
            click.echo(unified_diff(outcome), nl=False)
        count = run.fixed
        click.echo(f"Would fix {count} problem{'' if count == 1 else 's'}.", err=True)
        sys.exit(EXIT_ERROR if run.summary.errors else EXIT_FINDINGS if count else EXIT_CLEAN)
    run.summary.fixed = run.fixed
    return run.summary


def _fix_stdin(
    filename: str, resolver: ConfigResolver, unsafe: bool, diff: bool, fix_only: bool = False
) -> NoReturn:
    """Standard input fixed to standard output (or as a diff), as editors expect."""
    from devlint.api import Linter
    from devlint.fixing import fix_source, unified_diff

    data = sys.stdin.buffer.read()
    outcome = fix_source(filename, data, Linter(resolver).rules_for(Path(filename)), unsafe)
    if outcome.error is not None:
        _fail(f"{filename}: {outcome.error}")
    if diff:
        click.echo(unified_diff(outcome), nl=False)
    else:
        click.echo(outcome.fixed, nl=False)
    sys.exit(EXIT_FINDINGS if outcome.result.findings and not fix_only else EXIT_CLEAN)


_INFO_FORMAT = click.option("--format", "output_format", type=click.Choice(("text", "json")),
                            default="text", show_default=True, help="Output format.")  # fmt: skip


@cli.command()
@click.argument("code")
@_INFO_FORMAT
def explain(code: str, output_format: str) -> None:
    """Print the documentation of the rule CODE (for example DEV001)."""
    rule = RULES_BY_CODE.get(code.upper())
    if rule is None and code.upper() == "DEV900":  # the runtime companion's own finding
        from devlint.runtime.runtime_error import RuntimeErrorFinding as rule
    if rule is None:
        _fail(f"unknown rule code {code!r}; `devlint rules` lists them")
    if output_format == "json":
        click.echo(json.dumps(rule_to_json(rule), indent=2))
        return
    text = explanation(rule)
    # Markdown when piped (it renders anywhere); headings and code set off on a colour terminal.
    click.echo(style_markdown(text) if sys.stdout.isatty() else text, nl=False)


@cli.command("rules")
@_INFO_FORMAT
def list_rules(output_format: str) -> None:
    """List every rule with its code, name, default state and whether it can fix."""
    if output_format == "json":
        click.echo(json.dumps([rule_to_json(rule) for rule in ALL_RULES], indent=2))
        return
    click.echo(rules_table(ALL_RULES, sys.stdout.isatty()), nl=False)


_PROFILES = ("cpu-host", "vgpu", "mps", "gpu")  # devlint.runtime.profiles.PROFILES
_PROFILE_HELP = "Run under this profile (repeatable); default: those each finding's rule needs."
_TESTS_HELP = "Run the project's test suite with pytest (default: when a folder is named)."
_ROOT_HELP = "The project folder copied for each run (default: the nearest pyproject.toml/.git)."
_ARGS_HELP = (
    "Command-line arguments for the scripts run, as a shell splits them (default: each "
    "script's `args` in [tool.devlint.confirm])."
)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--profile", "profiles", multiple=True,
              type=click.Choice(_PROFILES), help=_PROFILE_HELP)  # fmt: skip
@click.option("--entry", "functions", multiple=True, metavar="MODULE:FUNCTION",
              help="Also run this function, with no arguments (repeatable).")  # fmt: skip
@click.option("--tests/--no-tests", default=None, help=_TESTS_HELP)
@click.option("--args", "script_args", metavar="ARGS", help=_ARGS_HELP)
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per run.")
@click.option("--memory-mb", type=int, default=8192, show_default=True,
              help="Memory limit of each run (MB).")  # fmt: skip
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), help=_ROOT_HELP)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs at once.")  # fmt: skip
@click.option("--select", multiple=True, help=f"Enable only these rules. {_SELECTOR_HELP}")
@click.option("--ignore", multiple=True, help=f"Disable these rules. {_SELECTOR_HELP}")
@click.option("--format", "output_format", type=click.Choice(("text", "json")), default="text",
              show_default=True, help="Output format.")  # fmt: skip
@click.option("-q", "--quiet", is_flag=True, help="No progress messages.")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help=_CONFIG_HELP)  # fmt: skip
def confirm(
    paths: tuple[Path, ...],
    profiles: tuple[str, ...],
    functions: tuple[str, ...],
    tests: Optional[bool],
    script_args: Optional[str],
    timeout: float,
    memory_mb: int,
    root: Optional[Path],
    jobs: int,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    output_format: str,
    quiet: bool,
    config_file: Optional[Path],
) -> None:
    """Lint PATHS, run the code, and say which findings are real.

    Each script (and the test suite, and each --entry) runs in a child process in a temporary
    copy of the project, under the profiles that can show each finding: cpu-host (no GPU) and
    vgpu (a virtual GPU on a CPU-only torch). Exit 1 when a finding is confirmed.
    """
    # The runtime companion loads only here: the static linter never needs it.
    from devlint.runtime.confirm import ConfirmOptions
    from devlint.runtime.sandbox import Limits

    selection = RuleSelection(split_selectors(select) if select else None, (),
                              split_selectors(ignore))  # fmt: skip
    limits = Limits(timeout=timeout, memory_mb=memory_mb)
    try:
        args = None if script_args is None else tuple(shlex.split(script_args))
    except ValueError as error:
        _fail(f"--args: {error}")
    options = ConfirmOptions(profiles, functions, tests, limits, root, jobs, args)
    try:
        resolver = ConfigResolver(selection, config_file)
        _run_confirm(paths or (Path("."),), resolver, options, output_format, quiet)
    except (ConfigError, PathError) as error:
        _fail(str(error))


def _not_with_confirm(given: dict[str, bool]) -> Optional[str]:
    """Why `check --confirm` refuses the options given, if it does: it runs the code and
    prints verdicts (text or JSON), so it writes no fixes, no other report, no baseline."""
    refused = [option for option, present in given.items() if present]
    if not refused:
        return None
    return f"{refused[0]} cannot be used with --confirm (it runs the code and reports verdicts)"


def _check_confirm(
    paths: Sequence[Path], resolver: ConfigResolver, output_format: str, quiet: bool,
    jobs: Optional[int], baseline: Optional[tuple[Path, frozenset[BaselineEntry]]],
    exit_zero: bool,
) -> NoReturn:  # fmt: skip
    """`check --confirm`: -j is the runs at once; a baseline hides the findings it records
    before anything runs."""
    from devlint.runtime.confirm import ConfirmOptions

    keep = None
    if baseline is not None:
        baseline_file, recorded = baseline

        def keep(findings: list[Finding]) -> list[Finding]:
            return new_findings(findings, baseline_file, recorded, SourceLines())

    options = ConfirmOptions(jobs=jobs or 1, keep=keep)
    _run_confirm(paths, resolver, options, output_format, quiet, exit_zero)


def _run_confirm(
    paths: Sequence[Path], resolver: ConfigResolver, options: ConfirmOptions,
    output_format: str, quiet: bool, exit_zero: bool = False,
) -> NoReturn:  # fmt: skip
    from devlint.runtime.report import run_and_report
    from devlint.runtime.sandbox import SandboxError

    try:
        code = run_and_report(paths, resolver, options, output_format, quiet, sys.stdout)
    except SandboxError as error:
        _fail(str(error))
    sys.exit(EXIT_CLEAN if exit_zero and code == EXIT_FINDINGS else code)


@cli.command()
@click.option("--stdio", is_flag=True, help="Talk over standard input and output (the default).")
def server(stdio: bool) -> None:
    """Run the language server over standard input and output (needs `devlint[server]`).

    Editors get findings as you type, quick fixes, `source.fixAll.devlint` and rule docs on
    hover; see the README's "Editors" section for set-ups.
    """
    try:
        from devlint.server.protocol import run
    except ImportError as error:
        _fail(f"`devlint server` needs pygls ({error}): pip install 'devlint[server]'")
    run()


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    # `devlint src/` means `devlint check src/`; only --help and --version belong to the group.
    if not args or (args[0] not in _SUBCOMMANDS and args[0] not in ("-h", "--help", "--version")):
        args.insert(0, "check")
    cli.main(args, prog_name="devlint")


if __name__ == "__main__":
    main()
