"""Across files: what the project's other files pass to a function of the linted file.

A tensor parameter lives on its caller's device by contract (see `flow`), unless the callers
say where. The file's own calls are read by the flow; this module finds the calls in the rest
of the project, the files whose imports resolve `renorm` to the linted file's function (see
`project.ProjectView`), and answers which parameters every one of them passes a tensor moved
to the CPU, as written (`renorm(img.cpu())`, `.detach().cpu()`, `.to("cpu")`). A call through
`*args` or `**kwargs`, or an argument the call does not show moved, keeps the contract.

The project is the nearest folder above with a project marker (`pyproject.toml`, `.git`...),
else the root of the package the file is in. Its files are read once per process, memoised by
their stamps, and only those whose text calls the name are parsed. The set of calling files,
with their contents, is recorded as a dependency of the lint's cached result: a new caller, or a
changed one, re-lints the file.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from devlint.analysis.project import (
    ProjectView,
    bytes_digest,
    package_root,
    project_root,
    record_callers,
)
from devlint.analysis.syntax import dotted_name, keyword_value, string_value
from devlint.complexity import parse_quietly

_CALLED = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "build", "dist", "__pycache__"})
_MAX_FILES = 5000  # a larger tree is not scanned for one function's callers
_CPU_KEEPING = frozenset(
    {"float", "double", "half", "long", "int", "contiguous", "clone", "detach"}
)


@dataclass(frozen=True)
class _FileText:
    mtime_ns: int
    size: int
    digest: str
    called: frozenset[str]


_TEXTS: dict[str, _FileText] = {}
_TREES: dict[tuple[str, str], Optional[ast.Module]] = {}
_LISTINGS: dict[str, tuple[float, Optional[list[str]]]] = {}
_LISTING_LIFETIME_S = 10.0


def project_folder(linted: str) -> Path:
    """Where the callers of a function of ``linted`` may live."""
    folder = Path(os.path.abspath(linted)).parent
    return project_root(folder) or package_root(folder)


def _project_files(root: Path) -> Optional[list[str]]:
    """The project's Python files, listed again after a few seconds (an editor's session
    outlives a listing); None for a tree too large to read for one function."""
    key = str(root)
    listed = _LISTINGS.get(key)
    if listed is None or time.monotonic() - listed[0] > _LISTING_LIFETIME_S:
        found: list[str] = []
        for folder, folders, files in os.walk(root):
            folders[:] = [
                name
                for name in folders
                if not name.startswith(".") and name not in _SKIPPED_FOLDERS
            ]
            found.extend(os.path.join(folder, name) for name in files if name.endswith(".py"))
            if len(found) > _MAX_FILES:
                break
        too_many = len(found) > _MAX_FILES
        listed = _LISTINGS[key] = (time.monotonic(), None if too_many else sorted(found))
    return listed[1]


def _text(path: str) -> Optional[_FileText]:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    known = _TEXTS.get(path)
    if known is not None and (known.mtime_ns, known.size) == (stat.st_mtime_ns, stat.st_size):
        return known
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    called = frozenset(match.decode() for match in _CALLED.findall(data))
    text = _FileText(stat.st_mtime_ns, stat.st_size, bytes_digest(data), called)
    _TEXTS[path] = text
    return text


def parsed(path: str, text: _FileText) -> Optional[ast.Module]:
    """The file's syntax tree, memoised by its digest; None where it does not parse."""
    digest = text.digest
    key = (path, digest)
    if key not in _TREES:
        try:
            _TREES[key] = parse_quietly(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            _TREES[key] = None
    return _TREES[key]


def files_calling(root: Path, linted: str, name: str) -> Iterator[tuple[str, _FileText]]:
    """The project's files, but ``linted``, whose text calls ``name`` (`name(`)."""
    own = os.path.abspath(linted)
    for path in _project_files(root) or ():
        if path == own:
            continue
        text = _text(path)
        if text is not None and name in text.called:
            yield path, text


def callers_digest(root: str, name: str) -> str:
    """The digest of the files of ``root`` whose text calls ``name``, with their contents."""
    parts = [f"{path}:{text.digest}" for path, text in files_calling(Path(root), "", name)]
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=12).hexdigest()


