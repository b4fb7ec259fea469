"""`devlint confirm` tells the whole truth about its runs (#16, #20): failing tests by node id,
crashes no finding covers as DEV900 findings, `not-reached` and re-runs past a crash, script
arguments, src layouts, the options `check --confirm` refuses, the mps profile, and tracebacks
of `pytest --vgpu` that end at the user's line.

One project holds a file per case; one `devlint confirm` run judges them all.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from devlint.diagnostics import Finding, Position
from devlint.runtime.confirm import needed_profiles
from devlint.runtime.outcome import Entry, Failure, RunOutcome
from devlint.runtime.profiles import MPS_FLOAT64_MESSAGE
from devlint.runtime.verdicts import judge, runtime_findings
from tests.helpers import run_cli

PYPROJECT = """
    [project]
    name = "demo"

    [tool.devlint.confirm]
    args = {"configured_args.py" = ["--epochs", "1"]}
"""

FILES = {
    # A crash at a line no static rule reports: an integer device (held in a name, which
    # DEV012 does not follow) means the current accelerator, and a CPU-only machine has none.
    "int_device.py": """
        import torch

        index = 0
        x = torch.zeros(2, device=index)
    """,
    # `torch.device(None)` raises (what `current_accelerator()` gives without an accelerator).
    "no_accelerator.py": """
        import torch

        dev = None
        x = torch.ones(2).to(torch.device(dev))
    """,
    # The same two hazards as DEV012 and DEV015 see them: confirmed, no DEV900.
    "int_literal.py": """
        import torch

        x = torch.zeros(2, device=0)
    """,
    "current_accelerator.py": """
        import torch

        dev = torch.accelerator.current_accelerator()
        x = torch.ones(2).to(torch.device(dev))
    """,
    # Two unguarded CUDA lines: the second runs only once the first is sent to the CPU.
    "two_crashes.py": """
        import torch

        model = torch.nn.Linear(3, 2).cuda()
        x = torch.ones(1, 3).cuda()
        print(model(x))
    """,
    # An exception in the code stops the run before the finding: not-reached, and a DEV900.
    "stops_early.py": """
        import torch

        ratio = 1 / 0
        x = torch.zeros(3).cuda()
    """,
    # A required argument, given by nobody: the run ends with argparse's message.
    "needs_args.py": """
        import argparse
        import torch

        parser = argparse.ArgumentParser()
        parser.add_argument("--epochs", type=int, required=True)
        args = parser.parse_args()
        x = torch.zeros(args.epochs).cuda()
    """,
    # The same, with its arguments in [tool.devlint.confirm].
    "configured_args.py": """
        import argparse
        import torch

        parser = argparse.ArgumentParser()
        parser.add_argument("--epochs", type=int, required=True)
        args = parser.parse_args()
        x = torch.zeros(args.epochs).cuda()
    """,
    # A src layout: the package is importable only with src/ on the path.
    "src/toolkit/__init__.py": """
        def width():
            return 3
    """,
    "uses_src.py": """
        import torch
        from toolkit import width

        x = torch.zeros(width()).cuda()
    """,
    "tests/test_model.py": """
        import torch


        def test_passes():
            assert torch.ones(2).sum().item() == 2


        def test_fails():
            total = torch.ones(2).sum().item()
            assert total == 3
    """,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("runs") / "project"
    for name, source in {"pyproject.toml": PYPROJECT, **FILES}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(source).lstrip())
    return root


@pytest.fixture(scope="module")
def report(project: Path) -> dict[str, Any]:
    completed = run_cli(
        "confirm", "--format", "json", "-q", "-j", "2", "--profile", "cpu-host", ".",
        cwd=project, timeout=900,
    )  # fmt: skip
    assert completed.returncode == 1, completed.stderr
    data: dict[str, Any] = json.loads(completed.stdout)
    return data


def _findings(report: dict[str, Any], filename: str, code: str) -> list[dict[str, Any]]:
    return [
        finding
        for finding in report["findings"]
        if Path(finding["filename"]).as_posix().endswith(filename) and finding["code"] == code
    ]


def _runs(report: dict[str, Any], entry: str) -> list[dict[str, Any]]:
    return [run for run in report["runs"] if run["entry"] == entry]


def test_failing_tests_are_reported_by_node_id(report: dict[str, Any]) -> None:
    (run,) = _runs(report, "pytest .")
    assert run["status"] == "tests-failed"
    assert run["failed_tests"] == ["tests/test_model.py::test_fails"]
    assert run["detail"] == "1 test failed: tests/test_model.py::test_fails"
    (finding,) = _findings(report, "tests/test_model.py", "DEV900")
    assert finding["location"] == {"row": 10, "column": 5}
    assert finding["verdict"]["test"] == "tests/test_model.py::test_fails"
    assert finding["verdict"]["detail"].startswith("AssertionError: assert 2.0 == 3")


def test_a_crash_no_finding_covers_is_a_runtime_finding(report: dict[str, Any]) -> None:
    (finding,) = _findings(report, "int_device.py", "DEV900")
    assert finding["name"] == "runtime-error"
    assert (finding["location"], finding["verdict"]["status"]) == (
        {"row": 4, "column": 1},
        "confirmed",
    )
    assert "Cannot access accelerator device when none is available" in finding["message"]
    assert "an integer device such as `device=0`" in finding["message"]
    (none_device,) = _findings(report, "no_accelerator.py", "DEV900")
    assert none_device["location"]["row"] == 4
    assert "`torch.device(None)`" in none_device["message"]


def test_the_accelerator_rules_are_confirmed_on_the_cpu_only_torch(report: dict[str, Any]) -> None:
    (integer,) = _findings(report, "int_literal.py", "DEV012")
    assert (integer["location"]["row"], integer["verdict"]["status"]) == (3, "confirmed")
    (current,) = _findings(report, "current_accelerator.py", "DEV015")
    assert (current["location"]["row"], current["verdict"]["status"]) == (4, "confirmed")
    assert _findings(report, "int_literal.py", "DEV900") == []
    assert _findings(report, "current_accelerator.py", "DEV900") == []


def test_the_runtime_finding_is_documented() -> None:
    completed = run_cli("explain", "DEV900", cwd=Path.cwd())
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("# DEV900 (runtime-error)")
    assert "Cannot access accelerator device when none is available" in completed.stdout
    assert "MPS framework doesn't support float64" in completed.stdout


def test_reruns_go_past_a_confirmed_crash(report: dict[str, Any]) -> None:
    first, second = _findings(report, "two_crashes.py", "DEV001")
    assert (first["location"]["row"], first["verdict"]["status"]) == (3, "confirmed")
    assert (second["location"]["row"], second["verdict"]["status"]) == (4, "confirmed")
    runs = _runs(report, "two_crashes.py")
    assert [run["patched"] for run in runs] == [
        [],
        [{"path": "two_crashes.py", "line": 3}],
        [{"path": "two_crashes.py", "line": 3}, {"path": "two_crashes.py", "line": 4}],
    ]
    assert [run["status"] for run in runs] == ["failed", "failed", "completed"]


def test_a_finding_after_a_crash_is_not_reached(report: dict[str, Any]) -> None:
    (finding,) = _findings(report, "stops_early.py", "DEV001")
    assert finding["verdict"]["status"] == "not-reached"
    assert finding["verdict"]["detail"] == (
        "the run stopped before line 4: ZeroDivisionError: division by zero (at stops_early.py:3)"
    )
    (crash,) = _findings(report, "stops_early.py", "DEV900")
    assert crash["location"]["row"] == 3


def test_an_exit_status_shows_the_scripts_stderr(report: dict[str, Any]) -> None:
    (run,) = _runs(report, "needs_args.py")
    assert run["status"] == "failed"
    assert run["detail"].startswith("exited with status 2\nusage: needs_args.py")
    assert "the following arguments are required: --epochs" in run["detail"]
    (finding,) = _findings(report, "needs_args.py", "DEV001")
    assert finding["verdict"]["status"] == "not-reached"


def test_configured_arguments_are_given_to_the_script(report: dict[str, Any]) -> None:
    (finding,) = _findings(report, "configured_args.py", "DEV001")
    assert finding["verdict"]["status"] == "confirmed"


def test_a_src_layout_imports(report: dict[str, Any]) -> None:
    (finding,) = _findings(report, "uses_src.py", "DEV001")
    assert finding["verdict"]["status"] == "confirmed", finding["verdict"]


def test_arguments_on_the_command_line(project: Path) -> None:
    completed = run_cli(
        "confirm", "-q", "--args", "--epochs 2", "needs_args.py", cwd=project, timeout=300
    )
    assert completed.returncode == 1, completed.stderr
    assert "  -> confirmed under cpu-host (needs_args.py): AssertionError: Torch" in (
        completed.stdout
    )


def test_text_report_shows_stderr_and_reruns(project: Path) -> None:
    completed = run_cli(
        "confirm", "-q", "needs_args.py", "two_crashes.py", cwd=project, timeout=300
    )
    lines = completed.stdout.splitlines()
    assert "  needs_args.py under cpu-host: failed" in "\n".join(lines)
    assert (
        "    stderr: needs_args.py: error: the following arguments are required: --epochs" in lines
    )
    assert any("(re-run with the device calls of two_crashes.py:3 on the CPU)" in x for x in lines)
    assert lines[-1].endswith(", 1 not-reached, 0 unreachable, 0 error.")


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (["--format", "sarif"], "--format sarif cannot be used with --confirm"),
        (["--format", "github"], "--format github cannot be used with --confirm"),
        (["--fix"], "--fix cannot be used with --confirm"),
        (["--diff"], "--diff cannot be used with --confirm"),
        (["--statistics"], "--statistics cannot be used with --confirm"),
        (["--fix-only"], "--fix-only cannot be used with --confirm"),
        (["--add-noqa"], "--add-noqa cannot be used with --confirm"),
        (["--show-settings"], "--show-settings cannot be used with --confirm"),
        (["--write-baseline", "b.json"], "--write-baseline cannot be used with --confirm"),
        (["--baseline", "missing.json"], "baseline missing.json does not exist"),
    ],
)
def test_check_confirm_refuses_what_it_cannot_honour(
    tmp_path: Path, options: list[str], reason: str
) -> None:
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    completed = run_cli("check", "--confirm", *options, "train.py", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.startswith(f"devlint: error: {reason}")
    assert len(completed.stderr.splitlines()) == 1
    assert not (tmp_path / "b.json").exists()
    assert (tmp_path / "train.py").read_text() == "import torch\nx = torch.zeros(3).cuda()\n"


def test_check_confirm_applies_a_baseline_and_exit_zero(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    recorded = run_cli("check", "--write-baseline", "base.json", "train.py", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    (tmp_path / "train.py").write_text(
        "import torch\nx = torch.zeros(3).cuda()\ny = torch.ones(3).cuda()\n"
    )
    completed = run_cli(
        "check", "--confirm", "-q", "--baseline", "base.json", "--exit-zero", "train.py",
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("train.py:3:5: DEV001")
    assert "train.py:2:" not in completed.stdout
    assert "1 confirmed" in completed.stdout.splitlines()[-1]


MAC_SCRIPT = """
    import torch

    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    x = torch.ones(3, device=device)
    assert str(x.device) == "mps:0" and x.is_mps and not x.is_cuda
    scores = torch.ones(3).to(device).double()
