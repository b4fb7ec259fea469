"""``[tool.devlint]`` in pyproject.toml, merged with command-line flags into one frozen Settings."""

from __future__ import annotations

import fnmatch
import logging
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

import pathspec

from devlint.diagnostics import PARSE_ERROR_CODE
from devlint.rules import ALL_RULES
from devlint.torch_floor import (
    ACCELERATOR_CHOICES,
    ANY_ACCELERATOR,
    UNKNOWN_FLOOR,
    DeviceStyle,
    TorchFloor,
    parse_version,
    project_torch_floor,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

log = logging.getLogger("devlint")
ALL_CODES: tuple[str, ...] = tuple(rule.code for rule in ALL_RULES)
DEFAULT_CODES = frozenset(rule.code for rule in ALL_RULES if rule.default_enabled)
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".bzr", ".direnv", ".eggs", ".git", ".hg", ".mypy_cache", ".nox", ".pytype", ".ruff_cache",
    ".devlint_cache", ".svn", ".tox", ".venv", "__pypackages__", "_build", "buck-out", "build",
    "dist", "node_modules", "site-packages", "venv",
)  # fmt: skip
# What a folder's walk lints, as Ruff's `include` (gitignore-style patterns; named files are
# always linted). Markdown and reST pages join with `extend-include` or `--include-docs`.
DEFAULT_INCLUDE: tuple[str, ...] = ("*.py", "*.pyi", "*.ipynb")
DOCS_INCLUDE: tuple[str, ...] = ("*.md", "*.rst")
_LIST_KEYS = (
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "include", "extend-include",
    "fixable", "unfixable",
)  # fmt: skip
_BOOL_KEYS = ("respect-gitignore",)
_STRING_KEYS = ("output-format", "cache-dir")
# How fixes write a device: the torch floor (read from the project's metadata unless set) and
# the accelerators they pick from ("any", or "cuda" for CUDA-or-CPU only).
_DEVICE_KEYS = ("torch-version", "accelerators")
KNOWN_KEYS = frozenset((*_LIST_KEYS, *_BOOL_KEYS, *_STRING_KEYS, "per-file-ignores", *_DEVICE_KEYS))
OUTPUT_FORMATS = ("text", "json", "github", "sarif")
# Looked for in each folder from the file up, first found wins, as Ruff looks for
# .ruff.toml, ruff.toml, then a pyproject.toml with a [tool.ruff] table.
CONFIG_FILE_NAMES = (".devlint.toml", "devlint.toml", "pyproject.toml")
RUNTIME_KEYS = frozenset({"confirm"})  # [tool.devlint.confirm], read by devlint.runtime.settings


def absolute_path(path: Path) -> Path:
    """Absolute and free of `..`, without resolving symbolic links."""
    return Path(os.path.abspath(path))


class ConfigError(Exception):
    """A configuration or selector problem: reported in one line, exit code 2."""


def resolve_selectors(selectors: Iterable[str], origin: str) -> frozenset[str]:
    """Codes named by selectors: a full code, a prefix (``DEV00``), or ``ALL``."""
    codes: set[str] = set()
    for raw in selectors:
        selector = raw.strip()
        if selector == "ALL":
            codes.update(ALL_CODES)
            continue
        matched = [code for code in ALL_CODES if code.startswith(selector)] if selector else []
        if not matched:
            # As in Ruff, codes are case-sensitive: `dev001` selects nothing and is an error.
            upper = selector.upper()
            known = upper == "ALL" or any(code.startswith(upper) for code in ALL_CODES)
            hint = f" (rule codes are upper case: {upper!r})" if known and upper != selector else ""
            raise ConfigError(f"unknown rule code or prefix {raw!r} in {origin}{hint}")
        codes.update(matched)
    return frozenset(codes)


def _specificity(code: str, selectors: Iterable[str]) -> int:
    """How precisely selectors name ``code``: -1 not at all, 0 for ALL, else the prefix length."""
    best = -1
    for raw in selectors:
        selector = raw.strip()
        if selector == "ALL":
            best = max(best, 0)
        elif selector and code.startswith(selector):
            best = max(best, len(selector))
    return best


@dataclass(frozen=True)
class RuleSelection:
    """One layer of selection, as written in a pyproject.toml or on the command line."""

    select: Optional[tuple[str, ...]] = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    origin: str = "the command line"

    def apply(self, enabled: frozenset[str]) -> frozenset[str]:
        """This layer over the codes enabled so far. As in Ruff, the most specific selector wins
        (`--ignore ALL --extend-select DEV003` keeps DEV003); on a tie, ignore wins."""
        for selector in (*(self.select or ()), *self.extend_select, *self.ignore):
            resolve_selectors((selector,), self.origin)  # validates every selector, naming it
        result = set(enabled if self.select is None else ())
        for code in ALL_CODES:
            chosen = _specificity(code, (*(self.select or ()), *self.extend_select))
            ignored = _specificity(code, self.ignore)
            if chosen > ignored:
                result.add(code)
            elif ignored >= 0:
                result.discard(code)
        return frozenset(result)

    def ignores_parse_errors(self) -> bool:
        return PARSE_ERROR_CODE in resolve_selectors(self.ignore, self.origin)


