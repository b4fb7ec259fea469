"""`--fix --unsafe-fixes` over real code: PyTorch's installed source and the standard library.

On a temporary copy: every file still parses, only files with fixable findings
change, and a second run changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sysconfig
from pathlib import Path

import libcst as cst
import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.slow
LONG = 1800  # seconds: a whole tree, linted and fixed, on a shared 2-core machine


def _python_tree(source: Path, destination: Path) -> Path:
    shutil.copytree(
        source,
        destination,
        ignore=lambda folder, names: [
            name
            for name in names
            if name == "__pycache__"
            or (os.path.isfile(os.path.join(folder, name)) and not name.endswith((".py", ".pyi")))
        ],
        symlinks=True,
    )
    (destination.parent / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
    return destination


def _digests(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*.py*"))
        if path.is_file() and not path.is_symlink()
    }


def _fixable_files(root: Path) -> set[str]:
    result = run_cli("--format", "json", "--exit-zero", root.name, cwd=root.parent, timeout=LONG)
    return {
        str(Path(finding["filename"]).relative_to(root))
        for finding in json.loads(result.stdout)
        if finding["fix"] is not None
    }


def _check_fix_round_trip(root: Path) -> None:
    before = _digests(root)
    fixable = _fixable_files(root)
    first = run_cli(
        "--fix", "--unsafe-fixes", "--exit-zero", "-q", root.name, cwd=root.parent, timeout=LONG
    )
    assert first.returncode == 0, first.stderr[-2000:]
    after = _digests(root)
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed <= fixable
    for name in changed:
        cst.parse_module((root / name).read_bytes())  # still parses
    second = run_cli(
        "--fix", "--unsafe-fixes", "--exit-zero", "-q", root.name, cwd=root.parent, timeout=LONG
    )
    assert second.returncode == 0
    assert _digests(root) == after


def test_fix_round_trip_on_pytorch_source(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    _check_fix_round_trip(_python_tree(Path(torch.__file__).parent, tmp_path / "torch"))


def test_fix_round_trip_on_the_standard_library(tmp_path: Path) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    _check_fix_round_trip(_python_tree(stdlib, tmp_path / "stdlib"))