"""


def test_the_mps_profile_confirms_float64_on_mps(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.backends.mps.is_available() or torch.cuda.is_available():
        pytest.skip("a real accelerator is present")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "mac.py").write_text(textwrap.dedent(MAC_SCRIPT).lstrip())
    completed = run_cli(
        "confirm", "--format", "json", "-q", "--profile", "mps", "mac.py",
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    # The `assert` on the device guards the rest of the script, so DEV016 is silent: a DEV900.
    (finding,) = _findings(report, "mac.py", "DEV900")
    assert finding["location"]["row"] == 11
    assert finding["verdict"]["profile"] == "mps"
    assert finding["verdict"]["detail"] == (
        "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't "
        "support float64. Please use float32 instead."
    )


def test_double_on_mps_is_confirmed_under_the_mps_profile(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.backends.mps.is_available() or torch.cuda.is_available():
        pytest.skip("a real accelerator is present")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    script = textwrap.dedent(MAC_SCRIPT).lstrip().replace("assert str(x.device)", "# str(x.device)")
    (tmp_path / "mac.py").write_text(script)
    completed = run_cli(
        "confirm", "--format", "json", "-q", "--profile", "mps", "mac.py",
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    (finding,) = _findings(report, "mac.py", "DEV016")
    assert finding["location"] == {"row": 11, "column": 10}
    assert (finding["verdict"]["status"], finding["verdict"]["profile"]) == ("confirmed", "mps")
    assert _findings(report, "mac.py", "DEV900") == []


VGPU_FAILURES = """
    import torch


    def test_mixes_devices():
        torch.ones(3).cuda() + torch.ones(3)


    def test_numpy():
        torch.ones(3).cuda().numpy()
