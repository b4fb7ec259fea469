"""End to end through the real command line: what guards DEV001 and DEV010 in tests and
scripts, and which `torch.load` calls DEV008 leaves alone."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import findings_of, run_cli, write

GPU_TESTS = """\
import pytest
import torch

hardware = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")


@pytest.fixture
def gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    return 0


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(torch.device("cuda"), marks=hardware),
        pytest.param(torch.device("cuda"), marks=[pytest.mark.slow, hardware]),
    ],
)
def test_devices(device):
    torch.zeros(2, device=device)


@hardware
class TestMoves:
    def test_move(self):
        torch.ones(1).cuda()

    def test_second_gpu(self):
        torch.ones(1).cuda(1)


@two_gpus
def test_peer():
    torch.ones(1).to("cuda:1")


def test_with_fixture(gpu):
    torch.ones(1).cuda()


def test_forward_cuda():
    torch.ones(1).cuda()


CASES = [pytest.param(torch.device("cuda"), id="gpu")]
"""

SCRIPT = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
args = parser.parse_args()
model = torch.nn.Linear(2, 2).to(args.device)
"""

LOADS = """\
import io

import torch


def snapshot(model):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return torch.load(io.BytesIO(buffer.getvalue()))


def process(paths):
    rows = [torch.zeros(2) for _ in paths]
    torch.save(rows, "processed/rows.pt")


def rows():
    return torch.load("processed/rows.pt")


def resume(model, path):
    state = torch.load(path)
    model.load_state_dict(state["model"])
"""


def test_markers_fixtures_and_params_guard_gpu_tests(tmp_path: Path) -> None:
    write(tmp_path, {"tests/test_gpu.py": GPU_TESTS})
    result = run_cli("--select", "DEV001,DEV010", "tests", cwd=tmp_path)
    assert findings_of(result.stdout) == [
        # `hardware` promises one GPU: index 1 is still a hazard on a one-GPU runner.
        ("tests/test_gpu.py", 33, 28, "DEV010"),
        # A test's name is no guard.
        ("tests/test_gpu.py", 46, 5, "DEV001"),
        # A parameter with no marks runs everywhere.
        ("tests/test_gpu.py", 49, 23, "DEV001"),
    ], result.stdout
    assert result.returncode == 1


def test_a_device_option_defaulting_to_cuda_is_reported_and_fixed(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": SCRIPT})
    result = run_cli("--select", "DEV001", "train.py", cwd=tmp_path)
    assert findings_of(result.stdout) == [("train.py", 6, 41, "DEV001")], result.stdout
    assert 'the default `"cuda"` of a device option' in result.stdout
    fixed = run_cli("--select", "DEV001", "--fix", "train.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    expected = 'default="cuda" if torch.cuda.is_available() else "cpu")'
    assert f'parser.add_argument("--device", {expected}\n' in text


def test_loads_of_data_this_code_saved_are_silent(tmp_path: Path) -> None:
    write(tmp_path, {"data.py": LOADS})
    result = run_cli("--select", "DEV008", "data.py", cwd=tmp_path)
    assert findings_of(result.stdout) == [("data.py", 22, 13, "DEV008")], result.stdout
    assert "goes into `load_state_dict`" in result.stdout
