"""Across files: which project file an import names, and the summaries the flow reads of it.

A linted file's imports are resolved to files of its project, the way Python would find them
when the project runs: relative imports from the file's package; absolute ones from the file's
own folder (a script's `from model import Net`), from the root of the package the file is in,
from the project root (the nearest folder above with a ``pyproject.toml``, ``setup.py``,
``setup.cfg`` or ``.git``) and from its ``src/`` folder. Packages re-exporting a name
(`from .model import Net` in ``__init__.py``) are followed.

Each file consulted is summarised (see :mod:`devlint.analysis.summaries`) once per process and
memoised by its size and modification time; the digest of each summary the lint of a file read
is recorded as a dependency of that file's result, so that the results cache re-lints a file
when, and only when, the summary of a file it depends on changes.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Callable, Generic, Optional, TypeVar

from devlint.analysis.summaries import Summary, imported_names, summarise, summary_digest
from devlint.analysis.syntax import dotted_name
from devlint.complexity import parse_quietly

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_MAX_SIZE = 2_000_000  # larger files are not summarised (generated code, data)
_MAX_HOPS = 4  # re-exports followed
# Module methods that return the module itself.
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "eval", "train", "float", "half", "double"})


@dataclass(frozen=True)
class Stamped:
    """A file's summary with the stamp of the bytes it was computed from."""

    mtime_ns: int
    size: int
    digest: str
    summary: Optional[Summary]  # None: unreadable or unparsable


T = TypeVar("T")
_MEMO: dict[str, Stamped] = {}
# Dependencies recorded per linted path: consulted file -> [mtime_ns, size, summary digest].
_DEPENDENCIES: dict[str, dict[str, list[object]]] = {}


def stamped_summary(path: str) -> Optional[Stamped]:
    """The summary of ``path`` as it is now; None where the file cannot be read."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    known = _MEMO.get(path)
    if known is not None and (known.mtime_ns, known.size) == (stat.st_mtime_ns, stat.st_size):
        return known
    summary: Optional[Summary] = None
    if stat.st_size <= _MAX_SIZE:
        try:
            summary = summarise(parse_quietly(Path(path).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            summary = None
    digest = summary_digest(summary) if summary is not None else "-"
    stamped = Stamped(stat.st_mtime_ns, stat.st_size, digest, summary)
    _MEMO[path] = stamped
    return stamped


def take_dependencies(path: str) -> dict[str, list[object]]:
    """The dependencies the lint of ``path`` recorded (and forget them)."""
    return _DEPENDENCIES.pop(path, {})


def record_dependency(linted: str, consulted: str, kind: str, digest: str) -> None:
    """A dependency other than a summary: a file's ``"content"`` or a folder's ``"listing"``,
    by ``digest`` (see `content_digest`, `listing_digest`)."""
    try:
        stat = os.stat(consulted)
        stamp: list[object] = [stat.st_mtime_ns, stat.st_size, digest, kind]
    except OSError:
        stamp = [0, 0, "-", kind]
    _DEPENDENCIES.setdefault(linted, {})[consulted] = stamp


_CALLERS = "callers:"


class ByStamp(Generic[T]):
    """What ``compute`` makes of a file's bytes, memoised by the file's stamp (modification
    time and size): read again only once the file changed. None where it cannot be read."""

    def __init__(self, compute: Callable[[str, bytes], T]) -> None:
        self._compute = compute
        self._known: dict[str, tuple[int, int, T]] = {}

    def __call__(self, path: str) -> Optional[T]:
        try:
            stat = os.stat(path)
        except OSError:
            return None
        if not S_ISREG(stat.st_mode):
            return None  # a pipe named like a script would wait for a writer forever
        known = self._known.get(path)
        if known is not None and known[:2] == (stat.st_mtime_ns, stat.st_size):
            return known[2]
        try:
            data = Path(path).read_bytes()
        except OSError:
            return None
        value = self._compute(path, data)
        self._known[path] = (stat.st_mtime_ns, stat.st_size, value)
        return value


def record_callers(linted: str, root: str, name: str, digest: str) -> None:
    """A dependency on the files of the project at ``root`` that mention ``name`` (see
    `callers`), by ``digest``: a new caller, or a changed one, re-lints ``linted``."""
    _DEPENDENCIES.setdefault(linted, {})[f"{root}#{name}"] = [0, 0, digest, _CALLERS + name]


def content_digest(path: str) -> str:
    try:
        return bytes_digest(Path(path).read_bytes())
    except OSError:
        return "-"


def bytes_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def listing_digest(folder: str) -> str:
    """The digest of the names of a folder's scripts and notebooks."""
    try:
        names = sorted(
            entry.name for entry in os.scandir(folder) if entry.name.endswith(CODE_SUFFIXES)
        )
    except OSError:
        return "-"
    return hashlib.blake2b("\n".join(names).encode(), digest_size=12).hexdigest()


