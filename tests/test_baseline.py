"""`--write-baseline` and `--baseline`: legacy findings recorded once, only new ones reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devlint.baseline import BaselineError, fingerprint, load_baseline
from tests.helpers import findings_of, run_cli, write

LEGACY = """\
import torch

model = Net().cuda()
print(torch.cuda.memory_cached())
"""
TWINS = """\
import torch

a = Net().cuda()
a = Net().cuda()
"""


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    write(tmp_path, {"src/train.py": LEGACY, "src/twins.py": TWINS, "src/ok.py": "x = 1\n"})
    result = run_cli("--write-baseline", "devlint-baseline.json", "src", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "recorded 4 findings in devlint-baseline.json" in result.stderr
    return tmp_path


def test_the_baseline_records_code_file_and_fingerprint(legacy: Path) -> None:
    document = json.loads((legacy / "devlint-baseline.json").read_text(encoding="utf-8"))
    assert document["version"] == 1
    recorded = [(entry["code"], entry["file"]) for entry in document["findings"]]
    assert sorted(recorded) == [
        ("DEV001", "src/train.py"), ("DEV001", "src/twins.py"), ("DEV001", "src/twins.py"),
        ("DEV002", "src/train.py"),
    ]  # fmt: skip
    assert "line" not in json.dumps(document)  # no line numbers: they shift
    twins = {e["fingerprint"] for e in document["findings"] if e["file"] == "src/twins.py"}
    assert len(twins) == 2  # identical lines told apart by their occurrence


def test_nothing_new_nothing_reported(legacy: Path) -> None:
    result = run_cli("--baseline", "devlint-baseline.json", "src", cwd=legacy)
    assert (result.returncode, result.stdout) == (
        0,
        "All checks passed! (3 files checked, 4 hidden by the baseline)\n",
    )


def test_moved_lines_stay_baselined_and_only_the_new_bug_is_reported(legacy: Path) -> None:
    moved = '"""Training, now with a docstring."""\nimport os\n\n' + LEGACY
    new_bug = "\nx = torch.load(ckpt)\n"
    write(legacy, {"src/train.py": moved + new_bug, "src/twins.py": "\n\n" + TWINS})
    result = run_cli("--baseline", "devlint-baseline.json", "src", cwd=legacy)
    assert result.returncode == 1
    assert findings_of(result.stdout) == [("src/train.py", 9, 5, "DEV008")]
    without = run_cli("src", cwd=legacy)
    assert len(findings_of(without.stdout)) == 5


def test_a_third_identical_line_is_new(legacy: Path) -> None:
    write(legacy, {"src/twins.py": TWINS + "a = Net().cuda()\n"})
    result = run_cli("--baseline", "devlint-baseline.json", "src", cwd=legacy)
    assert [code for _, _, _, code in findings_of(result.stdout)] == ["DEV001"]


def test_an_edited_line_is_new(legacy: Path) -> None:
    write(legacy, {"src/train.py": LEGACY.replace("model = Net()", "model = Other()")})
    result = run_cli("--baseline", "devlint-baseline.json", "src", cwd=legacy)
    assert findings_of(result.stdout) == [("src/train.py", 3, 9, "DEV001")]


def test_the_baseline_works_from_another_folder(legacy: Path) -> None:
    # Files are recorded relative to the baseline's folder, not to where devlint runs.
    write(legacy, {"src/train.py": LEGACY + "x = torch.load(ckpt)\n"})
    result = run_cli("--baseline", "../devlint-baseline.json", ".", cwd=legacy / "src")
    assert findings_of(result.stdout) == [("train.py", 5, 5, "DEV008")]


def test_standard_input_uses_the_baseline(legacy: Path) -> None:
    result = run_cli(
        "--baseline", "devlint-baseline.json", "-", "--stdin-filename", "src/train.py",
        cwd=legacy, stdin="\n\n" + LEGACY,
    )  # fmt: skip
    assert (result.returncode, findings_of(result.stdout)) == (0, [])


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "does not exist"),
        ("{not json", "is not valid JSON"),
        ('{"version": 99, "findings": []}', "is not a devlint baseline"),
        ('{"version": 1, "findings": [{"code": "DEV001"}]}', "needs `code`, `file`"),
    ],
)
def test_a_missing_or_corrupt_baseline_is_an_error(
    tmp_path: Path, content: str | None, reason: str
) -> None:
    write(tmp_path, {"train.py": LEGACY})
    if content is not None:
        (tmp_path / "base.json").write_text(content, encoding="utf-8")
    result = run_cli("--baseline", "base.json", "train.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert "base.json" in result.stderr and reason in result.stderr


def test_load_baseline_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"nowhere\.json"):
        load_baseline(tmp_path / "nowhere.json")


def test_fingerprint_ignores_indentation_but_not_the_code() -> None:
    assert fingerprint("DEV001", "    x.cuda()", 0) == fingerprint("DEV001", "x.cuda()", 0)
    assert fingerprint("DEV001", "x.cuda()", 0) != fingerprint("DEV001", "x.cuda()", 1)
    assert fingerprint("DEV001", "x.cuda()", 0) != fingerprint("DEV010", "x.cuda()", 0)
