"""The real command line, in a subprocess, over the bundled tutorial fixtures."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from devlint.rules import ALL_RULES, RULES_BY_CODE
from tests.helpers import FIXTURES, codes_of, findings_of, run_cli, without_fix_hint, write

# What a reader of each tutorial should see: (line, column, code, a fragment naming the construct).
RENAMED = "`torch.cuda.{}` is deprecated: renamed `torch.cuda.{}`"
EXPECTED: dict[str, list[tuple[int, int, str, str]]] = {
    "broken_syntax.py": [(6, 10, "DEV000", "syntax error: '(' was never closed")],
    "correct_training.py": [],
    "device_selection.py": [],
    "forgotten_labels.py": [
        (
            17,
            41,
            "DEV005",
            "`labels` is on the CPU (from the DataLoader at line 12) but "
            "`model(images)` is on `device` (output of `model`, moved to `device` "
            "at line 9)",
        ),
    ],
    "gpu_chapter.py": [
        (7, 5, "DEV001", "`x.cuda(0)`"),
        (9, 5, "DEV006", "`y` is on `cuda:0`"),
        (22, 1, "DEV001", "`net.cuda()`"),
    ],
    "guarded_use_gpu.py": [],
    "inference_helpers.py": [
        (12, 9, "DEV009", "`self.weights` is a plain tensor"),
        (
            20,
            5,
            "DEV004",
            "`image` stays on the CPU (created on the CPU by `torch.as_tensor(...)` at line 19)",
        ),
        (
            27,
            12,
            "DEV007",
            "`features.detach()` may be on a GPU (output of `encoder`, moved to "
            "`device` at line 25)",
        ),
        (31, 12, "DEV001", '`.to("cuda:1")` fails on a machine without CUDA'),
        (31, 17, "DEV010", '`"cuda:1"` hard-codes GPU 1'),
        (
            38,
            9,
            "DEV009",
            "`self.mask` caches a tensor made on the inputs' device (line 43), which "
            "`model.to(device)` does not move",
        ),
    ],
    "fabric_finetune.py": [
        (16, 22, "DEV005", "`model` was prepared by `fabric` at line 13"),
    ],
    "metric_functions.py": [
        (9, 26, "DEV007", "`targets` may be on a GPU (parameter `targets`)"),
        (9, 46, "DEV007", "`preds` may be on a GPU (parameter `preds`)"),
        (
            13,
            17,
            "DEV005",
            "`torch.arange(max_len)` creates a tensor on the CPU that is combined with "
            "`lengths[:, None]` at line 14, which is on the caller's device (parameter `lengths`)",
        ),
        (
            24,
            23,
            "DEV005",
            "`torch.tensor(100.0)` creates a tensor on the CPU that is combined with `logits` at "
            "line 25, which is on the caller's device (parameter `logits`)",
        ),
    ],
    "optional_gpu.py": [
        (
            11,
            22,
            "DEV007",
            "`inputs[:2]` may be on a GPU (moved with `.cuda()` to `cuda` at line 10, on some "
            "paths)",
        ),
        (
            18,
            15,
            "DEV005",
            "combined with `errors` at line 19, which is on the caller's device (created on "
            "`values.device`)",
        ),
    ],
    "training_loops.py": [
        (
            18,
            15,
            "DEV006",
            "`torch.zeros(1)` creates a tensor on the CPU that line 20 mixes with "
            "`weight.pow(2).sum()` on `device`",
        ),
        (
            43,
            13,
            "DEV005",
            "`sample` is on the CPU (created on the CPU by `torch.randn(...)` at line 42)",
        ),
        (
            60,
            15,
            "DEV005",
            "`torch.tensor([y for _, y in dataset])` creates a tensor on the CPU, but `evaluate`, "
            "called at line 61, combines it with a tensor on `device`",
        ),
    ],
    "sequence_models.py": [
        (
            31,
            37,
            "DEV005",
            "`tokens` is on the CPU (created on the CPU by `torch.tensor(...)` at line 30) but "
            "`self.embed` is a layer of the module, on the module's device",
        ),
        (
            35,
            13,
            "DEV007",
            "`embedding.detach()` may be on a GPU (an item of parameter `embeddings`)",
        ),
        (
            45,
            44,
            "DEV005",
            "`hidden` holds tensors on the CPU (created on the CPU by `torch.zeros(...)` at "
            "line 23) but `model` was moved to `device` at line 39",
        ),
        (
            70,
            46,
            "DEV005",
            "`positions` is on the CPU (created on the CPU by `torch.arange(...)` at line 69) "
            "but `StepEmbedding.forward` passes it to `self.table` at line 59",
        ),
        (
            81,
            72,
            "DEV017",
            "`lengths` may be on a GPU (computed at line 80 from input `tokens`) and "
            "`pack_padded_sequence` needs its lengths on the CPU",
        ),
    ],
    "lightning_module.py": [
        (
            30,
            21,
            "DEV005",
            "`torch.full((logits.shape[1],), 0.1)` creates a tensor on the CPU that is combined "
            "with `logits` at line 31, which is on the module's device",
        ),
        (33, 37, "DEV007", "`predictions` may be on a GPU (output of `self.head`"),
    ],
    "device_tests.py": [
        (37, 14, "DEV001", "also runs in the `device='npu'` case of `test_group_points`"),
    ],
    "reward_shaping.py": [
        (
            22,
            9,
            "DEV009",
            "`self.low` is a plain tensor: `model.to(device)` does not move it, yet `forward` "
            "uses it where a 0-dim CPU tensor cannot meet a GPU's (line 26)",
        ),
        (64, 28, "DEV008", "a checkpoint (the result goes into `load_state_dict`)"),
    ],
    "spectral_basis.py": [
        (
            24,
            9,
            "DEV006",
            "`torch.arange(-k, k)` creates a tensor on the CPU that line 27 mixes with "
            "`torch.conj(q.T)` on `device`",
        ),
    ],
    "memory_monitoring.py": [
        (8, 14, "DEV002", RENAMED.format("memory_cached", "memory_reserved")),
        (9, 12, "DEV002", RENAMED.format("max_memory_cached", "max_memory_reserved")),
    ],
    "suppressed.py": [],
    "training_guide.py": [
        (11, 13, "DEV003", "`optimizer` is a torch.optim optimizer, which has no `.to()`"),
        (13, 14, "DEV008", '`torch.load("checkpoint.pt")` has no `map_location`'),
    ],
}
# The notebook fixture: findings in three cells (tests/test_notebooks.py reads them closely).
NOTEBOOK_FINDINGS = [
    ("fixtures/gpu_tutorial.ipynb:cell 3", 2, 1, "DEV001"),
    ("fixtures/gpu_tutorial.ipynb:cell 6", 3, 13, "DEV005"),
    ("fixtures/gpu_tutorial.ipynb:cell 7", 1, 14, "DEV008"),
]
ALL_FINDINGS = sorted(
    [
        *(
            (f"fixtures/{name}", row, col, code)
            for name, expected in EXPECTED.items()
            for row, col, code, _ in expected
        ),
        *NOTEBOOK_FINDINGS,
    ]
)
FIXTURE_CODES = {code for *_, code in ALL_FINDINGS}
SUMMARY = "Found 39 problems in 16 files (20 files checked)."


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A copy of the fixtures in a project of its own, so the repository's settings stay out."""
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    (tmp_path / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
    return tmp_path


def test_the_fixtures_are_exactly_the_expected_ones() -> None:
    assert sorted(path.name for path in FIXTURES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_reports_what_its_reader_should_see(work: Path, name: str) -> None:
    result = run_cli(f"fixtures/{name}", cwd=work)
    lines = without_fix_hint(result.stdout)
    expected = EXPECTED[name]
    assert len(lines) == len(expected) + 1, result.stdout
    for line, (row, col, code, fragment) in zip(lines, expected):
        assert line.startswith(f"fixtures/{name}:{row}:{col}: {code} "), line
        assert fragment in line
    if expected:
        plural = "s" if len(expected) > 1 else ""
        assert lines[-1] == f"Found {len(expected)} problem{plural} in 1 file (1 file checked)."
        assert result.returncode == 1
    else:
        assert lines[-1] == "All checks passed! (1 file checked)"
        assert result.returncode == 0
    assert result.stderr == ""


def test_device_moves_suggest_the_guarded_device_idiom(work: Path) -> None:
    result = run_cli("fixtures/gpu_chapter.py", cwd=work)
    unguarded = [line for line in result.stdout.splitlines() if " DEV001 " in line]
    assert len(unguarded) == 2
    for line in unguarded:
        assert 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in line


def test_the_suppressed_fixture_has_findings_under_its_noqa_comments(work: Path) -> None:
    source = (work / "fixtures/suppressed.py").read_text(encoding="utf-8")
    (work / "unsuppressed.py").write_text(re.sub(r"  # noqa.*", "", source), encoding="utf-8")
    result = run_cli("unsuppressed.py", cwd=work)
    assert [(r, c, code) for _, r, c, code in findings_of(result.stdout)] == [
        (5, 9, "DEV001"), (6, 9, "DEV001"), (10, 5, "DEV001"), (12, 7, "DEV002"),
    ]  # fmt: skip


def test_whole_folder(work: Path) -> None:
    result = run_cli("fixtures", cwd=work)
    assert findings_of(result.stdout) == ALL_FINDINGS
    assert without_fix_hint(result.stdout)[-1] == SUMMARY
    assert result.returncode == 1


def test_check_subcommand_and_default_path_are_the_same_run(work: Path) -> None:
    implicit = run_cli("fixtures", cwd=work)
    assert run_cli("check", "fixtures", cwd=work).stdout == implicit.stdout
    assert run_cli(cwd=work).stdout == implicit.stdout  # no path: the current folder


def test_exit_zero(work: Path) -> None:
    result = run_cli("--exit-zero", "fixtures", cwd=work)
    assert result.returncode == 0
    assert findings_of(result.stdout) == ALL_FINDINGS


def test_quiet_prints_findings_only(work: Path) -> None:
    result = run_cli("--quiet", "fixtures", cwd=work)
    assert findings_of(result.stdout) == ALL_FINDINGS
    assert len(result.stdout.splitlines()) == len(ALL_FINDINGS)
    assert result.returncode == 1
    clean = run_cli("-q", "fixtures/device_selection.py", cwd=work)
    assert (clean.stdout, clean.returncode) == ("", 0)


def test_statistics_prints_only_the_counts_with_ruffs_fixable_marker(work: Path) -> None:
    findings = json.loads(run_cli("--output-format", "json", "fixtures", cwd=work).stdout)
    counts = Counter(finding["code"] for finding in findings)
    safe = {f["code"] for f in findings if f["fix"] and f["fix"]["applicability"] == "safe"}
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    width = len(str(rows[0][1]))
    result = run_cli("--statistics", "fixtures", cwd=work)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{count:>{width}}\t{code}\t{'[*]' if code in safe else '[ ]'} {RULES_BY_CODE[code].name}"
        for code, count in rows
    ]
    assert result.stdout.splitlines()[0] == "12\tDEV005\t[ ] missing-device-move"
    # With --unsafe-fixes the unsafe fixes count as fixable too.
    unsafe = run_cli("--statistics", "--unsafe-fixes", "fixtures", cwd=work).stdout
    assert " 3\tDEV008\t[*] load-without-map-location" in unsafe.splitlines()
    as_json = json.loads(run_cli("--statistics", "--format", "json", "fixtures", cwd=work).stdout)
    assert as_json == [
        {"code": code, "name": RULES_BY_CODE[code].name, "count": count, "fixable": code in safe}
        for code, count in rows
    ]


@pytest.mark.parametrize(
    ("flags", "codes"),
    [
        ((), FIXTURE_CODES),
        (("--select", "DEV001"), {"DEV000", "DEV001"}),  # a parse error is never passed silently
        (("--select", "DEV002", "--extend-select", "DEV008"), {"DEV000", "DEV002", "DEV008"}),
        (("--select", "DEV002", "--select", "DEV003"), {"DEV000", "DEV002", "DEV003"}),
        (("--select", "DEV002,DEV003"), {"DEV000", "DEV002", "DEV003"}),
        (
            ("--select", "DEV00", "--ignore", "DEV001"),
            {code for code in FIXTURE_CODES if code.startswith("DEV00")} - {"DEV001"},
        ),
        (("--ignore", "DEV001,DEV002"), FIXTURE_CODES - {"DEV001", "DEV002"}),
        (("--ignore", "DEV000"), FIXTURE_CODES - {"DEV000"}),
        # DEV010 and DEV017 escape the prefix
        (("--select", "ALL", "--ignore", "DEV00"), {"DEV010", "DEV017"}),
        (("--select", "DEV008", "--ignore", "DEV000"), {"DEV008"}),
    ],
)
def test_rule_selection_flags(work: Path, flags: tuple[str, ...], codes: set[str]) -> None:
    result = run_cli(*flags, "fixtures", cwd=work)
    assert codes_of(result.stdout) == codes
    assert result.returncode == (1 if codes else 0)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--select", "DEV999", "fixtures"), "'DEV999'"),
        (("--ignore", "XYZ", "fixtures"), "'XYZ'"),
        (("--extend-select", "DEV5", "fixtures"), "'DEV5'"),
        # Codes are case-sensitive, as in Ruff: one line naming the code, exit 2.
        (("--select", "dev001", "fixtures"), "'dev001' in the command line (rule codes are upper"),
        (("fixtures/no_such_file.py",), "fixtures/no_such_file.py"),
        (("--config", "missing.toml", "fixtures"), "missing.toml"),
    ],
)
def test_usage_errors_exit_2_naming_the_culprit(
    work: Path, args: tuple[str, ...], named: str
) -> None:
    result = run_cli(*args, cwd=work)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("devlint: error: ") and named in result.stderr