CODE_SUFFIXES = (".py", ".ipynb")  # the files a folder's listing names


def dependency_holds(path: str, recorded: list[object]) -> bool:
    """Whether the summary of ``path`` still has the recorded digest (or its content or, for a
    folder, its listing or the files calling a name, where that was recorded)."""
    if len(recorded) == 4 and recorded[3] == "listing":
        return listing_digest(path) == recorded[2]
    if len(recorded) == 4 and str(recorded[3]).startswith(_CALLERS):
        from devlint.analysis.callers import callers_digest  # (it reads this module's views)

        root = path.rpartition("#")[0]
        return callers_digest(root, str(recorded[3])[len(_CALLERS) :]) == recorded[2]
    if len(recorded) == 4 and recorded[3] == "content":
        try:
            stat = os.stat(path)
        except OSError:
            return recorded[2] == "-"
        if [stat.st_mtime_ns, stat.st_size] == recorded[:2]:
            return True
        return content_digest(path) == recorded[2]
    try:
        mtime_ns, size, digest = recorded
        stat = os.stat(path)
    except (OSError, ValueError, TypeError):
        return not os.path.exists(path) and recorded[2:] == ["-"]
    if (stat.st_mtime_ns, stat.st_size) == (mtime_ns, size):
        return True
    now = stamped_summary(path)
    return now is not None and now.digest == digest


def path_in_project(path: str) -> str:
    """``path`` relative to its project root where it has one (so that folders above the
    project, `/home/me/tests/...`, say nothing of the file), else as given."""
    resolved = Path(path).resolve()
    root = project_root(resolved.parent)
    return str(resolved.relative_to(root)) if root is not None else path


@functools.lru_cache(maxsize=256)
def project_root(folder: Path) -> Optional[Path]:
    return _project_root(folder)


def _project_root(folder: Path) -> Optional[Path]:
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in _ROOT_MARKERS):
            return candidate
    return None


def package_root(folder: Path) -> Path:
    """The folder holding the outermost package ``folder`` is in (itself if not a package)."""
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def search_roots(path: Path) -> list[Path]:
    folder = path.parent
    roots = [folder, package_root(folder)]
    project = _project_root(folder)
    if project is not None:
        roots += [project, project / "src"]
    unique: list[Path] = []
    for root in roots:
        if root not in unique and root.is_dir():
            unique.append(root)
    return unique


def _module_file(root: Path, parts: list[str]) -> Optional[Path]:
    if not parts:
        init = root / "__init__.py"
        return init if init.is_file() else None
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Found:
    """A class or function of a project file, as an import names it."""

    path: str
    name: str
    kind: str  # "class" or "function"
    facts: Summary
    file_summary: Summary


