"""Across files: what the project's other files pass to a function of the linted file.

A tensor parameter lives on its caller's device by contract (see `flow`), unless the callers
say where. The file's own calls are read by the flow; this module finds the calls in the rest
of the project, the files whose imports resolve `renorm` to the linted file's function (see
`project.ProjectView`), and answers which parameters every one of them passes a tensor moved
to the CPU, as written (`renorm(img.cpu())`, `.detach().cpu()`, `.to("cpu")`). A call in code
that prepares CPU data by design (a dataset's `__getitem__`, a collate function) passes CPU data.
A test's call exercises the function with data of its choosing: it says nothing, unless it
places something on a device (then the contract stands). A call through `*args` or
`**kwargs`, or an argument the call does not show moved, keeps the contract.

Every other mention of the function keeps the contract too: a reference that is not a call
(`map(renorm, batch)`, `partial(renorm, ...)`, `step = ranker.train_epoch`), an import under
another name, a star import, a notebook naming it: what it is then passed is out of sight.

The project is the outermost folder above with a `.git`, else the nearest with a project marker
(`pyproject.toml`...), else the root of the package the file is in. Its files are listed once
every few seconds and indexed by the names they mention, each read once per process (memoised
by its stamp); only those mentioning the name are parsed. The set of those files, with their
contents, is recorded as a dependency of the lint's cached result: a new caller, or a changed
one, re-lints the file.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from devlint.analysis.cpu_only import DEVICE_WORDS
from devlint.analysis.parameters import is_test_module, prepares_data, runs_on_cpu_by_design
from devlint.analysis.project import (
    ByStamp,
    ProjectView,
    bytes_digest,
    package_root,
    project_root,
    record_callers,
)
from devlint.analysis.syntax import dotted_name, keyword_value, string_value
from devlint.complexity import parse_quietly

_SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "build", "dist", "__pycache__"})
_MAX_FILES = 5000  # a larger tree is not scanned for one function's callers
_CPU_KEEPING = frozenset(
    {"float", "double", "half", "long", "int", "contiguous", "clone", "detach"}
)
_NAMES = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class _FileText:
    digest: str
    mentioned: frozenset[str]


@dataclass
class _Listing:
    made: float
    files: Optional[list[str]]  # None: too many to read for one function
    index: Optional[dict[str, list[str]]] = None  # name -> the files mentioning it


_TREES: dict[str, tuple[str, Optional[ast.Module]]] = {}  # path -> (digest, tree)
_LISTINGS: dict[str, _Listing] = {}
_LISTING_LIFETIME_S = 10.0


@functools.lru_cache(maxsize=256)
def _project_folder(folder: Path) -> Path:
    repository = None
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            repository = candidate  # (the outermost: a monorepo's other packages call too)
    return repository or project_root(folder) or package_root(folder)


def project_folder(linted: str) -> Path:
    """Where the callers of a function of ``linted`` may live."""
    return _project_folder(Path(os.path.abspath(linted)).parent)


def _listing(root: Path) -> _Listing:
    """The project's Python files and notebooks, listed again after a few seconds (an editor's
    session outlives a listing)."""
    key = str(root)
    listed = _LISTINGS.get(key)
    if listed is None or time.monotonic() - listed.made > _LISTING_LIFETIME_S:
        found: list[str] = []
        for folder, folders, files in os.walk(root):
            folders[:] = [
                name
                for name in folders
                if not name.startswith(".") and name not in _SKIPPED_FOLDERS
            ]
            found.extend(os.path.join(folder, name) for name in files if name.endswith(_SUFFIXES))
            if len(found) > _MAX_FILES:
                break
        listed = _Listing(time.monotonic(), None if len(found) > _MAX_FILES else sorted(found))
        _LISTINGS[key] = listed
    return listed


def _index(root: Path) -> Optional[dict[str, list[str]]]:
    """Which files of the project mention each name; None for a tree too large to read."""
    listed = _listing(root)
    if listed.files is None:
        return None
    if listed.index is None:
        index: dict[str, list[str]] = {}
        for path in listed.files:
            text = _text(path)
            for name in text.mentioned if text is not None else ():
                index.setdefault(name, []).append(path)
        listed.index = index
    return listed.index


def _read_text(path: str, data: bytes) -> _FileText:
    mentioned = frozenset(sys.intern(match.decode()) for match in _NAMES.findall(data))
    return _FileText(bytes_digest(data), mentioned)


_text = ByStamp(_read_text)


def parsed(path: str, text: _FileText) -> Optional[ast.Module]:
    """The file's syntax tree, memoised while its digest holds; None where it does not parse
    (a notebook is not read: its cells are out of sight)."""
    known = _TREES.get(path)
    if known is not None and known[0] == text.digest:
        return known[1]
    tree: Optional[ast.Module] = None
    if path.endswith(".py"):
        try:
            tree = parse_quietly(Path(path).read_bytes())  # type: ignore[arg-type]
        except (OSError, SyntaxError, ValueError, RecursionError):
            tree = None
    _TREES[path] = (text.digest, tree)
    return tree


def files_mentioning(root: Path, linted: str, name: str) -> Iterator[tuple[str, _FileText]]:
    """The project's files, but ``linted``, that mention ``name``."""
    own = os.path.abspath(linted) if linted else ""
    for path in (_index(root) or {}).get(name, ()):
        text = _text(path)
        if path != own and text is not None:
            yield path, text