def test_config_errors_exit_2(work: Path) -> None:
    (work / "pyproject.toml").write_text("[tool.devlint]\nselekt = ['DEV001']\n", encoding="utf-8")
    result = run_cli("fixtures", cwd=work)
    assert (result.returncode, result.stdout) == (2, "")
    assert "unknown key `selekt`" in result.stderr
    (work / "pyproject.toml").write_text("[tool.devlint\n", encoding="utf-8")
    result = run_cli("fixtures", cwd=work)
    assert result.returncode == 2 and "invalid TOML" in result.stderr


def test_json_follows_ruffs_schema(work: Path) -> None:
    result = run_cli("--format", "json", "fixtures", cwd=work)
    assert result.returncode == 1
    findings = json.loads(result.stdout)
    keys = {"code", "name", "message", "filename", "location", "end_location", "fix", "url"}
    assert all(keys | {"noqa_row"} <= set(finding) for finding in findings)
    actual = [
        (
            Path(f["filename"]).resolve().as_posix() + (f":cell {f['cell']}" if f["cell"] else ""),
            f["location"]["row"],
            f["location"]["column"],
            f["code"],
        )
        for f in findings
    ]
    assert actual == [
        ((work / path).resolve().as_posix(), row, col, code)
        for path, row, col, code in ALL_FINDINGS
    ]
    for finding in findings:
        assert Path(finding["filename"]).is_absolute()
        fix = finding["fix"]
        fixable = RULES_BY_CODE[finding["code"]].fixable
        assert fix is None or (fixable and fix["applicability"] in ("safe", "unsafe"))
        assert finding["noqa_row"] == finding["location"]["row"]  # all one-line statements
        assert finding["end_location"]["row"] >= finding["location"]["row"] >= 1
    gpu = [f for f in findings if f["filename"].endswith("gpu_chapter.py")]
    assert gpu[0]["end_location"] == {"row": 7, "column": 14}  # just past `x.cuda(0)`
    assert gpu[0]["name"] == "unguarded-cuda" and "`x.cuda(0)`" in gpu[0]["message"]