@dataclass
class ProjectView:
    """The project as one linted file sees it through its imports."""

    path: Path
    imports: dict[str, tuple[int, str]]
    roots: list[Path]
    linted: str  # the path as the engine names it: the key of its recorded dependencies
    tree: ast.Module
    _instances: Optional[dict[str, Found]] = None
    _found: dict[str, Optional[Found]] = field(default_factory=dict)
    _files: dict[tuple[str, ...], Optional[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, path: str, tree: ast.Module, linted: Optional[str] = None) -> Optional[ProjectView]:
        """None where the file imports nothing that could be a project file. ``linted``: the
        file whose lint reads the view, where it is not ``path`` (its dependencies)."""
        imports = {
            name: bound
            for name, bound in imported_names(tree).items()
            if bound[0] or not bound[1].startswith(("torch", "numpy", "typing", "os", "sys"))
        }
        if not imports:
            return None
        real = Path(os.path.abspath(path))
        key = linted or path
        _DEPENDENCIES.setdefault(key, {})
        return cls(real, imports, search_roots(real), key, tree)

    def lookup(self, dotted: Optional[str]) -> Optional[Found]:
        """The project class or function ``dotted`` names in this file (`Net`, `utils.score`)."""
        if dotted is None:
            return None
        if dotted in self._found:
            return self._found[dotted]
        head, _, rest = dotted.partition(".")
        bound = self.imports.get(head)
        found = None
        if bound is not None:
            level, target = bound
            full = f"{target}.{rest}" if rest else target
            found = self._resolve(self.path, level, full.split("."), _MAX_HOPS)
        self._found[dotted] = found
        return found

    def _resolve(self, origin: Path, level: int, parts: list[str], hops: int) -> Optional[Found]:
        """`parts` = module path then the name in it; the longest module prefix that is a file."""
        for cut in range(len(parts) - 1, 0, -1):
            module = self._file(origin, level, parts[:cut])
            if module is None:
                continue
            if cut != len(parts) - 1:
                return None  # `pkg.mod.Class.attr`: not a class or function of the module
            return self._in_file(module, parts[-1], hops)
        if level:
            module = self._file(origin, level, [])
            return self._in_file(module, parts[-1], hops) if module else None
        return None

    def _file(self, origin: Path, level: int, parts: list[str]) -> Optional[str]:
        key = (str(origin.parent), str(level), *parts)
        if key in self._files:
            return self._files[key]
        found: Optional[Path] = None
        if level:
            base = origin.parent
            for _ in range(level - 1):
                base = base.parent
            found = _module_file(base, parts)
        else:
            roots = self.roots if origin == self.path else search_roots(origin)
            for root in roots:
                found = _module_file(root, parts)
                if found is not None:
                    break
        result = str(found) if found is not None and found != self.path else None
        self._files[key] = result
        return result

    def _in_file(self, module: str, name: str, hops: int) -> Optional[Found]:
        stamped = stamped_summary(module)
        if stamped is None:
            return None
        _DEPENDENCIES.setdefault(self.linted, {})[module] = [
            stamped.mtime_ns,
            stamped.size,
            stamped.digest,
        ]
        summary = stamped.summary
        if summary is None:
            return None
        if name in summary["classes"]:
            return Found(module, name, "class", summary["classes"][name], summary)
        if name in summary["functions"]:
            return Found(module, name, "function", summary["functions"][name], summary)
        bound = summary["imports"].get(name)
        if bound is not None and hops > 0:
            level, target = bound
            return self._resolve(Path(module), level, target.split("."), hops - 1)
        return None

    def instances(self) -> dict[str, Found]:
        """Names the file binds, once and only, to an instance of an imported project class
        that keeps plain CPU tensors in attributes and defines no `to()`: `net = Net()`."""
        if self._instances is not None:
            return self._instances
        bound: dict[str, Optional[Found]] = {}
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target, value = node.targets[0], node.value
            if not isinstance(target, ast.Name):
                continue
            while (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in _SELF_RETURNING
                and isinstance(value.func.value, ast.Call)
            ):
                value = value.func.value  # `Net().to(device)`, `Net().eval()`: still a `Net`
            if not isinstance(value, ast.Call):
                bound[target.id] = None
                continue
            head = value.func
            while isinstance(head, ast.Attribute):
                head = head.value
            if not (isinstance(head, ast.Name) and head.id in self.imports):
                bound[target.id] = None if target.id in bound else bound.get(target.id)
                continue
            found = self.lookup(dotted_name(value.func))
            keeps = (
                found is not None
                and found.kind == "class"
                and found.facts["cpu_attributes"]
                and not found.facts["defines_to"]
            )
            bound[target.id] = found if keeps and target.id not in bound else None
        self._instances = {name: found for name, found in bound.items() if found is not None}
        return self._instances

    def is_module_class(self, found: Found, hops: int = _MAX_HOPS) -> bool:
        """Whether a project class derives from nn.Module, following bases across files."""
        module = found.facts.get("module")
        if module is not None or hops <= 0:
            return bool(module)
        for base in found.facts.get("bases", ()):
            level = len(base) - len(base.lstrip("."))
            parts = base.lstrip(".").split(".")
            if not level and len(parts) == 1:
                bound = found.file_summary["imports"].get(parts[0])
                if bound is None:
                    continue
                level, target = bound
                parts = target.split(".")
            inner = self._resolve(Path(found.path), level, parts, _MAX_HOPS)
            is_class = inner is not None and inner.kind == "class"
            if is_class and inner is not None and self.is_module_class(inner, hops - 1):
                return True
        return False