def depend_on_mentions(linted: str, root: Path, name: str) -> str:
    """Record the files of ``root`` mentioning ``name`` as a dependency of ``linted``'s result,
    and return their digest."""
    digest = callers_digest(str(root), name)
    record_callers(linted, str(root), name, digest)
    return digest


def callers_digest(root: str, name: str) -> str:
    """The digest of the files of ``root`` mentioning ``name``, with their contents."""
    parts = [f"{path}:{text.digest}" for path, text in files_mentioning(Path(root), "", name)]
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=12).hexdigest()


def _calls_of(path: str, tree: ast.Module, linted: str, name: str) -> Optional[list[ast.Call]]:
    """The calls in ``tree`` of the linted file's ``name``; None where the file names it in
    any other way (a reference not called, an import under another name, a star import)."""
    if _hidden_import(tree, name):
        return None
    view = ProjectView.of(path, tree, linted)
    if view is None:
        return []
    own = os.path.abspath(linted)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    calls: list[ast.Call] = []
    for node in ast.walk(tree):
        if not (isinstance(node, (ast.Name, ast.Attribute)) and _named(node) == name):
            continue
        dotted = dotted_name(node)
        if dotted is None:
            return None  # `make().renorm(x)`: which `renorm`, the analysis cannot tell
        found = view.lookup(dotted)
        if found is None or found.path != own or found.name != name:
            continue
        if id(node) not in called:
            return None  # `map(renorm, batch)`: passed on, called out of sight
        calls.extend(
            call for call in ast.walk(tree) if isinstance(call, ast.Call) and call.func is node
        )
    return calls


def _hidden_import(tree: ast.Module, name: str) -> bool:
    """`from m import *`, or `from m import name as other`: calls the index cannot see."""
    return any(
        isinstance(node, ast.ImportFrom)
        and any(alias.name == "*" or (alias.name == name and alias.asname) for alias in node.names)
        for node in ast.walk(tree)
    )


def _named(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def called_elsewhere(linted: str, name: str) -> bool:
    """Whether a file of the project other than ``linted`` mentions the method ``name`` other
    than as another class's own (`self.name(...)` inside a class defining `name`)."""
    root = project_folder(linted)
    if _index(root) is None:
        return True  # (a tree too large to read may hold any caller)
    depend_on_mentions(linted, root, name)
    for path, text in files_mentioning(root, linted, name):
        tree = parsed(path, text)
        if tree is None or not _only_its_own(tree, name):
            return True
    return False


def _only_its_own(tree: ast.Module, name: str) -> bool:
    """Whether every mention of ``name`` in ``tree`` is the definition of a method of that name
    or `self.name(...)` inside a class that defines it: another class's method."""
    own: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name
            for item in node.body
        ):
            own.update(
                id(call.func)
                for call in ast.walk(node)
                if isinstance(call, ast.Call) and dotted_name(call.func) == f"self.{name}"
            )
    return bool(own) and all(
        id(node) in own
        for node in ast.walk(tree)
        if isinstance(node, (ast.Name, ast.Attribute)) and _named(node) == name
    )


def cpu_parameters(linted: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The parameters of ``function``, a top-level function of ``linted``, that every call in
    the project's other files (at least one) passes a tensor moved to the CPU, as written."""
    root = project_folder(linted)
    name = function.name
    if _index(root) is None:
        return frozenset()
    depend_on_mentions(linted, root, name)
    positional = [argument.arg for argument in (*function.args.posonlyargs, *function.args.args)]
    agreed: Optional[set[str]] = None
    for path, text in files_mentioning(root, linted, name):
        tree = parsed(path, text)
        calls = _calls_of(path, tree, linted, name) if tree is not None else None
        if calls is None:
            return frozenset()
        if not calls:
            continue
        assert tree is not None
        source = source_text(path) or "cuda"  # (unreadable: as if it named a device)
        if is_test_module(os.path.relpath(path, root)):
            # A test exercises the function with data of its choosing: no word for where the
            # project's callers keep theirs, unless its file may place some on a device.
            if DEVICE_WORDS.search(source):
                return frozenset()
            continue
        preparing = _in_cpu_data_code(tree, source)
        for call in calls:
            moved = _moved_to_cpu_by(call, positional)
            if moved is not None and id(call) in preparing:
                moved = set(positional)  # (a dataset's `__getitem__` hands on its CPU data)
            if moved is None:
                return frozenset()
            agreed = moved if agreed is None else agreed & moved
    return frozenset(agreed or ())


def _decoded(path: str, data: bytes) -> str:
    return data.decode("utf-8", "replace")


# A project file's text, read once while it is unchanged (for each function it calls, each load).
source_text = ByStamp(_decoded)


def _in_cpu_data_code(tree: ast.Module, source: str) -> set[int]:
    """The calls in code that prepares CPU data by design: the methods of a dataset or a data
    collator (by its name or a base's, see `runs_on_cpu_by_design`) and collate functions,
    where their code names no device (a dataset may keep its tensors on a GPU)."""
    found: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            classes = [node.name, *(dotted_name(base) or "" for base in node.bases)]
            preparing = any(prepares_data(name.rpartition(".")[2]) for name in classes)
        else:
            preparing = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                runs_on_cpu_by_design(node, ())
            )
        if preparing and not DEVICE_WORDS.search(ast.get_source_segment(source, node) or "cuda"):
            found.update(id(call) for call in ast.walk(node) if isinstance(call, ast.Call))
    return found


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