def test_json_noqa_row_is_the_last_line_of_the_statement(tmp_path: Path) -> None:
    write(tmp_path, {"multi.py": "x = build(\n    y.cuda(),\n    z,\n)\n"})
    [finding] = json.loads(run_cli("--format", "json", "multi.py", cwd=tmp_path).stdout)
    assert (finding["location"]["row"], finding["noqa_row"]) == (2, 4)


def test_json_clean_run_is_an_empty_list(work: Path) -> None:
    result = run_cli("--format", "json", "fixtures/device_selection.py", cwd=work)
    assert (json.loads(result.stdout), result.returncode) == ([], 0)


def test_github_annotations(work: Path) -> None:
    result = run_cli("--format", "github", "fixtures/gpu_chapter.py", cwd=work)
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(
        "::error file=fixtures/gpu_chapter.py,line=7,col=5,endLine=7,endColumn=14,"
        "title=DEV001::DEV001 `x.cuda(0)` fails on a machine without CUDA"
    )
    assert lines[1].startswith("::error file=fixtures/gpu_chapter.py,line=9,col=5,")
    assert lines[2].startswith("::error file=fixtures/gpu_chapter.py,line=22,col=1,")
    assert result.returncode == 1


def test_stdin_with_stdin_filename(work: Path) -> None:
    source = (work / "fixtures/gpu_chapter.py").read_text(encoding="utf-8")
    result = run_cli("-", "--stdin-filename", "src/chapter.py", cwd=work, stdin=source)
    assert findings_of(result.stdout) == [
        ("src/chapter.py", 7, 5, "DEV001"), ("src/chapter.py", 9, 5, "DEV006"),
        ("src/chapter.py", 22, 1, "DEV001"),
    ]  # fmt: skip
    assert without_fix_hint(result.stdout)[-1] == "Found 3 problems in 1 file (1 file checked)."
    assert result.returncode == 1
    anonymous = run_cli("-", cwd=work, stdin=source)
    assert findings_of(anonymous.stdout)[0] == ("-", 7, 5, "DEV001")
    as_json = json.loads(run_cli("--format", "json", "-", "--stdin-filename", "a.py", cwd=work,
                                 stdin=source).stdout)  # fmt: skip
    assert Path(as_json[0]["filename"]).resolve() == (work / "a.py").resolve()


