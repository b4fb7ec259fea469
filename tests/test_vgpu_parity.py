"""The virtual GPU answers as a real one did: each case of ``bench/vgpu_parity/battery.py`` gives
the outcome recorded on a real GPU (``cuda_reference.json``: the result's device, or the
exception's type and first line)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT

torch = pytest.importorskip("torch")
if torch.cuda.is_available():
    pytest.skip("a real GPU is present: the vgpu profile steps aside", allow_module_level=True)

PARITY = REPO_ROOT / "bench" / "vgpu_parity"
REFERENCE = PARITY / "cuda_reference.json"


@pytest.fixture(scope="module")
def compared() -> dict[str, dict[str, object]]:
    completed = subprocess.run(
        [sys.executable, str(PARITY / "battery.py"), "--compare", str(REFERENCE), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_reference_was_recorded_on_a_real_gpu() -> None:
    reference = json.loads(REFERENCE.read_text())
    assert reference["torch"].split("+")[-1].startswith("cu")
    assert reference["device_count"] >= 1
    assert len(reference["outcomes"]) > 250


def test_every_case_ends_as_on_the_real_gpu(compared: dict[str, dict[str, object]]) -> None:
    differing = compared["differing"]
    assert not differing, "\n".join(
        f"{name}: real {real!r}, virtual {virtual!r}"
        for name, (real, virtual) in differing.items()  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize(
    ("case", "outcome"),
    [
        # the shapes of device bugs devlint's static rules report, as the GPU answered
        ("add/gpu,cpu0", "ok cuda:0"),
        ("clamp_min_tensor/gpu,cpu0", "RuntimeError: Expected all tensors to be on the same "
         "device, but got min is on cpu, different from other tensors on cuda:0 (when checking "
         "argument in method wrapper_CUDA_clamp_Tensor)"),
        ("index/cpu_by_gpu_long", "RuntimeError: indices should be either on cpu or on the "
         "same device as the indexed tensor (cpu)"),
        ("module/plain_attribute", "RuntimeError: Expected all tensors to be on the same "
         "device, but found at least two devices, cuda:0 and cpu!"),
        ("host/np_add", "TypeError: can't convert cuda:0 device type tensor to numpy. Use "
         "Tensor.cpu() to copy the tensor to host memory first."),
    ],
)  # fmt: skip
def test_the_virtual_gpu_gives_the_recorded_outcome(
    compared: dict[str, dict[str, object]], case: str, outcome: str
) -> None:
    reference = json.loads(REFERENCE.read_text())
    assert reference["outcomes"][case] == outcome
    assert compared["virtual"][case] == outcome


def test_every_device_error_a_real_gpu_gave_is_known_to_the_runtime() -> None:
    """`devlint confirm` tells device bugs from other failures by their words: each device
    error recorded on the real GPU is one it knows."""
    from devlint.runtime.profiles import device_error

    outcomes = json.loads(REFERENCE.read_text())["outcomes"].values()
    about_devices = {
        outcome
        for outcome in outcomes
        if not outcome.startswith("ok ")
        and any(word in outcome.lower() for word in ("device", "cuda", "cpu"))
    }
    assert len(about_devices) > 40
    assert [outcome for outcome in about_devices if device_error(outcome) is None] == []