"""


def test_pytest_vgpu_tracebacks_end_at_the_users_line(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a real GPU is present: --vgpu steps aside")
    (tmp_path / "test_gpu.py").write_text(textwrap.dedent(VGPU_FAILURES).lstrip())
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--vgpu", "test_gpu.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "2 failed" in completed.stdout, completed.stdout
    assert "devlint/runtime" not in completed.stdout, completed.stdout
    assert "test_gpu.py:5: RuntimeError" in completed.stdout
    assert "test_gpu.py:9: TypeError" in completed.stdout


def _finding(root: Path, code: str, message: str, row: int) -> Finding:
    return Finding(
        str(root / "train.py"), code, "new-rule", message, Position(row, 5), Position(row, 20), row
    )


def test_a_rule_newer_than_the_table_is_confirmed_by_the_device_error_at_its_line(
    tmp_path: Path,
) -> None:
    """The integer-device and float64-on-MPS rules are written in parallel, their codes not yet
    known: a code the runtime table lacks is judged by the device error raised at its line."""
    findings = [
        _finding(tmp_path, "DEV099", "`device=0` names the current accelerator", 3),
        _finding(tmp_path, "DEV098", "float64 on a device that can be MPS", 5),
    ]
    no_accelerator = Failure(
        "RuntimeError",
        "Cannot access accelerator device when none is available.",
        [("train.py", 3)],
    )
    host = RunOutcome(Entry("script", "train.py"), "cpu-host", "failed", failures=[no_accelerator])
    float64 = Failure("TypeError", MPS_FLOAT64_MESSAGE, [("train.py", 5)])
    mac = RunOutcome(Entry("script", "train.py"), "mps", "failed", failures=[float64])
    judgement = judge(findings, [host, mac], tmp_path)
    integer, mps = judgement.verdicts
    assert integer is not None and (integer.status, integer.profile) == ("confirmed", "cpu-host")
    assert mps is not None and (mps.status, mps.profile) == ("confirmed", "mps")
    assert runtime_findings([host, mac], tmp_path, judgement.explained) == []
    assert needed_profiles(findings[1:], tmp_path, None, ()) == ["mps"]


@pytest.mark.parametrize(
    ("code", "failure", "profile"),
    [
        ("DEV012", ("RuntimeError", "Cannot access accelerator device when none is available."),
         "cpu-host"),
        ("DEV013", ("TypeError", "type torch.cuda.FloatTensor not available. Torch not compiled "
                    "with CUDA enabled."), "cpu-host"),
        ("DEV014", ("AttributeError", "module 'torch._C' has no attribute '_cuda_setDevice'"),
         "cpu-host"),
        ("DEV014", ("RuntimeError", "Tried to instantiate dummy base class Event"), "cpu-host"),
        ("DEV015", ("TypeError", "device() received an invalid combination of arguments - got "
                    "(NoneType), but expected one of:"), "cpu-host"),
        ("DEV016", ("TypeError", MPS_FLOAT64_MESSAGE), "mps"),
        ("DEV017", ("RuntimeError", "'lengths' argument should be a 1D CPU int64 tensor, but "
                    "got 1D cuda:0 Long tensor"), "vgpu"),
    ],
)  # fmt: skip
def test_the_accelerator_rules_are_confirmed_by_their_own_errors(
    tmp_path: Path, code: str, failure: tuple[str, str], profile: str
) -> None:
    findings = [_finding(tmp_path, code, "", 3)]
    run = RunOutcome(
        Entry("script", "train.py"),
        profile,
        "failed",
        failures=[Failure(*failure, [("train.py", 3)])],
    )
    assert needed_profiles(findings, tmp_path, None, ()) == [profile]
    (verdict,) = judge(findings, [run], tmp_path).verdicts
    assert verdict is not None and (verdict.status, verdict.profile) == ("confirmed", profile)
