"""Crash-freedom and `--fix --unsafe-fixes` over real code: PyTorch's source and the stdlib.

Every file is linted with every rule without an internal error; fixed in memory, it
still parses, it changes only if it had a fixable finding, and fixing the result again
changes nothing. The files that do change then go through the real command line, twice,
on a temporary copy, once with an unknown torch floor and once with `torch-version =
"2.7"`; each fixed copy passes `ruff check --select E9,F63,F7,F82` (no new undefined
name) wherever its original did. The fixtures, once fixed, run to completion on the
CPU-only torch with FutureWarnings as errors, or fail for the reason documented below.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import libcst as cst
import pytest

from devlint.diagnostics import PARSE_ERROR_CODE
from devlint.engine import RuleSet, lint_source
from devlint.fixing import fix_source
from devlint.rules import ALL_RULES
from tests.helpers import FIXTURES, run_cli

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


# Ruff's syntax errors, invalid comparisons, misplaced statements and undefined names.
RUFF_SELECT = "E9,F63,F7,F82"
# The copies fixed with each floor: an unknown one, and one that writes `torch.accelerator`.
_JSON = ("--output-format", "json", "--exit-zero")
FLOORS = {"copies": "", "copies27": 'torch-version = "2.7"\n'}


def _ruff_problems(folder: Path) -> dict[str, set[tuple[str, int]]]:
    """Per file name, the (code, row) of each problem ``ruff check --select RUFF_SELECT`` sees."""
    completed = subprocess.run(
        ["ruff", "check", "--isolated", "--no-cache", "--select", RUFF_SELECT, *_JSON, "."],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    problems: dict[str, set[tuple[str, int]]] = {}
    for item in json.loads(completed.stdout or "[]"):
        name = Path(item["filename"]).name
        problems.setdefault(name, set()).add((item["code"], item["location"]["row"]))
    return problems


def _check_tree(root: Path, scratch: Path) -> int:
    changed = [path for path in _python_files(root) if _check_in_memory(path)]
    originals = scratch / "originals"
    for folder in (originals, *(scratch / name for name in FLOORS)):
        folder.mkdir(parents=True)
        for index, path in enumerate(changed):
            shutil.copyfile(path, folder / f"{index:05d}_{path.name}")
    (scratch / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
    for name, table in FLOORS.items():
        (scratch / name / "pyproject.toml").write_text(f"[tool.devlint]\n{table}", "utf-8")
    if changed:
        arguments = ("--fix", "--unsafe-fixes", "--exit-zero", "-q", *FLOORS)
        first = run_cli(*arguments, cwd=scratch, timeout=1800)
        assert first.returncode == 0, first.stderr[-2000:]
        fixed = {p: p.read_bytes() for name in FLOORS for p in (scratch / name).glob("*.py")}
        for data in fixed.values():
            cst.parse_module(data)
        second = run_cli(*arguments, cwd=scratch, timeout=1800)
        assert second.returncode == 0
        assert {p: p.read_bytes() for p in fixed} == fixed
        if shutil.which("ruff") is not None:
            _assert_no_new_ruff_problems(scratch)
    return len(changed)


def _assert_no_new_ruff_problems(scratch: Path) -> None:
    before = _ruff_problems(scratch / "originals")
    for name in FLOORS:
        after = _ruff_problems(scratch / name)
        new = {
            file: sorted({code for code, _ in problems} - {c for c, _ in before.get(file, ())})
            for file, problems in after.items()
        }
        assert not {file: codes for file, codes in new.items() if codes}, name


@pytest.mark.slow
def test_fix_round_trip_on_pytorch_source(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    assert _check_tree(Path(torch.__file__).parent, tmp_path) > 0


@pytest.mark.slow
def test_fix_round_trip_on_the_standard_library(tmp_path: Path) -> None:
    _check_tree(Path(sysconfig.get_paths()["stdlib"]), tmp_path)


# The fixtures that cannot run, even fixed, and the error each stops with: never a device one.
CANNOT_RUN = {
    "broken_syntax.py": "SyntaxError",  # a parse error, on purpose
    "correct_training.py": "NameError: name 'train_set' is not defined",  # a snippet: no data
    "forgotten_labels.py": "NameError: name 'train_set' is not defined",  # a snippet: no data
    # its unguarded `.cuda()` is suppressed on purpose, and suppressed findings are never fixed
    "suppressed.py": "Torch not compiled with CUDA enabled",
    # DEV003 (`optimizer.to(device)`) has no fix: the code needs a decision of its author
    "training_guide.py": "'SGD' object has no attribute 'to'",
}
if importlib.util.find_spec("pytorch_lightning") is None:  # no dependency of devlint's tests
    CANNOT_RUN["lightning_module.py"] = "No module named 'pytorch_lightning'"
if importlib.util.find_spec("lightning") is None:
    CANNOT_RUN["fabric_finetune.py"] = "No module named 'lightning'"
RUNNABLE = sorted(p.name for p in FIXTURES.glob("*.py") if p.name not in CANNOT_RUN)


@pytest.fixture(scope="module")
def fixed_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("fixtures")
    for path in FIXTURES.glob("*.py"):
        shutil.copyfile(path, folder / path.name)
    run_cli(".", "--fix", "--unsafe-fixes", "--no-cache", "--exit-zero", "-q", cwd=folder)
    return folder


def _run(folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("name", RUNNABLE)
def test_each_fixed_fixture_runs_on_a_cpu_only_torch(fixed_fixtures: Path, name: str) -> None:
    completed = _run(fixed_fixtures, name)
    assert completed.returncode == 0, completed.stderr[-2000:]


@pytest.mark.parametrize("name", sorted(CANNOT_RUN))
def test_the_fixtures_that_cannot_run_stop_for_their_documented_reason(
    fixed_fixtures: Path, name: str
) -> None:
    completed = _run(fixed_fixtures, name)
    assert completed.returncode != 0 and CANNOT_RUN[name] in completed.stderr, completed.stderr


def test_the_cuda_fixtures_crashed_on_a_cpu_only_torch_before_the_fix(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    shutil.copyfile(FIXTURES / "gpu_chapter.py", tmp_path / "gpu_chapter.py")
    completed = _run(tmp_path, "gpu_chapter.py")
    assert completed.returncode != 0 and "x = x.cuda(0)" in completed.stderr
