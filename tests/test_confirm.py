"""`devlint confirm`: lint, run the scripts under cpu-host and vgpu, and judge each finding.

One project holds a script per case; one `devlint confirm` run (through the real command line)
judges them all, and each test reads its verdict from the JSON report.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli

# Where a real GPU is present, the runs asked for vgpu run on it (profile "gpu").
ON_A_GPU = {"vgpu", "gpu"}

SCRIPTS = {
    # DEV001 under cpu-host: a GPU is assumed.
    "no_gpu.py": """
        import torch
        from torch import nn

        model = nn.Linear(3, 2).cuda()
        print(model(torch.ones(1, 3).cuda()))
    """,
    # DEV005 under vgpu: the input stays on the CPU while the model moved.
    "module_input.py": """
        import torch
        from torch import nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(3, 2).to(device)
        x = torch.randn(4, 3)
        out = model(x)
    """,
    # DEV006 under vgpu: an operation mixing devices.
    "cross_device.py": """
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        w = torch.ones(3).to(device)
        total = w * 2 + torch.ones(3)
    """,
    # DEV007 under vgpu: .numpy() on a CUDA tensor.
    "to_numpy.py": """
        import torch
        from torch import nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(3, 2).to(device)
        preds = model(torch.ones(4, 3).to(device))
        array = preds.detach().numpy()
    """,
    # DEV004 and DEV009 under vgpu: the runtime traces the CPU operand back to the finding.
    "discarded_move.py": """
        import torch
        from torch import nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(3, 2).to(device)
        image = torch.as_tensor([[1.0, 2.0, 3.0]])
        image.to(device)
        out = model(image)
    """,
    "plain_attribute.py": """
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(3)
                self.fc = nn.Linear(3, 3)

            def forward(self, x):
                return self.fc(x) * self.scale


        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = Net().to(device)
        net(torch.ones(2, 3, device=device))
    """,
    # DEV008 under cpu-host: a checkpoint saved on a GPU, loaded without map_location.
    "load_checkpoint.py": """
        import torch

        state = torch.load("checkpoint.pt")
    """,
    # Guarded by the environment: the device is the CPU unless DEVICE says otherwise, so the
    # .numpy() runs without error (not reproduced), and the helper is never called (unreachable).
    "guarded.py": """
        import os
        import torch

        device = torch.device(os.environ.get("DEVICE", "cpu"))
        x = torch.ones(3).to(device)
        print(x.numpy())


        def never_called():
            return torch.zeros(3).cuda()
    """,
}


def _write_gpu_checkpoint(path: Path) -> None:
    """A checkpoint whose storages are tagged cuda:0, written on the virtual GPU (or a real one)."""
    code = (
        "import sys, torch\n"
        "if not torch.cuda.is_available():\n"
        "    from devlint.runtime import vgpu; vgpu.install()\n"
        "torch.save({'w': torch.ones(2, device='cuda')}, sys.argv[1])\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=300)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("confirm") / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for name, source in SCRIPTS.items():
        (root / name).write_text(textwrap.dedent(source).lstrip())
    _write_gpu_checkpoint(root / "checkpoint.pt")
    completed = run_cli("confirm", "--format", "json", "-q", "-j", "2", ".", cwd=root, timeout=900)
    assert completed.returncode == 1, completed.stderr  # 1: findings were confirmed
    data: dict[str, Any] = json.loads(completed.stdout)
    return data


def _verdict(report: dict[str, Any], filename: str, code: str) -> dict[str, Any]:
    for finding in report["findings"]:
        if Path(finding["filename"]).name == filename and finding["code"] == code:
            verdict: dict[str, Any] = finding["verdict"]
            return verdict
    raise AssertionError(f"no {code} finding in {filename}: {report['findings']}")


def test_unguarded_cuda_is_confirmed_under_cpu_host(report: dict[str, Any]) -> None:
    verdict = _verdict(report, "no_gpu.py", "DEV001")
    assert verdict["status"] == "confirmed"
    assert verdict["profile"] == "cpu-host"
    assert "Torch not compiled with CUDA enabled" in verdict["detail"]


def test_missing_device_move_is_confirmed_under_vgpu(report: dict[str, Any]) -> None:
    verdict = _verdict(report, "module_input.py", "DEV005")
    assert (verdict["status"], verdict["profile"] in ON_A_GPU) == ("confirmed", True)
    assert verdict["detail"] == (
        "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, "
        "different from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA_addmm)"
    )


def test_cross_device_op_is_confirmed_under_vgpu(report: dict[str, Any]) -> None:
    verdict = _verdict(report, "cross_device.py", "DEV006")
    assert (verdict["status"], verdict["profile"] in ON_A_GPU) == ("confirmed", True)
    assert "found at least two devices, cuda:0 and cpu!" in verdict["detail"]


def test_numpy_on_device_tensor_is_confirmed_under_vgpu(report: dict[str, Any]) -> None:
    verdict = _verdict(report, "to_numpy.py", "DEV007")
    assert (verdict["status"], verdict["profile"] in ON_A_GPU) == ("confirmed", True)
    assert verdict["detail"].startswith("TypeError: can't convert cuda:0 device type tensor")


def test_discarded_move_and_plain_attribute_are_traced_back(report: dict[str, Any]) -> None:
    assert _verdict(report, "discarded_move.py", "DEV004")["status"] == "confirmed"
    assert _verdict(report, "discarded_move.py", "DEV005")["status"] == "confirmed"
    assert _verdict(report, "plain_attribute.py", "DEV009")["status"] == "confirmed"


def test_gpu_checkpoint_is_confirmed_under_cpu_host(report: dict[str, Any]) -> None:
    verdict = _verdict(report, "load_checkpoint.py", "DEV008")
    assert (verdict["status"], verdict["profile"]) == ("confirmed", "cpu-host")
    assert "Attempting to deserialize object on a CUDA device" in verdict["detail"]


def test_guarded_code_is_not_reproduced(report: dict[str, Any]) -> None:
    verdict = _verdict(report, "guarded.py", "DEV007")
    assert verdict["status"] == "not-reproduced"
    assert "line 6 ran under " in verdict["detail"]
    assert verdict["detail"].endswith("without the error")


def test_code_never_run_is_unreachable(report: dict[str, Any]) -> None:
    verdict = _verdict(report, "guarded.py", "DEV001")
    assert verdict["status"] == "unreachable"
    assert "line 10 never ran" in verdict["detail"]


def test_each_script_runs_only_under_the_profiles_its_findings_need(
    report: dict[str, Any],
) -> None:
    runs = {(run["entry"], run["profile"]) for run in report["runs"]}
    assert ("no_gpu.py", "cpu-host") in runs
    assert ("no_gpu.py", "vgpu") not in runs  # DEV001 shows only without a GPU
    assert ("cross_device.py", "cpu-host") not in runs


def test_check_confirm_flag_and_text_output(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    completed = run_cli("check", "--confirm", "-q", "train.py", cwd=tmp_path, timeout=300)
    assert completed.returncode == 1, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("train.py:2:5: DEV001")
    assert lines[1].startswith("  -> confirmed under cpu-host (train.py): AssertionError: Torch")
    assert (
        lines[-1]
        == "1 findings: 1 confirmed, 0 not-reproduced, 0 not-reached, 0 unreachable, 0 error."
    )


def test_the_static_linter_and_the_pytest_plugin_never_import_torch(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    code = (
        "import sys\n"
        "import devlint.runtime.pytest_plugin\n"
        "from devlint.cli import main\n"
        "try:\n"
        "    main(['check', '-q', sys.argv[1]])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('torch' in sys.modules)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "train.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.stdout.strip().splitlines()[-1] == "False", completed.stderr


TEST_SUITE = """
    import torch
    from torch import nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    def test_forward():
        model = nn.Linear(3, 2).to(device)
        out = model(torch.ones(4, 3))
        assert out.shape == (4, 2)
