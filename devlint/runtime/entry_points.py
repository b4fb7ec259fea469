"""Where running the project can start, best first.

1. Scripts: every file named on the command line, and every linted file shaped like one: an
   ``if __name__ == "__main__":`` block, or loops and calls at module level (a tutorial's
   ``train.py``). Each runs as ``python file.py`` would run it. Every notebook is one: its code
   cells run in order, IPython syntax masked.
2. The project's test suite, run by pytest, when the project has tests.
3. Functions the user names with ``--entry module:function`` (called with no arguments).

Code none of them reaches is reported as unreachable.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from devlint.runtime.imports import ImportGraph
from devlint.runtime.outcome import Entry

_MAIN_GUARD = re.compile(rb"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.MULTILINE)
_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_TEST_FILE = re.compile(r"(^test_.*|.*_test)\.py$")


def project_root(paths: Sequence[Path]) -> Path:
    """The nearest folder above every path that looks like a project's top, else their
    common folder."""
    absolute = [path.resolve() for path in paths] or [Path.cwd()]
    folders = [path if path.is_dir() else path.parent for path in absolute]
    common = Path(os.path.commonpath([str(folder) for folder in folders]))
    for candidate in (common, *common.parents):
        if any((candidate / marker).exists() for marker in _MARKERS):
            return candidate
    return common


_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_NEVER_SCRIPTS = frozenset({"__init__.py", "__main__.py", "setup.py", "conftest.py"})


def _does_work(statement: ast.stmt) -> bool:
    docstring = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    return not (isinstance(statement, _DEFINITIONS) or docstring)


def looks_like_script(path: Path, imported: bool) -> bool:
    """A main guard; or, for a module no other file imports, code at module level."""
    if path.name in _NEVER_SCRIPTS:
        return False
    try:
        source = path.read_bytes()
        if _MAIN_GUARD.search(source):
            return True
        return not imported and any(_does_work(stmt) for stmt in ast.parse(source).body)
    except (OSError, SyntaxError, ValueError):
        return False


def _relative(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root).as_posix()


def scripts(
    named: Sequence[Path], linted: Iterable[Path], root: Path, graph: ImportGraph
) -> list[Entry]:
    chosen: dict[str, Entry] = {}
    for path in named:
        if path.is_file() and path.suffix in (".py", ".ipynb"):
            chosen[_relative(path, root)] = Entry("script", _relative(path, root))
    for path in linted:
        relative = _relative(path, root)
        if relative in chosen or _TEST_FILE.match(path.name):
            continue
        if path.suffix == ".ipynb":  # a notebook runs its code cells, top to bottom
            chosen[relative] = Entry("script", relative)
            continue
        if looks_like_script(path, graph.imported_anywhere(relative)):
            chosen[relative] = Entry("script", relative)
    return list(chosen.values())


def test_suite(named: Sequence[Path], linted: Iterable[Path], root: Path) -> list[Entry]:
    """One pytest run over the named folders (or the test files named), if any holds tests."""
    tests = {path.resolve() for path in linted if _TEST_FILE.match(path.name)}
    if not tests:
        return []
    targets = sorted({_relative(path, root) for path in named if path.is_dir()})
    targets += sorted({_relative(path, root) for path in named if path.resolve() in tests})
    return [Entry("pytest", " ".join(targets) or ".")]


def functions(specs: Sequence[str]) -> list[Entry]:
    return [Entry("function", spec) for spec in specs]
