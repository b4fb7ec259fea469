"""The results cache: a re-run on an unchanged tree costs little more than a stat per file.

As Ruff's, it lives in ``.devlint_cache/`` at the project root (the folder of
the nearest ``pyproject.toml`` above the current folder, else the current
folder), tagged with ``CACHEDIR.TAG`` and ignored by its own ``.gitignore``.
One JSON file per devlint version and Python version holds an entry per
(file, enabled rules): the file's modification time and size, a digest of its
bytes, the findings with their fixes, and the project files whose summaries the lint read
(each with the digest of its summary: a changed summary re-lints the file, see
:mod:`devlint.analysis.project`). The file's header names everything
else the results depend on (the source of devlint itself, LibCST's version);
a header that differs, a file that does not parse, or an entry of the wrong
shape is ignored and rebuilt, never trusted. Writes are atomic: a temporary
file renamed over the old one.

A file modified in the same instant it was linted could be modified again
without its time changing ("racy git"): such an entry is trusted only when
the file's bytes still have the recorded digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from devlint import __version__
from devlint.analysis.project import dependency_holds
from devlint.diagnostics import Applicability, Edit, FileResult, Finding, Fix, Position

CACHE_DIR_NAME = ".devlint_cache"
CACHE_DIR_ENV = "DEVLINT_CACHE_DIR"
_FORMAT = 1
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by devlint.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n"
)
# A modification this close to the moment a file was read may not have changed its time.
_RACY_NS = 2_000_000_000
# Entries for files not linted for this long are dropped (deleted or moved files).
_EXPIRY_NS = 30 * 24 * 3600 * 1_000_000_000


def find_cache_dir(cwd: Optional[Path] = None) -> Path:
    """``$DEVLINT_CACHE_DIR``, else ``.devlint_cache`` at the project root above ``cwd``."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override)
    start = Path(os.path.abspath(cwd or Path.cwd()))
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder / CACHE_DIR_NAME
    return start / CACHE_DIR_NAME


@dataclass(frozen=True)
class Stamp:
    """What identifies the bytes a result was computed from."""

    mtime_ns: int
    size: int
    digest: str
    read_at_ns: int

    @classmethod
    def of(cls, stat: os.stat_result, data: bytes, read_at_ns: int) -> Stamp:
        return cls(stat.st_mtime_ns, stat.st_size, digest(data), read_at_ns)

    def racy(self) -> bool:
        return self.mtime_ns + _RACY_NS >= self.read_at_ns


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _source_fingerprint() -> str:
    """The size and time of each of devlint's own modules and data files: an edited install
    invalidates."""
    package = Path(__file__).parent
    parts = []
    for root, folders, files in os.walk(package):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json")):  # the code, and the torch API table
                module = os.path.join(root, name)
                stat = os.stat(module)
                parts.append(
                    f"{os.path.relpath(module, package)}:{stat.st_size}:{stat.st_mtime_ns}"
                )
    return digest("\n".join(parts).encode())


def _libcst_version() -> str:
    try:  # the generated module: importlib.metadata would cost a warm run a tenth of its time
        from libcst._version import __version__ as version

        return str(version)
    except ImportError:
        from importlib.metadata import version as installed

        return installed("libcst")


def _header() -> dict[str, Any]:
    return {
        "format": _FORMAT,
        "devlint": __version__,
        "source": _source_fingerprint(),
        "libcst": _libcst_version(),
        "python": list(sys.version_info[:3]),
    }


