"""The one-shot modes of `devlint check`: --show-files, --show-settings, --add-noqa, and the
per-rule counts --show-fixes prints."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from devlint.api import Linter
from devlint.cache import CACHE_DIR_ENV, find_cache_dir
from devlint.config import ConfigResolver, absolute_path
from devlint.diagnostics import PARSE_ERROR_CODE, InternalError
from devlint.discovery import iter_python_files
from devlint.documents import is_document
from devlint.engine import Unreadable, decode, lint_source
from devlint.notebook import NOTEBOOK_SUFFIX
from devlint.rules.unused_noqa import UNUSED_NOQA_CODE
from devlint.suppression import add_noqa

if TYPE_CHECKING:
    from devlint.fixing import FixOutcome

log = logging.getLogger("devlint")


def cache_dir_for(flag: Optional[Path], configured: Optional[Path]) -> Path:
    """--cache-dir, else $DEVLINT_CACHE_DIR, else `cache-dir` in the settings, else the default
    (Ruff's order)."""
    if flag is not None:
        return flag
    if configured is not None and not os.environ.get(CACHE_DIR_ENV):
        return configured
    return find_cache_dir()


def show_files(paths: Sequence[Path], resolver: ConfigResolver, force_exclude: bool) -> str:
    """Every file a run would lint, absolute, sorted, one a line (Ruff's --show-files)."""
    found = iter_python_files(paths, resolver, force_exclude)
    files = sorted(str(absolute_path(path)) for path in found)
    return "".join(f"{file}\n" for file in files)


def _shown(value: Any) -> str:
    """A setting's value as TOML-like text: strings and paths quoted, sets sorted."""
    if isinstance(value, (frozenset, set)):
        value = sorted(value)
    if isinstance(value, Path) or dataclasses.is_dataclass(value):
        value = str(value)  # a torch floor reads "2.7 (from pyproject.toml:3)"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    return json.dumps(value)


def show_settings(paths: Sequence[Path], resolver: ConfigResolver, force_exclude: bool) -> str:
    """The settings resolved for the first file a run would lint (or the first path), every
    field of them, and the configuration file they come from (Ruff's --show-settings)."""
    first = next(iter(iter_python_files(paths, resolver, force_exclude)), paths[0])
    settings = resolver.settings_for(first)
    source = settings.config_file
    lines = [
        f"Resolved settings for: {json.dumps(str(absolute_path(first)))}",
        f"Settings path: {json.dumps(str(source)) if source else 'none (the defaults)'}",
        "",
    ]
    for item in dataclasses.fields(settings):
        lines.append(f"{item.name.replace('_', '-')} = {_shown(getattr(settings, item.name))}")
    return "\n".join(lines) + "\n"


def add_noqa_paths(
    paths: Sequence[Path], resolver: ConfigResolver, force_exclude: bool
) -> tuple[int, list[InternalError]]:
    """Add `# noqa: CODES` to the lines with findings, file by file, written atomically as the
    fixer writes; how many directives were added, and the files that could not be written.
    Notebooks and documents are left alone (their lines are inside JSON or prose)."""
    from devlint.fixing import encode_like, write_atomically

    linter = Linter(resolver)
    added = 0
    errors: list[InternalError] = []
    for path in iter_python_files(paths, resolver, force_exclude):
        if str(path).endswith(NOTEBOOK_SUFFIX) or is_document(str(path)):
            log.debug("--add-noqa: %s skipped (a notebook or document)", path)
            continue
        try:
            data = path.read_bytes()
        except OSError as error:
            errors.append(InternalError(str(path), f"cannot read: {error.strerror or error}"))
            continue
        result = linter.lint_bytes(path, data, str(path))
        wanted: dict[int, list[str]] = {}
        for finding in result.findings:
            if finding.code not in (PARSE_ERROR_CODE, UNUSED_NOQA_CODE):
                wanted.setdefault(finding.noqa_row, []).append(finding.code)
        text = decode(data)
        if not wanted or isinstance(text, Unreadable):
            continue
        edited, count = add_noqa(text, wanted)
        if not count:
            continue
        problem = write_atomically(path, data, encode_like(edited, data, str(path)))
        if problem is not None:
            errors.append(InternalError(str(path), problem))
            continue
        added += count
    return added, errors


def fixed_by_file(
    outcomes: Sequence[FixOutcome], resolver: ConfigResolver
) -> dict[str, dict[tuple[str, str], int]]:
    """For --show-fixes: per changed file, how many findings of each rule the fixes removed
    (the original's findings less those that remain)."""
    linter = Linter(resolver)
    fixed: dict[str, dict[tuple[str, str], int]] = {}
    for outcome in outcomes:
        rules = linter.rules_for(Path(outcome.path))
        before = lint_source(outcome.path, outcome.original.encode("utf-8"), rules).findings
        after = outcome.result.findings
        gone = Counter((f.code, f.name) for f in before) - Counter((f.code, f.name) for f in after)
        if gone:
            fixed[outcome.path] = dict(gone)
    return fixed