def _calls_of(path: str, tree: ast.Module, linted: str, name: str) -> Optional[list[ast.Call]]:
    """The calls in ``tree`` of the linted file's ``name``; None where the file names it in a
    way the analysis cannot follow (a star import of the linted module)."""
    view = ProjectView.of(path, tree)
    if view is None:
        return []
    own = os.path.abspath(linted)
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = dotted_name(node.func)
        if dotted is None or dotted.rpartition(".")[2] != name:
            continue
        found = view.lookup(dotted)
        if found is not None and found.path == own and found.name == name:
            calls.append(node)
    return calls


def called_elsewhere(linted: str, name: str) -> bool:
    """Whether a file of the project other than ``linted`` calls ``name``, as its text reads
    (`name(`, `.name(`): the file's own calls are then not all of them."""
    root = project_folder(linted)
    if _project_files(root) is None:
        return True  # (a tree too large to read may hold any caller)
    record_callers(linted, str(root), name, callers_digest(str(root), name))
    for path, text in files_calling(root, linted, name):
        tree = parsed(path, text)
        if tree is None or not _calls_only_its_own(tree, name):
            return True
    return False


def _calls_only_its_own(tree: ast.Module, name: str) -> bool:
    """Whether every call of ``name`` in ``tree`` is `self.name(...)` in a file that defines
    a method ``name`` of its own: another class's method of the same name."""
    defines = any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
        for node in ast.walk(tree)
    )
    return defines and all(
        dotted_name(node.func) == f"self.{name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _called_name(node.func) == name
    )


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def cpu_parameters(linted: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The parameters of ``function``, a top-level function of ``linted``, that every call in
    the project's other files (at least one) passes a tensor moved to the CPU, as written."""
    root = project_folder(linted)
    name = function.name
    record_callers(linted, str(root), name, callers_digest(str(root), name))
    positional = [argument.arg for argument in (*function.args.posonlyargs, *function.args.args)]
    agreed: Optional[set[str]] = None
    for path, text in files_calling(root, linted, name):
        tree = parsed(path, text)
        calls = _calls_of(path, tree, linted, name) if tree is not None else None
        if calls is None:
            return frozenset()
        for call in calls:
            moved = _moved_to_cpu_by(call, positional)
            if moved is None:
                return frozenset()
            agreed = moved if agreed is None else agreed & moved
    return frozenset(agreed or ())


def _moved_to_cpu_by(call: ast.Call, positional: list[str]) -> Optional[set[str]]:
    """The parameters ``call`` passes a value moved to the CPU; None for `*args`/`**kwargs`."""
    if any(isinstance(argument, ast.Starred) for argument in call.args):
        return None
    if any(keyword.arg is None for keyword in call.keywords):
        return None
    passed = {parameter: argument for parameter, argument in zip(positional, call.args)} | {
        keyword.arg: keyword.value for keyword in call.keywords if keyword.arg is not None
    }
    return {parameter for parameter, value in passed.items() if moved_to_cpu(value)}


def moved_to_cpu(value: ast.expr) -> bool:
    """`x.cpu()`, `x.detach().cpu()`, `x.to("cpu")`, and those kept there (`.cpu().float()`,
    `.cpu()[0]`)."""
    while True:
        if isinstance(value, ast.Subscript):
            value = value.value
            continue
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
            return False
        method = value.func.attr
        if method == "cpu":
            return True
        if method == "to":
            target = value.args[0] if value.args else keyword_value(value, "device")
            return target is not None and string_value(target) == "cpu"
        if method not in _CPU_KEEPING:
            return False
        value = value.func.value
