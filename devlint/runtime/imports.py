"""Which of the project's files a script can reach through its imports, read from the source.

Only to choose what to run and which runs speak for a finding: a script whose imports cannot
reach a file says nothing about that file's findings. Resolution is by name, without executing
anything: ``import pkg.model`` and ``from .model import Net`` reach ``pkg/model.py`` (and a
package's ``__init__.py``); a name no project file answers to is ignored.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from devlint.notebook import NOTEBOOK_SUFFIX, program_of


def module_names(relative: str) -> set[str]:
    """``pkg/sub/model.py`` answers to ``pkg.sub.model``, ``sub.model`` and ``model``."""
    parts = relative[: -len(".py")].split("/") if relative.endswith(".py") else relative.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return {".".join(parts[index:]) for index in range(len(parts))} if parts else set()


def imported_names(source: bytes) -> set[str]:
    """Dotted names a module imports, with each prefix (``a.b.c`` gives ``a``, ``a.b``, ...)
    and, for ``from m import n``, ``m.n`` too (n may be a submodule). A file answers to every
    suffix of its own dotted path, so relative imports resolve by their tail."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            dotted = [base] if base else []
            dotted += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
        else:
            continue
        for name in dotted:
            parts = name.split(".")
            names.update(".".join(parts[: index + 1]) for index in range(len(parts)))
    return names


class ImportGraph:
    def __init__(self, files: Iterable[Path], root: Path) -> None:
        self.imports: dict[str, set[str]] = {}
        owners: dict[str, set[str]] = {}
        for path in files:
            try:
                relative = path.resolve().relative_to(root).as_posix()
                source = path.read_bytes()
            except (ValueError, OSError):
                continue
            if relative.endswith(NOTEBOOK_SUFFIX):  # a notebook imports what its cells import
                program = program_of(source)
                source = program.source.encode("utf-8") if program is not None else b""
            self.imports[relative] = imported_names(source)
            for name in module_names(relative):
                owners.setdefault(name, set()).add(relative)
        self.owners = owners

    def reachable(self, start: str) -> set[str]:
        """``start`` and every project file its imports reach, transitively."""
        seen, stack = {start}, [start]
        while stack:
            for name in self.imports.get(stack.pop(), ()):
                for target in self.owners.get(name, ()):
                    if target not in seen:
                        seen.add(target)
                        stack.append(target)
        return seen

    def imported_anywhere(self, relative: str) -> bool:
        names = module_names(relative)
        return any(
            names & imported for source, imported in self.imports.items() if source != relative
        )
