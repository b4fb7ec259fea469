"""Issue 20's hazards through the real command line; fixed files run on a CPU-only torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import findings_of, run_cli, write

CODES = "DEV002,DEV012,DEV013,DEV014,DEV015,DEV016"

HAZARDS = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.cuda.manual_seed_all(0)
torch.cuda.empty_cache()
print(torch.cuda.memory_allocated(), torch.cuda.device_count(), torch.cuda.is_available())
a = torch.zeros(2, device=0)
b = torch.ones(2).to(0)
torch.set_default_tensor_type(torch.cuda.FloatTensor)
acc = torch.accelerator.current_accelerator()
c = torch.ones(2).to(acc)
d = torch.device(torch.accelerator.current_accelerator())
mps = "mps" if torch.backends.mps.is_available() else "cpu"
e = torch.zeros(3, device=mps, dtype=torch.float64)
torch.cuda.synchronize()
name = torch.cuda.get_device_name()
start = torch.cuda.Event(enable_timing=True)
f = torch.ones(2).pin_memory()
scaler = torch.cuda.amp.GradScaler()
"""
EXPECTED = [
    (7, 20, "DEV012"),
    (8, 5, "DEV012"),
    (9, 1, "DEV013"),
    (11, 22, "DEV015"),
    (12, 18, "DEV015"),
    (14, 38, "DEV016"),
    (15, 1, "DEV014"),
    (16, 8, "DEV014"),
    (17, 9, "DEV014"),
    (18, 5, "DEV014"),
    (19, 10, "DEV002"),
]


def test_every_hazard_is_reported_at_its_line_and_harmless_calls_stay_silent(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"hazards.py": HAZARDS})
    result = run_cli("--select", CODES, "--no-cache", "hazards.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert [(row, column, code) for _, row, column, code in findings_of(result.stdout)] == EXPECTED


FIXABLE = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.set_default_tensor_type(torch.cuda.FloatTensor)
torch.set_default_device("cuda")
acc = torch.accelerator.current_accelerator()
x = torch.ones(2).to(acc)
torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats()
scaler = torch.cuda.amp.GradScaler(enabled=False)
with torch.cuda.amp.autocast(enabled=False):
    y = torch.zeros(2) + x.to(device)
print(y.device, y.dtype)
"""


def test_the_fixed_file_runs_on_a_cpu_only_torch_without_future_warnings(
    tmp_path: Path,
) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("shows the CPU-only behaviour")
    # The project declares a torch with `torch.accelerator` and `torch.amp.GradScaler`.
    pyproject = '[project]\nname = "demo"\ndependencies = ["torch>=2.7"]\n'
    write(tmp_path, {"script.py": FIXABLE, "pyproject.toml": pyproject})
    broken = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True)
    assert broken.returncode != 0  # the hazards are real before the fix
    fixed = run_cli("--select", CODES, "--no-cache", "--fix", "script.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    ran = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "script.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "cpu torch.float32"
    text = (tmp_path / "script.py").read_text()
    assert 'torch.amp.GradScaler("cuda", enabled=False)' in text
    assert "torch.set_default_dtype(torch.float32)" in text


@pytest.mark.parametrize(
    ("declared", "fixed_by"),
    [
        ('dependencies = ["torch>=2.4"]', "--fix"),  # the floor has it: a safe fix
        ("", "--unsafe-fixes"),  # no floor declared: offered, but as unsafe
        ('dependencies = ["torch>=2.0"]', None),  # the floor lacks it: never offered
    ],
)
def test_the_grad_scaler_fix_follows_the_torch_floor(
    tmp_path: Path, declared: str, fixed_by: str | None
) -> None:
    source = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    pyproject = f'[project]\nname = "demo"\n{declared}\n'
    write(tmp_path, {"train.py": source, "pyproject.toml": pyproject})
    run_cli("--select", "DEV002", "--no-cache", "--fix", "train.py", cwd=tmp_path)
    safe = (tmp_path / "train.py").read_text()
    run_cli("--select", "DEV002", "--no-cache", "--fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    unsafe = (tmp_path / "train.py").read_text()
    rewritten = 'scaler = torch.amp.GradScaler("cuda")\n'
    assert safe.endswith(rewritten) == (fixed_by == "--fix")
    assert unsafe.endswith(rewritten) == (fixed_by is not None)
