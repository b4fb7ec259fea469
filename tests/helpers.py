"""Small helpers shared by the tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from devlint import parallel
from devlint.diagnostics import PARSE_ERROR_CODE, Finding
from devlint.engine import RuleSet, lint_source
from devlint.torch_floor import DEFAULT_STYLE, DeviceStyle, TorchFloor, parse_version


def lint_snippet(
    source: str, codes: Iterable[str], path: str = "example.py", torch_floor: str | None = None
) -> list[Finding]:
    """Findings for a snippet with the given rules (and parse errors) enabled, in a project
    whose torch floor is ``torch_floor`` (unknown where None)."""
    rules = RuleSet({*codes, PARSE_ERROR_CODE}, style=style_for(torch_floor))
    result = lint_source(path, textwrap.dedent(source).encode(), rules)
    assert not result.errors, result.errors
    return result.findings


def style_for(torch_floor: str | None) -> DeviceStyle:
    """The device style of a project declaring ``torch>=torch_floor``."""
    if torch_floor is None:
        return DEFAULT_STYLE
    return DeviceStyle(TorchFloor(parse_version(torch_floor), ""))


REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"
# `path:line:col: CODE message`, as the text format writes each finding.
FINDING_LINE = re.compile(
    r"^(?P<path>.+?):(?P<row>\d+):(?P<col>\d+): (?P<code>DEV\d{3}) (?P<message>.+)$"
)


# The closing line of a text report that counts what `--fix` (or `--unsafe-fixes`) would fix.
FIX_HINT = re.compile(r"^(\[\*\] \d+ fixable with the `--fix` option|No fixes available \()")


def without_fix_hint(stdout: str) -> list[str]:
    """The report's lines less Ruff's closing fix hint."""
    return [line for line in stdout.splitlines() if not FIX_HINT.match(line)]


def run_cli(
    *args: str, cwd: Path, stdin: str | bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The real command line in a subprocess: ``devlint ARGS`` run in ``cwd``."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    completed = subprocess.run(
        [sys.executable, "-m", "devlint.cli", *args],
        cwd=cwd,
        input=data if data is not None else b"",
        capture_output=True,
        timeout=timeout,
    )
    return subprocess.CompletedProcess(
        completed.args,
        completed.returncode,
        completed.stdout.decode("utf-8"),
        completed.stderr.decode("utf-8"),
    )


def findings_of(stdout: str) -> list[tuple[str, int, int, str]]:
    """``(path, row, column, code)`` of every finding line in text output."""
    found = []
    for line in stdout.splitlines():
        match = FINDING_LINE.match(line)
        if match:
            found.append((match["path"], int(match["row"]), int(match["col"]), match["code"]))
    return found


def codes_of(stdout: str) -> set[str]:
    return {code for _, _, _, code in findings_of(stdout)}


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Create files (and their folders) under ``root``; bytes are written as they are."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content), encoding="utf-8")


_clock = [time.time_ns() - 3600 * 1_000_000_000]


def write_later(path: Path, text: str) -> None:
    """Write with a time no earlier write had, so that every edit is seen."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    _clock[0] += 10_000_000_000
    os.utime(path, ns=(_clock[0], _clock[0]))


def count_lints(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files actually linted (not answered from the cache) from now on."""
    seen: list[str] = []
    real = parallel.lint_path

    def counting(path: Path, codes: frozenset[str], style: DeviceStyle) -> object:
        seen.append(path.name)
        return real(path, codes, style)

    monkeypatch.setattr(parallel, "lint_path", counting)
    return seen
