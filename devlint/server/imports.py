"""Which open files import which: when `model.py` changes, the open files that import it are
linted again. A line scan rather than a parse, so a half-typed file still has its imports."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePath

_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([^#\n]*)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^#\n]+)", re.MULTILINE)
_NAME = re.compile(r"[\w.]+")


def _names(listed: str) -> list[str]:
    """``a.b as c, d`` as ``["a.b", "d"]``."""
    names = []
    for part in listed.split(","):
        words = part.split()
        if words and _NAME.fullmatch(words[0]):
            names.append(words[0])
    return names


def _package(path: PurePath, dots: int) -> list[str]:
    """The folders a relative import with ``dots`` dots starts from, as module name parts."""
    parts = list(path.parent.parts[1:])  # without the root or drive
    return parts[: len(parts) - (dots - 1)] if dots > 1 else parts


def imported_modules(text: str, path: PurePath) -> set[str]:
    """Dotted names the file may import: each module named, and each ``from M import x`` as
    both ``M`` and ``M.x`` (x may be a submodule). Relative imports become names under the
    file's own folders, so they match by suffix like absolute ones."""
    modules: set[str] = set()
    for match in _IMPORT.finditer(text):
        modules.update(_names(match.group(1)))
    for match in _FROM.finditer(text):
        dots, base = len(match.group(1)), match.group(2)
        prefix = ".".join([*_package(path, dots), base] if dots else [base]).strip(".")
        if prefix:
            modules.add(prefix)
        for name in _names(match.group(3).rstrip(")")):
            modules.add(f"{prefix}.{name}" if prefix else name)
    return modules


def module_names(path: PurePath) -> set[str]:
    """Every dotted name ``path`` may be imported by: ``a/b/model.py`` is ``model``,
    ``b.model`` and ``a.b.model``; a package's ``__init__.py`` is its folder's name."""
    parts = list(path.parts[1:])
    if not parts:
        return set()
    stem = PurePath(parts[-1]).stem
    parts = parts[:-1] if stem == "__init__" else [*parts[:-1], stem]
    return {".".join(parts[index:]) for index in range(len(parts))}


def imports_any(imported: Iterable[str], names: set[str]) -> bool:
    """Whether one of the ``imported`` names is the module, by the longest path that matches:
    ``pkg.model`` matches a file named ``model`` or ``pkg.model``, ``model`` matches too."""
    for module in imported:
        parts = module.split(".")
        if any(".".join(parts[index:]) in names for index in range(len(parts))):
            return True
    return False
