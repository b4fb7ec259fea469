"""From the paths a user gives to the files to lint (Python, notebooks, and the documents
`include` names), honouring .gitignore and excludes."""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pathspec

from devlint.config import ConfigResolver, absolute_path

log = logging.getLogger("devlint")


class PathError(Exception):
    """A path the user named does not exist: exit code 2."""


@dataclass(frozen=True)
class _IgnoreFile:
    base: Path
    spec: pathspec.GitIgnoreSpec

    def ignores(self, path: Path, is_dir: bool) -> bool:
        try:
            relative = path.relative_to(self.base).as_posix()
        except ValueError:
            return False
        return self.spec.match_file(relative + "/" if is_dir else relative)


def _read_ignore_file(file: Path, base: Path) -> Optional[_IgnoreFile]:
    try:
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    log.debug("ignore patterns from %s", file)
    return _IgnoreFile(base, pathspec.GitIgnoreSpec.from_lines(lines))


def _read_gitignore(folder: Path) -> Optional[_IgnoreFile]:
    return _read_ignore_file(folder / ".gitignore", folder)


_CORE_SECTION = re.compile(r"^\s*\[\s*core\s*\]", re.IGNORECASE)
_SECTION = re.compile(r"^\s*\[")
_EXCLUDES_FILE = re.compile(r"^\s*excludesfile\s*=\s*(.*?)\s*$", re.IGNORECASE)


def _configured_excludes_file(config: Path) -> Optional[str]:
    """``core.excludesFile`` in one git configuration file, if it sets it."""
    try:
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    value: Optional[str] = None
    in_core = False
    for line in lines:
        if _SECTION.match(line):
            in_core = bool(_CORE_SECTION.match(line))
        elif in_core and (match := _EXCLUDES_FILE.match(line)):
            value = match.group(1).strip('"')
    return value


@functools.lru_cache(maxsize=1)
def global_excludes_file() -> Optional[Path]:
    """git's global excludes file, as git and Ruff find it: ``core.excludesFile`` in the user's
    git configuration, else ``$XDG_CONFIG_HOME/git/ignore`` (``~/.config/git/ignore``)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    configured: Optional[str] = None
    for config in (Path(xdg) / "git" / "config", Path(os.path.expanduser("~/.gitconfig"))):
        configured = _configured_excludes_file(config) or configured  # ~/.gitconfig wins
    if configured:
        return Path(os.path.expanduser(configured))
    return Path(xdg) / "git" / "ignore"


def _repository_ignores(root: Path) -> list[_IgnoreFile]:
    """The repository's own `.git/info/exclude` and the user's global excludes file, both
    relative to the repository root, as git reads them."""
    found: list[_IgnoreFile] = []
    for file in (root / ".git" / "info" / "exclude", global_excludes_file()):
        ignore = _read_ignore_file(file, root) if file is not None else None
        if ignore is not None:
            found.append(ignore)
    return found


def _ancestor_gitignores(folder: Path) -> list[_IgnoreFile]:
    """The ignore files that apply to ``folder`` from above: the .gitignore files up to the top
    of its git repository, and that repository's exclude files."""
    found: list[_IgnoreFile] = []
    for ancestor in (folder, *folder.parents):
        ignore = _read_gitignore(ancestor) if ancestor != folder else None
        if ignore is not None:
            found.append(ignore)
        if (ancestor / ".git").exists():
            return [*_repository_ignores(ancestor), *found]
    return []  # not inside a git repository: only the .gitignore files within count


def iter_python_files(
    paths: Sequence[Path], resolver: ConfigResolver, force_exclude: bool
) -> Iterator[Path]:
    """Files to lint, stably ordered, each once; named files are linted unless ``force_exclude``."""
    seen: set[str] = set()
    for path in paths:
        if not os.path.lexists(path):
            raise PathError(f"{path}: no such file or directory")
        if path.is_dir():
            if force_exclude and resolver.settings_for(path).is_excluded(path):
                continue
            absolute = absolute_path(path)
            respect = resolver.settings_for(path).respect_gitignore
            # Like a folder excluded in the settings, a folder the user names is linted even when
            # a .gitignore above it ignores it.
            above = _ancestor_gitignores(absolute) if respect else []
            ignores = [i for i in above if not i.ignores(absolute, True)]
            found: Iterator[Path] = _walk(path, absolute, resolver, ignores, respect)
        elif not (force_exclude and resolver.settings_for(path).is_excluded(path)):
            found = iter((path,))
        else:
            continue
        for file in found:
            key = os.path.abspath(file)
            if key not in seen:
                seen.add(key)
                yield file


def _walk(
    folder: Path, absolute: Path, resolver: ConfigResolver, ignores: list[_IgnoreFile],
    respect: bool = True,
) -> Iterator[Path]:  # fmt: skip
    own = _read_gitignore(absolute) if respect else None
    if own is not None:
        ignores = [*ignores, own]
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return  # an unreadable folder holds nothing we can lint
    settings = resolver.settings_for(folder)
    # A folder named on the command line is linted even when excluded, and so is what it holds.
    inherited_exclusion = settings.is_excluded(folder)
    for entry in entries:
        path = folder / entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if not is_dir and not settings.is_included(path):
            continue
        target = absolute / entry.name
        excluded = not inherited_exclusion and settings.is_excluded(path)
        if excluded or any(ignore.ignores(target, is_dir) for ignore in ignores):
            log.debug("%s skipped: %s", path, "excluded" if excluded else "ignored by git")
            continue
        if is_dir:
            yield from _walk(path, target, resolver, ignores, respect)
        else:
            yield path