"""

LIBRARY = """
    import torch


    def evaluate():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        scores = torch.ones(3).to(device)
        return scores.numpy()
"""


def test_the_test_suite_and_named_functions_are_entry_points(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_model.py").write_text(textwrap.dedent(TEST_SUITE).lstrip())
    (tmp_path / "metrics.py").write_text(textwrap.dedent(LIBRARY).lstrip())
    completed = run_cli(
        "confirm", "--format", "json", "-q", "--entry", "metrics:evaluate", ".",
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    report = json.loads(completed.stdout)
    tested = _verdict(report, "test_model.py", "DEV005")
    assert (tested["status"], tested["test"]) == ("confirmed", "tests/test_model.py::test_forward")
    named = _verdict(report, "metrics.py", "DEV007")
    assert (named["status"], named["entry"]) == ("confirmed", "metrics:evaluate")


PLUGIN_TESTS = """
    import pytest
    import torch

    needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")


    @needs_gpu
    def test_runs_on_the_gpu():
        x = torch.ones(3).cuda()
        assert x.is_cuda and (x + 1).sum().item() == 6


    @needs_gpu
    def test_mixes_devices():
        torch.ones(3).cuda() + torch.ones(3)
"""


def test_pytest_vgpu_runs_a_projects_own_tests_as_if_on_a_gpu(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a real GPU is present: --vgpu steps aside")
    (tmp_path / "test_gpu.py").write_text(textwrap.dedent(PLUGIN_TESTS).lstrip())
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_gpu.py"]
    plain = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "2 skipped" in plain.stdout
    virtual = subprocess.run(
        [*command, "--vgpu"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert "1 failed, 1 passed" in virtual.stdout, virtual.stdout
    assert "found at least two devices, cuda:0 and cpu!" in virtual.stdout