def test_stdin_honours_the_settings_of_its_filename(work: Path) -> None:
    write(work, {"pyproject.toml": """
        [tool.devlint]
        extend-exclude = ["generated"]
        per-file-ignores = { "tests/*" = ["DEV001"] }
    """})  # fmt: skip
    bug = "import torch\nx = x.cuda()\n"
    assert run_cli("-", "--stdin-filename", "tests/t.py", cwd=work, stdin=bug).returncode == 0
    assert run_cli("-", "--stdin-filename", "src/t.py", cwd=work, stdin=bug).returncode == 1
    named = run_cli("-", "--stdin-filename", "generated/t.py", cwd=work, stdin=bug)
    assert named.returncode == 1
    forced = run_cli(
        "--force-exclude", "-", "--stdin-filename", "generated/t.py", cwd=work, stdin=bug
    )
    assert (forced.returncode, forced.stdout) == (0, "All checks passed! (0 files checked)\n")


def test_config_file_option(work: Path) -> None:
    write(work, {"settings/devlint.toml": 'select = ["DEV003"]\n',
                 "settings/pyproject.toml": '[tool.devlint]\nignore = ["DEV001", "DEV000"]\n',
                 "settings/empty.toml": "[tool.other]\nx = 1\n"})  # fmt: skip
    result = run_cli("--config", "settings/devlint.toml", "fixtures", cwd=work)
    assert codes_of(result.stdout) == {"DEV000", "DEV003"}
    result = run_cli("--config", "settings/pyproject.toml", "fixtures", cwd=work)
    assert codes_of(result.stdout) == FIXTURE_CODES - {"DEV000", "DEV001"}
    result = run_cli("--config", "settings/empty.toml", "fixtures", cwd=work)
    assert result.returncode == 2 and "settings/empty.toml" in result.stderr


