"""Crash-freedom and `--fix --unsafe-fixes` over real code: PyTorch's source and the stdlib.

Every file is linted with every rule without an internal error; fixed in memory, it
still parses, it changes only if it had a fixable finding, and fixing the result again
changes nothing. The files that do change then go through the real command line, twice,
on a temporary copy.
"""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import libcst as cst
import pytest

from devlint.diagnostics import PARSE_ERROR_CODE
from devlint.engine import RuleSet, lint_source
from devlint.fixing import fix_source
from devlint.rules import ALL_RULES
from tests.helpers import run_cli

pytestmark = pytest.mark.slow
RULES = RuleSet({rule.code for rule in ALL_RULES} | {PARSE_ERROR_CODE})


def _python_files(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*.py")
        if path.is_file()
        and not path.is_symlink()
        and not {"__pycache__", "site-packages", "dist-packages"}
        & set(path.relative_to(root).parts)
    )


def _check_in_memory(path: Path) -> bool:
    """Whether fixing changed the file; asserts the fix round trip on the way."""
    data = path.read_bytes()
    outcome = fix_source(str(path), data, RULES, unsafe=True)
    assert outcome.error is None, f"{path}: {outcome.error}"
    assert not outcome.result.errors, f"{path}: internal error {outcome.result.errors}"
    if not outcome.changed:
        return False
    fixable = any(f.fix is not None for f in lint_source(str(path), data, RULES).findings)
    assert fixable, f"{path} changed without a fixable finding"
    cst.parse_module(outcome.fixed)
    again = fix_source(str(path), outcome.fixed.encode(outcome_encoding(data)), RULES, True)
    assert not again.changed, f"{path}: a second fix changed it again"
    return True


def outcome_encoding(data: bytes) -> str:
    return "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"


def _check_tree(root: Path, scratch: Path) -> int:
    changed = [path for path in _python_files(root) if _check_in_memory(path)]
    copies = scratch / "copies"
    for index, path in enumerate(changed):
        target = copies / f"{index:05d}_{path.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (scratch / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
    if changed:
        arguments = ("--fix", "--unsafe-fixes", "--exit-zero", "-q", "copies")
        first = run_cli(*arguments, cwd=scratch, timeout=1800)
        assert first.returncode == 0, first.stderr[-2000:]
        fixed = {p.name: p.read_bytes() for p in copies.iterdir()}
        for data in fixed.values():
            cst.parse_module(data)
        second = run_cli(*arguments, cwd=scratch, timeout=1800)
        assert second.returncode == 0
        assert {p.name: p.read_bytes() for p in copies.iterdir()} == fixed
    return len(changed)


def test_fix_round_trip_on_pytorch_source(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    assert _check_tree(Path(torch.__file__).parent, tmp_path) > 0


def test_fix_round_trip_on_the_standard_library(tmp_path: Path) -> None:
    _check_tree(Path(sysconfig.get_paths()["stdlib"]), tmp_path)
