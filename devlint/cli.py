"""The command line: a thin layer that parses options and hands over to the API."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, Optional

import click

from devlint import __version__
from devlint.api import lint_paths, lint_stdin
from devlint.config import ConfigError, ConfigResolver, RuleSelection, split_selectors
from devlint.discovery import PathError
from devlint.report import FORMATS, ReportOptions, renderer
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
_CONFIG_HELP = "A pyproject.toml (its [tool.devlint]) or devlint.toml to use for every file."


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
@click.option("--force-exclude", is_flag=True, help=_FORCE_EXCLUDE_HELP)
@click.option("--stdin-filename", help="The name to lint standard input as (with the path `-`).")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help=_CONFIG_HELP)  # fmt: skip
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
    force_exclude: bool,
    stdin_filename: Optional[str],
    config_file: Optional[Path],
) -> None:
    """Lint PATHS (default: the current folder) and report device bugs."""
    selection = RuleSelection(
        split_selectors(select) if select else None,
        split_selectors(extend_select),
        split_selectors(ignore),
    )
    try:
        resolver = ConfigResolver(selection, config_file)
        if paths == (Path("-"),) or (stdin_filename and not paths):
            data = click.get_binary_stream("stdin").read()
            summary = lint_stdin(data, stdin_filename or "-", resolver, force_exclude)
        else:
            summary = lint_paths(paths or (Path("."),), resolver, force_exclude)
    except (ConfigError, PathError) as error:
        _fail(str(error))
    out = click.get_text_stream("stdout")
    options = ReportOptions(color=out.isatty(), quiet=quiet, statistics=statistics)
    renderer(output_format)(summary, out, options)
    for problem in summary.errors:
        click.echo(f"devlint: internal error in {problem.path}: {problem.detail}", err=True)
    if summary.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if summary.findings and not exit_zero else EXIT_CLEAN)


@cli.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation of the rule CODE (for example DEV001)."""
    rule = RULES_BY_CODE.get(code.upper())
    if rule is None:
        _fail(f"unknown rule code {code!r}; `devlint rules` lists them")
    fix = "can fix" if rule.fixable else "no automatic fix"
    default = "on by default" if rule.default_enabled else "off by default"
    click.echo(f"# {rule.code} ({rule.name})\n\n{rule.summary}: {default}, {fix}.\n")
    click.echo(rule.documentation())


@cli.command("rules")
def list_rules() -> None:
    """List every rule with its code, name, default state and whether it can fix."""
    width = max(len(rule.name) for rule in ALL_RULES)
    click.echo(f"{'code':<7} {'name':<{width}}  {'default':<7}  {'fix':<3}  summary")
    for rule in ALL_RULES:
        default = "on" if rule.default_enabled else "off"
        fix = "yes" if rule.fixable else "no"
        click.echo(f"{rule.code:<7} {rule.name:<{width}}  {default:<7}  {fix:<3}  {rule.summary}")


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    # `devlint src/` means `devlint check src/`; only --help and --version belong to the group.
    if not args or (args[0] not in _SUBCOMMANDS and args[0] not in ("-h", "--help", "--version")):
        args.insert(0, "check")
    cli.main(args, prog_name="devlint")


if __name__ == "__main__":
    main()
