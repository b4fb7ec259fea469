"""A baseline for legacy code: record today's findings, then report only new ones.

A baselined finding is matched by its code, its file (relative to the baseline's folder, so the
baseline works from any working folder and on any checkout) and a fingerprint of the offending
code: the stripped text of its line and how many identical lines with the same code came before
it in the file. Line numbers are left out on purpose, so lines inserted or removed above a
finding do not make it new; editing the offending line does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from devlint.diagnostics import Finding
from devlint.engine import decode
from devlint.notebook import NOTEBOOK_SUFFIX, program_of

BASELINE_VERSION = 1
_NEWLINE = re.compile(r"\r\n|\r|\n")


class BaselineError(Exception):
    """A baseline file that is missing, unreadable or not a devlint baseline: exit code 2."""


@dataclass(frozen=True)
class BaselineEntry:
    code: str
    file: str  # relative to the baseline's folder, with forward slashes
    fingerprint: str


def fingerprint(code: str, line_text: str, occurrence: int) -> str:
    """A short, stable digest of what is flagged and where in the file's sequence of such lines."""
    key = f"{code}\0{line_text.strip()}\0{occurrence}".encode()
    return hashlib.sha256(key).hexdigest()[:20]


class SourceLines:
    """Lines of the linted files, read once each; ``texts`` supplies files read elsewhere
    (standard input, which cannot be read twice)."""

    def __init__(self, texts: Optional[Mapping[str, bytes]] = None) -> None:
        self._lines = {path: _split(path, data) for path, data in (texts or {}).items()}

    def line(self, path: str, row: int) -> str:
        lines = self._lines.get(path)
        if lines is None:
            lines = self._lines[path] = self._read(path)
        return lines[row - 1] if 0 < row <= len(lines) else ""

    @staticmethod
    def _read(path: str) -> list[str]:
        try:
            return _split(path, Path(path).read_bytes())
        except OSError:
            return []  # an unreadable file's only finding is DEV000: its code identifies it


def _split(path: str, data: bytes) -> list[str]:
    """Lines as devlint numbers them (a lone carriage return ends a line too); a notebook's are
    the lines of its code cells' program."""
    if path.endswith(NOTEBOOK_SUFFIX):
        program = program_of(data)
        return _NEWLINE.split(program.source) if program is not None else []
    source = decode(data)
    return _NEWLINE.split(source) if isinstance(source, str) else []


def _relative_file(path: str, folder: Path) -> str:
    return Path(os.path.relpath(os.path.abspath(path), folder)).as_posix()


def entries_for(
    findings: Iterable[Finding], folder: Path, lines: SourceLines
) -> list[tuple[Finding, BaselineEntry]]:
    """Each finding with its baseline entry; ``findings`` in file order, as devlint sorts them."""
    seen: Counter[tuple[str, str, str]] = Counter()
    paired = []
    for finding in findings:
        text = lines.line(finding.path, finding.start.row).strip()
        file = _relative_file(finding.path, folder)
        occurrence = seen[(file, finding.code, text)]
        seen[(file, finding.code, text)] += 1
        entry = BaselineEntry(finding.code, file, fingerprint(finding.code, text, occurrence))
        paired.append((finding, entry))
    return paired


def write_baseline(baseline: Path, findings: Iterable[Finding], lines: SourceLines) -> int:
    """Record ``findings`` in ``baseline`` (atomically); returns how many were recorded."""
    folder = Path(os.path.abspath(baseline)).parent
    paired = entries_for(findings, folder, lines)
    entries = sorted({entry for _, entry in paired}, key=lambda e: (e.file, e.code, e.fingerprint))
    document = {
        "version": BASELINE_VERSION,
        "tool": "devlint",
        "findings": [
            {"code": e.code, "file": e.file, "fingerprint": e.fingerprint} for e in entries
        ],
    }
    try:
        _write_atomically(baseline, json.dumps(document, indent=2) + "\n")
    except OSError as error:
        raise BaselineError(
            f"cannot write baseline {baseline}: {error.strerror or error}"
        ) from error
    return len(entries)


def _write_atomically(path: Path, text: str) -> None:
    """A reader (or a crash) never sees half a baseline: write beside it, then rename."""
    handle, temporary = tempfile.mkstemp(
        prefix=".devlint-baseline-", dir=os.path.dirname(os.path.abspath(path))
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _entry(item: Any, origin: str) -> BaselineEntry:
    keys = ("code", "file", "fingerprint")
    if not isinstance(item, dict) or not all(isinstance(item.get(key), str) for key in keys):
        raise BaselineError(f"{origin}: each finding needs `code`, `file` and `fingerprint`")
    return BaselineEntry(item["code"], item["file"], item["fingerprint"])


def load_baseline(baseline: Path) -> frozenset[BaselineEntry]:
    """The recorded findings, or a BaselineError naming the file and what is wrong with it."""
    origin = f"baseline {baseline}"
    try:
        document = json.loads(baseline.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise BaselineError(f"{origin} does not exist (write it with --write-baseline)") from error
    except OSError as error:
        raise BaselineError(f"cannot read {origin}: {error.strerror or error}") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(f"{origin} is not valid JSON: {error}") from error
    if not isinstance(document, dict) or document.get("version") != BASELINE_VERSION:
        raise BaselineError(f"{origin} is not a devlint baseline (version {BASELINE_VERSION})")
    findings = document.get("findings")
    if not isinstance(findings, list):
        raise BaselineError(f"{origin}: `findings` must be a list")
    return frozenset(_entry(item, origin) for item in findings)


def new_findings(
    findings: Iterable[Finding],
    baseline: Path,
    recorded: frozenset[BaselineEntry],
    lines: SourceLines,
) -> list[Finding]:
    """The findings the baseline does not record."""
    folder = Path(os.path.abspath(baseline)).parent
    return [f for f, entry in entries_for(findings, folder, lines) if entry not in recorded]