@dataclass(frozen=True)
class ProjectConfig:
    """What one ``[tool.devlint]`` table says; ``root`` is its folder."""

    root: Path
    source: Optional[Path] = None
    selection: RuleSelection = field(default_factory=RuleSelection)
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: Optional[tuple[str, ...]] = None
    extend_exclude: tuple[str, ...] = ()
    include: Optional[tuple[str, ...]] = None
    extend_include: tuple[str, ...] = ()
    respect_gitignore: Optional[bool] = None
    fixable: Optional[tuple[str, ...]] = None
    unfixable: tuple[str, ...] = ()
    output_format: Optional[str] = None
    cache_dir: Optional[Path] = None
    torch_floor: Optional[TorchFloor] = None  # `torch-version`, where set
    accelerators: str = ANY_ACCELERATOR


@dataclass(frozen=True)
class Settings:
    """The effective settings for the files under one project root (`--show-settings` prints
    every field, so a new one shows up there without more code)."""

    root: Path
    enabled: frozenset[str]
    exclude: tuple[str, ...]
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...]
    include: tuple[str, ...] = DEFAULT_INCLUDE
    config_file: Optional[Path] = None  # where these settings were read from, if anywhere
    respect_gitignore: bool = True
    fixable: frozenset[str] = frozenset(ALL_CODES)  # codes whose fixes are offered
    output_format: Optional[str] = None
    cache_dir: Optional[Path] = None
    # The lowest torch the project supports, and where that was read: fixes use no newer API.
    torch_floor: TorchFloor = UNKNOWN_FLOOR
    accelerators: str = ANY_ACCELERATOR

    @property
    def device_style(self) -> DeviceStyle:
        return DeviceStyle(self.torch_floor, self.accelerators)

    def is_included(self, path: Path) -> bool:
        """Whether a folder's walk lints this file (files named on the command line always are).
        As in Ruff, a pattern without a slash matches the file's name, and one with a slash its
        path under the project root (``*`` crossing folders)."""
        relative: Optional[str] = None
        for pattern in self.include:
            if "/" not in pattern:
                if fnmatch.fnmatchcase(path.name, pattern):
                    return True
                continue
            if relative is None:
                relative = self._relative(path) or path.name
            if fnmatch.fnmatchcase(relative, pattern.lstrip("/")):
                return True
        return False

    @cached_property
    def _exclude_spec(self) -> pathspec.GitIgnoreSpec:
        return pathspec.GitIgnoreSpec.from_lines(self.exclude)

    def _relative(self, path: Path) -> Optional[str]:
        try:
            return absolute_path(path).relative_to(self.root).as_posix()
        except ValueError:
            return None

    def is_excluded(self, path: Path) -> bool:
        relative = self._relative(path)
        candidate = relative if relative is not None else path.name
        return bool(candidate) and candidate != "." and self._exclude_spec.match_file(candidate)

    @cached_property
    def _per_file_specs(self) -> tuple[tuple[pathspec.GitIgnoreSpec, frozenset[str]], ...]:
        return tuple(
            (pathspec.GitIgnoreSpec.from_lines([pattern]), codes)
            for pattern, codes in self.per_file_ignores
        )

    def codes_for(self, path: Path) -> frozenset[str]:
        """The enabled codes less the per-file ignores that match ``path``."""
        relative = self._relative(path) or path.name
        codes = self.enabled
        for spec, ignored in self._per_file_specs:
            if spec.match_file(relative):
                codes = codes - ignored
        return codes


def _string_list(table: Mapping[str, Any], key: str, origin: str) -> Optional[tuple[str, ...]]:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"`{key}` in {origin} must be a list of strings")
    return tuple(value)


def parse_project_config(table: Mapping[str, Any], root: Path, source: Path) -> ProjectConfig:
    origin = f"[tool.devlint] of {source}"
    unknown = sorted(set(table) - KNOWN_KEYS - RUNTIME_KEYS)
    if unknown:
        raise ConfigError(f"unknown key `{unknown[0]}` in {origin}")
    lists = {key: _string_list(table, key, origin) for key in _LIST_KEYS}
    selection = RuleSelection(
        lists["select"], lists["extend-select"] or (), lists["ignore"] or (), origin
    )
    selection.apply(DEFAULT_CODES)  # validates every selector now, naming the file
    resolve_selectors((*(lists["fixable"] or ()), *(lists["unfixable"] or ())), origin)
    respect_gitignore = table.get("respect-gitignore")
    if respect_gitignore is not None and not isinstance(respect_gitignore, bool):
        raise ConfigError(f"`respect-gitignore` in {origin} must be true or false")
    strings: dict[str, Optional[str]] = {}
    for key in _STRING_KEYS:
        value = table.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"`{key}` in {origin} must be a string")
        strings[key] = value
    output_format = strings["output-format"]
    if output_format is not None and output_format not in OUTPUT_FORMATS:
        choices = ", ".join(OUTPUT_FORMATS)
        raise ConfigError(f"`output-format` in {origin} must be one of {choices}")
    cache_dir = strings["cache-dir"]
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"`per-file-ignores` in {origin} must be a table of pattern = [codes]")
    ignores: list[tuple[str, tuple[str, ...]]] = []
    for pattern in per_file:
        listed = _string_list(per_file, pattern, origin)
        resolve_selectors(listed or (), origin)
        ignores.append((pattern, listed or ()))
    return ProjectConfig(
        root, source, selection, tuple(ignores), lists["exclude"], lists["extend-exclude"] or (),
        lists["include"], lists["extend-include"] or (), respect_gitignore, lists["fixable"],
        lists["unfixable"] or (), output_format,
        None if cache_dir is None else absolute_path(root / os.path.expanduser(cache_dir)),
        _torch_version(table, source, origin), _accelerators(table, origin),
    )  # fmt: skip


