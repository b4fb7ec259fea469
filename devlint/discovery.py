"""From the paths a user gives to the files to lint (Python, notebooks, and the documents
`include` names), honouring .gitignore and excludes."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pathspec

from devlint.config import ConfigResolver, absolute_path


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


def _read_gitignore(folder: Path) -> Optional[_IgnoreFile]:
    try:
        lines = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _IgnoreFile(folder, pathspec.GitIgnoreSpec.from_lines(lines))


def _ancestor_gitignores(folder: Path) -> list[_IgnoreFile]:
    """The .gitignore files above ``folder``, up to the top of its git repository."""
    found: list[_IgnoreFile] = []
    for ancestor in folder.parents:
        ignore = _read_gitignore(ancestor)
        if ignore is not None:
            found.append(ignore)
        if (ancestor / ".git").exists():
            return found
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
            # Like a folder excluded in the settings, a folder the user names is linted even when
            # a .gitignore above it ignores it.
            ignores = [i for i in _ancestor_gitignores(absolute) if not i.ignores(absolute, True)]
            found: Iterator[Path] = _walk(path, absolute, resolver, ignores)
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
    folder: Path, absolute: Path, resolver: ConfigResolver, ignores: list[_IgnoreFile]
) -> Iterator[Path]:
    own = _read_gitignore(absolute)
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
            continue
        if is_dir:
            yield from _walk(path, target, resolver, ignores)
        else:
            yield path
