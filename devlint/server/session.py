"""The server's side of the engine: settings, the files' configuration, and one lint or fix.

Everything here calls the engine the CLI calls (``lint_source``, ``fix_source``, the config
resolver, the baseline), so an editor sees what `devlint check` prints. The protocol layer runs
these methods on one worker thread: rule sets keep per-file state and are not shared across
threads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from devlint.api import RuleSets, rule_set_for
from devlint.baseline import BaselineError, SourceLines, load_baseline, new_findings
from devlint.complexity import MAX_FILE_BYTES
from devlint.config import ConfigError, ConfigResolver, RuleSelection, split_selectors
from devlint.diagnostics import Finding, InternalError
from devlint.engine import RuleSet, lint_source
from devlint.fixing import fix_source
from devlint.server.incremental import IncrementalParser
from devlint.trusted_parse import parsing_with

_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_CONFIG_NAMES = ("pyproject.toml",)


def _selectors(value: Any) -> tuple[str, ...]:
    """A list of selectors, or one comma-separated string, as editors' settings give them."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    return split_selectors([str(item) for item in items])


def _option(options: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in options:
            return options[name]
    return None


@dataclass(frozen=True)
class ServerSettings:
    """The CLI's options, as `initializationOptions` or `workspace/didChangeConfiguration`
    give them (camelCase or the CLI's kebab-case)."""

    select: Optional[tuple[str, ...]] = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    config: Optional[str] = None
    baseline: Optional[str] = None

    @classmethod
    def from_options(cls, raw: Any) -> ServerSettings:
        options: Any = raw if isinstance(raw, Mapping) else {}
        nested = options.get("devlint")  # VS Code-style sections: {"devlint": {...}}
        if isinstance(nested, Mapping):
            options = nested
        select = _option(options, "select")
        config = _option(options, "config", "configuration", "configFile", "config-file")
        baseline = _option(options, "baseline")
        return cls(
            select=_selectors(select) if select is not None else None,
            extend_select=_selectors(_option(options, "extendSelect", "extend-select")),
            ignore=_selectors(_option(options, "ignore")),
            unsafe_fixes=bool(_option(options, "unsafeFixes", "unsafe-fixes", "unsafe_fixes")),
            config=str(config) if config else None,
            baseline=str(baseline) if baseline else None,
        )

    def selection(self) -> RuleSelection:
        return RuleSelection(self.select, self.extend_select, self.ignore, "the editor's settings")


@dataclass
class LintOutcome:
    """One lint of one document: findings, crashes inside devlint, or why it was not linted."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[InternalError] = field(default_factory=list)
    config_error: Optional[str] = None
    skipped: Optional[str] = None


def encode_source(text: str) -> bytes:
    """The editor's text as the file's bytes: in its coding cookie's encoding where it has one,
    so the engine decodes it as it decodes the file on disk."""
    for line in text.splitlines()[:2]:
        match = _CODING.match(line)
        if match is not None:
            try:
                return text.encode(match.group(1))
            except (LookupError, UnicodeEncodeError):
                break
    return text.encode("utf-8")


def _mtime(path: Path) -> Optional[int]:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


class LintSession:
    """Settings, configuration files re-read when they change, and warm rule sets."""

    def __init__(self, settings: ServerSettings, root: Optional[Path] = None) -> None:
        self.root = root or Path.cwd()
        self._rule_sets: RuleSets = {}
        self.parser = IncrementalParser()  # the analysis cache kept warm: the last parses
        self._baseline: Optional[tuple[Path, Optional[int], frozenset[Any]]] = None
        self.generation = 0  # counts configurations: a lint's result holds for one only
        self.configure(settings)

    def configure(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.generation += 1
        self._resolver: Optional[ConfigResolver] = None
        self._stamps: dict[Path, tuple[Optional[int], ...]] = {}
        self._baseline = None

    def _path(self, value: str) -> Path:
        path = Path(os.path.expanduser(value))
        return path if path.is_absolute() else self.root / path

    def _config_stamp(self, folder: Path) -> tuple[Optional[int], ...]:
        """The modification times of every configuration file that may apply to ``folder``:
        a few stat calls per lint, so an edited pyproject.toml applies without a restart."""
        candidates = [folder / name for name in _CONFIG_NAMES]
        candidates += [parent / name for parent in folder.parents for name in _CONFIG_NAMES]
        if self.settings.config:
            candidates.append(self._path(self.settings.config))
        return tuple(_mtime(candidate) for candidate in candidates)

    def stamp(self, path: Path) -> tuple[object, ...]:
        """What a lint of ``path`` depends on besides its text: the settings, the configuration
        files and the baseline. The same stamp and text give the same findings."""
        baseline = _mtime(self._path(self.settings.baseline)) if self.settings.baseline else None
        return (self.generation, self._config_stamp(path.parent), baseline)

    def resolver_for(self, path: Path) -> ConfigResolver:
        folder = path.parent
        stamp = self._config_stamp(folder)
        if self._resolver is None or self._stamps.get(folder, stamp) != stamp:
            config = self._path(self.settings.config) if self.settings.config else None
            self._resolver = ConfigResolver(self.settings.selection(), config)
            self._stamps = {}
        self._stamps[folder] = stamp
        return self._resolver

    def rules_for(self, path: Path) -> Optional[RuleSet]:
        """The rules for ``path``, or None where its settings exclude it."""
        settings = self.resolver_for(path).settings_for(path)
        if settings.is_excluded(path):
            return None
        return rule_set_for(settings, path, self._rule_sets)

    def lint(self, path: Path, text: str) -> LintOutcome:
        """Lint the editor's text of ``path`` as `devlint check PATH` lints the file."""
        data = encode_source(text)
        if len(data) > MAX_FILE_BYTES:
            size = len(data) // 1024
            return LintOutcome(skipped=f"{path} is {size} KiB, over devlint's size limit")
        try:
            rules = self.rules_for(path)
            recorded = self._recorded()
        except (ConfigError, BaselineError) as error:
            return LintOutcome(config_error=str(error))
        if rules is None:
            return LintOutcome(skipped=f"{path} is excluded by its configuration")
        shown = str(path)
        with parsing_with(lambda source: self.parser.parse(shown, source)):
            result = lint_source(shown, data, rules)
        findings = result.findings
        if recorded is not None:
            baseline, entries = recorded
            lines = SourceLines({str(path): data})
            findings = new_findings(findings, baseline, entries, lines)
        return LintOutcome(findings, result.errors)

    def _recorded(self) -> Optional[tuple[Path, frozenset[Any]]]:
        """The baseline's entries, read again when the file changes."""
        if not self.settings.baseline:
            return None
        path = self._path(self.settings.baseline)
        mtime = _mtime(path)
        if self._baseline is None or self._baseline[:2] != (path, mtime):
            self._baseline = (path, mtime, load_baseline(path))
        return path, self._baseline[2]

    def fix_all(self, path: Path, text: str, unsafe: Optional[bool] = None) -> Optional[str]:
        """The text with every applicable fix applied until stable, as `devlint --fix` would
        write it; None where nothing changes or the fix cannot be made."""
        data = encode_source(text)
        if len(data) > MAX_FILE_BYTES:
            return None
        try:
            rules = self.rules_for(path)
        except ConfigError:
            return None
        if rules is None:
            return None
        use_unsafe = self.settings.unsafe_fixes if unsafe is None else unsafe
        outcome = fix_source(str(path), data, rules, use_unsafe)
        if not outcome.changed:
            return None
        return outcome.fixed