def test_force_exclude_applies_excludes_to_named_paths(work: Path) -> None:
    write(work, {"pyproject.toml": '[tool.devlint]\nextend-exclude = ["fixtures/gpu_*.py"]\n'})
    assert codes_of(run_cli("fixtures/gpu_chapter.py", cwd=work).stdout) == {"DEV001", "DEV006"}
    forced = run_cli("--force-exclude", "fixtures/gpu_chapter.py", cwd=work)
    assert (forced.returncode, forced.stdout) == (0, "All checks passed! (0 files checked)\n")
    folder = run_cli("fixtures", cwd=work)  # excluded while walking a folder, without the flag
    checked = f"({len(EXPECTED)} files checked)"  # one Python file less, and the notebook
    assert "gpu_chapter" not in folder.stdout and checked in folder.stdout


def test_version(work: Path) -> None:
    result = run_cli("--version", cwd=work)
    assert result.returncode == 0 and re.search(r"devlint, version \d+\.\d+\.\d+", result.stdout)


def test_explain(work: Path) -> None:
    result = run_cli("explain", "DEV001", cwd=work)
    assert result.returncode == 0
    assert result.stdout.startswith("# DEV001 (unguarded-cuda)\n")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead",
                    "## Fix safety"):  # fmt: skip
        assert f"\n{section}\n" in result.stdout
    assert run_cli("explain", "dev008", cwd=work).stdout.startswith(
        "# DEV008 (load-without-map-location)"
    )


def test_explain_unknown_code(work: Path) -> None:
    result = run_cli("explain", "NOPE", cwd=work)
    assert (result.returncode, result.stdout) == (2, "")
    assert "NOPE" in result.stderr


def test_rules_lists_every_code(work: Path) -> None:
    result = run_cli("rules", cwd=work)
    assert result.returncode == 0
    listed = [line.split()[:2] for line in result.stdout.splitlines()[1:]]
    assert listed == [[rule.code, rule.name] for rule in ALL_RULES]


def test_overlapping_paths_lint_each_file_once(work: Path) -> None:
    # BUG (devlint/discovery.py iter_python_files): overlapping paths lint a file once per mention.
    result = run_cli("fixtures/gpu_chapter.py", "fixtures", cwd=work)
    assert findings_of(result.stdout) == ALL_FINDINGS
    assert without_fix_hint(result.stdout)[-1] == SUMMARY


def test_message_quotes_the_call_without_its_parentheses(tmp_path: Path) -> None:
    # BUG (devlint/context.py source_of): parentheses around a call end up in the message.
    write(tmp_path, {"paren.py": "y = (x.cuda())\n"})
    [line] = run_cli("-q", "paren.py", cwd=tmp_path).stdout.splitlines()
    assert line.startswith("paren.py:1:6: DEV001 `x.cuda()` fails")