class Cache:
    """Entries loaded from one cache file, and the ones this run adds."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        python = f"py{sys.version_info[0]}{sys.version_info[1]}"
        self.file = folder / __version__ / f"results-{python}.json"
        self._header = _header()
        self._entries: dict[str, dict[str, Any]] = {}
        self._changed = False
        self._now_ns = time.time_ns()
        self._load()

    @staticmethod
    def key(path: Path, codes: Iterable[str]) -> str:
        return f"{os.path.abspath(path)}|{','.join(sorted(codes))}"

    def _load(self) -> None:
        try:
            document = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # absent or corrupt: start empty, and the next save replaces it
        if not isinstance(document, dict) or document.get("header") != self._header:
            return  # another devlint, LibCST or Python wrote it
        entries = document.get("entries")
        if isinstance(entries, dict):
            self._entries = {
                key: entry
                for key, entry in entries.items()
                if isinstance(entry, dict) and isinstance(entry.get("seen_ns"), int)
            }

    def lookup(self, path: Path, codes: Iterable[str], shown_as: str) -> Optional[FileResult]:
        """The cached result for ``path`` if its bytes are unchanged; None otherwise."""
        key = self.key(path, codes)
        entry = self._entries.get(key)
        if entry is None:
            return None
        try:
            stat = os.stat(path)
            stamp = Stamp(entry["mtime_ns"], entry["size"], entry["digest"], entry["read_at_ns"])
            if (stat.st_mtime_ns, stat.st_size) != (stamp.mtime_ns, stamp.size):
                return None
            if stamp.racy() and digest(Path(path).read_bytes()) != stamp.digest:
                return None
            dependencies = entry.get("dependencies", {})
            if not all(dependency_holds(dep, held) for dep, held in dependencies.items()):
                return None  # an imported project file's summary changed: re-analyse
            findings = [_finding(shown_as, item) for item in entry["findings"]]
        except (OSError, KeyError, TypeError, ValueError, AttributeError):
            self._entries.pop(key, None)  # a malformed entry: relint, and rewrite it
            self._changed = True
            return None
        if self._now_ns - entry["seen_ns"] > _EXPIRY_NS // 2:
            entry["seen_ns"] = self._now_ns  # keep entries in use from expiring
            self._changed = True
        return FileResult(shown_as, findings)

    def store(self, path: Path, codes: Iterable[str], stamp: Stamp, result: FileResult) -> None:
        """Remember a result; one with internal errors is not remembered, so it shows again."""
        if result.errors:
            return
        self._entries[self.key(path, codes)] = {
            "mtime_ns": stamp.mtime_ns,
            "size": stamp.size,
            "digest": stamp.digest,
            "read_at_ns": stamp.read_at_ns,
            "seen_ns": self._now_ns,
            "findings": [_finding_json(finding) for finding in result.findings],
        }
        if result.dependencies:
            self._entries[self.key(path, codes)]["dependencies"] = result.dependencies
        self._changed = True

    def save(self) -> None:
        """Write the entries back, atomically, if this run changed any; never fails the run."""
        if not self._changed:
            return
        live = {
            key: entry
            for key, entry in self._entries.items()
            if self._now_ns - entry["seen_ns"] <= _EXPIRY_NS
        }
        document = {"header": self._header, "entries": live}
        try:
            _prepare(self.folder)
            self.file.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(self.file, json.dumps(document, separators=(",", ":")))
        except OSError:
            pass  # a read-only tree lints as well without a cache
        self._changed = False


def _prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in (("CACHEDIR.TAG", _TAG), (".gitignore", "# Created by devlint.\n*\n")):
        target = folder / name
        if not target.exists():
            _write_atomically(target, content)


def _write_atomically(target: Path, content: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(content)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a cache is an ordinary file
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _position(value: Any) -> Position:
    row, column = value
    return Position(int(row), int(column))


def _finding_json(finding: Finding) -> dict[str, Any]:
    item: dict[str, Any] = {
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "start": [finding.start.row, finding.start.column],
        "end": [finding.end.row, finding.end.column],
        "noqa_row": finding.noqa_row,
    }
    if finding.cell is not None:
        item["cell"] = [finding.cell, finding.cell_first_row]
    if finding.cited:
        item["cited"] = [[cited.row, cited.column] for cited in finding.cited]
    if finding.fix is not None:
        item["fix"] = {
            "applicability": finding.fix.applicability.value,
            "message": finding.fix.message,
            "edits": [
                [[e.start.row, e.start.column], [e.end.row, e.end.column], e.content]
                for e in finding.fix.edits
            ],
        }
    return item


def _finding(path: str, item: Mapping[str, Any]) -> Finding:
    fix: Optional[Fix] = None
    if "fix" in item:
        raw = item["fix"]
        edits = tuple(
            Edit(_position(start), _position(end), _text(content))
            for start, end, content in raw["edits"]
        )
        fix = Fix(Applicability(raw["applicability"]), _text(raw["message"]), edits)
    cell: Optional[int] = None
    first = 1
    if "cell" in item:
        cell, first = (int(value) for value in item["cell"])
    return Finding(
        path=path,
        code=_text(item["code"]),
        name=_text(item["name"]),
        message=_text(item["message"]),
        start=_position(item["start"]),
        end=_position(item["end"]),
        noqa_row=int(item["noqa_row"]),
        fix=fix,
        cell=cell,
        cell_first_row=first,
        cited=tuple(_position(cited) for cited in item.get("cited", ())),
    )


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a cached text is not a string")
    return value