def _torch_version(table: Mapping[str, Any], source: Path, origin: str) -> Optional[TorchFloor]:
    value = table.get("torch-version")
    if value is None:
        return None
    version = parse_version(value) if isinstance(value, str) else None
    if version is None:
        raise ConfigError(f'`torch-version` in {origin} must be a version such as "2.4"')
    return TorchFloor(version, f"`torch-version` in {source.name}")


def _accelerators(table: Mapping[str, Any], origin: str) -> str:
    value = table.get("accelerators", ANY_ACCELERATOR)
    if value not in ACCELERATOR_CHOICES:
        choices = " or ".join(f'"{choice}"' for choice in ACCELERATOR_CHOICES)
        raise ConfigError(f"`accelerators` in {origin} must be {choices}")
    return str(value)


def load_config_file(path: Path, require_table: bool) -> Optional[ProjectConfig]:
    """The ``[tool.devlint]`` table of a pyproject.toml (or a devlint.toml's top level)."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"invalid TOML in {path}: {error}") from error
    if path.name == "pyproject.toml":
        table = document.get("tool", {}).get("devlint")
    else:
        table = document.get("tool", {}).get("devlint", document)
    if table is None:
        if require_table:
            raise ConfigError(f"{path} has no [tool.devlint] table")
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.devlint] in {path} must be a table")
    return parse_project_config(table, absolute_path(path).parent, absolute_path(path))


class ConfigResolver:
    """Finds the nearest ``[tool.devlint]`` above each path and merges the CLI flags over it."""

    def __init__(
        self, cli: RuleSelection, config_file: Optional[Path] = None,
        extend_include: Sequence[str] = (), cli_fixable: Optional[RuleSelection] = None,
    ) -> None:  # fmt: skip
        self._cli = cli
        self._cli_fixable = cli_fixable or RuleSelection()
        self._extend_include = tuple(extend_include)
        self._cli.apply(DEFAULT_CODES)  # validates the flags up front
        self._cli_fixable.apply(DEFAULT_CODES)
        self._fixed = load_config_file(config_file, require_table=True) if config_file else None
        self._by_folder: dict[Path, Settings] = {}

    def settings_for(self, path: Path) -> Settings:
        folder = absolute_path(path) if path.is_dir() else absolute_path(path).parent
        cached = self._by_folder.get(folder)
        if cached is None:
            project = self._fixed or self._nearest(folder) or ProjectConfig(Path.cwd())
            cached = self._by_folder[folder] = self._settings(project, folder)
            log.debug("%s: settings from %s", folder, project.source or "the defaults")
        return cached

    def _nearest(self, folder: Path) -> Optional[ProjectConfig]:
        for candidate in (folder, *folder.parents):
            for name in CONFIG_FILE_NAMES:
                path = candidate / name
                if path.is_file():
                    config = load_config_file(path, require_table=False)
                    if config is not None:
                        return config
        return None

    def _settings(self, project: ProjectConfig, folder: Path) -> Settings:
        enabled = self._cli.apply(project.selection.apply(DEFAULT_CODES))
        if not (project.selection.ignores_parse_errors() or self._cli.ignores_parse_errors()):
            enabled |= {PARSE_ERROR_CODE}  # a file that cannot be parsed is never silently passed
        exclude = (*(project.exclude or DEFAULT_EXCLUDE), *project.extend_exclude)
        ignores = tuple(
            (pattern, resolve_selectors(codes, "per-file-ignores"))
            for pattern, codes in project.per_file_ignores
        )
        include = (
            *(project.include or DEFAULT_INCLUDE),
            *project.extend_include,
            *self._extend_include,
        )
        fixable = self._cli_fixable.apply(
            RuleSelection(project.fixable, (), project.unfixable, str(project.source)).apply(
                frozenset(ALL_CODES)
            )
        )
        respect = project.respect_gitignore
        floor = project.torch_floor or project_torch_floor(folder)
        return Settings(
            project.root, enabled, exclude, ignores, include, project.source,
            True if respect is None else respect, fixable, project.output_format,
            project.cache_dir, floor, project.accelerators,
        )  # fmt: skip


def split_selectors(values: Sequence[str]) -> tuple[str, ...]:
    """``--select A,B --select C`` as ``("A", "B", "C")``."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())
