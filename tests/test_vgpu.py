"""The virtual GPU: PyTorch's device rules with PyTorch's wording, on a CPU-only torch.

Installing the virtual GPU changes a process for good, so every check runs in a child process:
one runs a battery of checks under vgpu, another the same training loop on the plain CPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from devlint.runtime.device_rules import Check, load_rules, parse_rules, rule_for  # noqa: E402

if torch.cuda.is_available():
    pytest.skip("a real GPU is present: the vgpu profile steps aside", allow_module_level=True)

TRAINING_LOOP = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

def train(device):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(256, 10), torch.randint(0, 3, (256,)))
    loader = DataLoader(data, batch_size=32, shuffle=True, pin_memory=True)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3))
    model = model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses
"""

BATTERY = """
import json, sys, warnings
import torch
from torch import nn
from devlint.runtime import vgpu

vgpu.install()
result = {}

def error(function):
    try:
        function()
    except Exception as caught:
        return f"{type(caught).__name__}: {caught}"
    return None

x = torch.ones(3, device="cuda")
result["is_available"] = torch.cuda.is_available()
result["device_count"] = torch.cuda.device_count()
result["device"] = str(x.device)
result["is_cuda"] = x.is_cuda
result["repr"] = repr(x)
result["type"] = x.type()
result["cpu_back"] = str(x.cpu().device)
result["mixed_add"] = error(lambda: x + torch.ones(3))
result["linear_cpu_input"] = error(lambda: nn.Linear(3, 2).cuda()(torch.ones(4, 3)))
result["conv_cpu_input"] = error(lambda: nn.Conv2d(1, 1, 3).cuda()(torch.ones(1, 1, 5, 5)))
result["numpy"] = error(lambda: x.numpy())
result["embedding"] = error(lambda: nn.Embedding(5, 2).cuda()(torch.tensor([1])))
result["labels_on_cpu"] = error(
    lambda: nn.functional.cross_entropy(torch.ones(2, 3).cuda(), torch.tensor([0, 1]))
)
result["second_gpu"] = error(lambda: torch.zeros(2).to("cuda:1"))
packing = nn.utils.rnn.pack_padded_sequence
tokens = torch.ones(2, 3, 4, device="cuda")
result["packed_cuda_lengths"] = error(lambda: packing(tokens, x[:2].long(), batch_first=True))
packed = packing(tokens, torch.tensor([3, 2]), batch_first=True)
result["packed_device"] = str(packed.data.device)
result["packed_batch_sizes"] = packed.batch_sizes.tolist()
result["packed_lstm"] = str(nn.LSTM(4, 2, batch_first=True).cuda()(packed)[0].data.device)
result["zero_dim_cpu_scalar"] = error(lambda: x * torch.tensor(2.0))
result["indexing_with_cpu_index"] = error(lambda: x[torch.tensor([0, 1])])
result["item"] = (x.sum() * 2).item()
result["branch"] = bool(x.sum() > 2)
result["memory_allocated"] = torch.cuda.memory_allocated()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.cuda.memory_cached()
result["memory_cached_warnings"] = [w.category.__name__ for w in caught]
torch.save({"w": x}, sys.argv[2])
result["loaded_device"] = str(torch.load(sys.argv[2])["w"].device)
exec(sys.argv[3])
result["losses"] = train("cuda")
print(json.dumps(result))
"""

PLAIN = """
import json, sys
import torch
result = {}
try:
    torch.load(sys.argv[2])
except RuntimeError as caught:
    result["load_cuda_checkpoint"] = str(caught)
exec(sys.argv[3])
result["losses"] = train("cpu")
print(json.dumps(result))
"""


def _python(script: str, checkpoint: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), "-", str(checkpoint), TRAINING_LOOP],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    checkpoint = tmp_path_factory.mktemp("vgpu") / "checkpoint.pt"
    virtual = _python(BATTERY, checkpoint)
    return virtual, _python(PLAIN, checkpoint)


@pytest.fixture(scope="module")
def vgpu(runs: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    return runs[0]


def test_is_available_inside_vgpu(vgpu: dict[str, Any]) -> None:
    assert vgpu["is_available"] is True
    assert vgpu["device_count"] == 1
    assert vgpu["device"] == "cuda:0"
    assert vgpu["is_cuda"] is True
    assert vgpu["repr"] == "tensor([1., 1., 1.], device='cuda:0')"
    assert vgpu["type"] == "torch.cuda.FloatTensor"
    assert vgpu["cpu_back"] == "cpu"


def test_mismatched_operands_use_tensor_iterators_wording(vgpu: dict[str, Any]) -> None:
    assert vgpu["mixed_add"] == (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:0 and cpu!"
    )


def test_module_on_cuda_with_a_cpu_input_uses_the_generated_check(vgpu: dict[str, Any]) -> None:
    assert vgpu["linear_cpu_input"] == (
        "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, "
        "different from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA_addmm)"
    )
    # A real GPU's words (an H200, torch 2.11): the small CPU input takes the slow kernel,
    # whose CUDA wrapper checks devices before any type check.
    assert vgpu["conv_cpu_input"] == (
        "RuntimeError: Expected all tensors to be on the same device, but got weight is on "
        "cuda:0, different from other tensors on cpu (when checking argument in method "
        "wrapper_CUDA___slow_conv2d_forward)"
    )


def test_composite_operators_reach_the_checks_of_what_they_call(vgpu: dict[str, Any]) -> None:
    assert vgpu["embedding"] == (
        "RuntimeError: Expected all tensors to be on the same device, but got index is on cpu, "
        "different from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA__index_select)"
    )
    assert "but got target is on cpu" in vgpu["labels_on_cpu"]
    assert "wrapper_CUDA_nll_loss_forward" in vgpu["labels_on_cpu"]


def test_numpy_on_cuda(vgpu: dict[str, Any]) -> None:
    assert vgpu["numpy"] == (
        "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy "
        "the tensor to host memory first."
    )


def test_packing_wants_its_lengths_on_the_cpu(vgpu: dict[str, Any]) -> None:
    assert vgpu["packed_cuda_lengths"] == (
        "RuntimeError: 'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 "
        "Long tensor"
    )
    assert vgpu["packed_device"] == "cuda:0"
    assert vgpu["packed_batch_sizes"] == [2, 2, 1]
    assert vgpu["packed_lstm"] == "cuda:0"


def test_one_gpu_only(vgpu: dict[str, Any]) -> None:
    assert vgpu["second_gpu"].splitlines()[0].endswith("CUDA error: invalid device ordinal")


def test_what_a_gpu_allows_is_allowed(vgpu: dict[str, Any]) -> None:
    assert vgpu["zero_dim_cpu_scalar"] is None
    assert vgpu["indexing_with_cpu_index"] is None
    assert vgpu["item"] == 6.0
    assert vgpu["branch"] is True


def test_memory_functions_answer_plausibly(vgpu: dict[str, Any]) -> None:
    assert vgpu["memory_allocated"] > 0
    assert vgpu["memory_cached_warnings"] == ["FutureWarning"]


def test_checkpoints_saved_on_the_virtual_gpu_are_cuda_checkpoints(
    runs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    virtual, plain = runs
    assert virtual["loaded_device"] == "cuda:0"
    assert plain["load_cuda_checkpoint"].startswith(
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False"
    )


def test_training_loop_losses_are_bit_identical_to_the_cpu(
    runs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    virtual, plain = runs
    assert len(virtual["losses"]) == 16
    assert virtual["losses"] == plain["losses"]


def test_device_rules_come_from_native_functions_yaml() -> None:
    rules, source = load_rules()
    assert source.endswith("native_functions.yaml")
    assert rule_for("addmm").check is Check.EXACT
    assert rule_for("addmm").method == "wrapper_CUDA_addmm"
    assert rule_for("index_select").method == "wrapper_CUDA__index_select"
    assert rule_for("add.Tensor").check is Check.ITERATOR  # ufunc kernel, NoCheck
    assert rule_for("embedding").check is Check.COMPOSITE
    assert rule_for("copy_").check is Check.NONE
    assert len(rules) > 2000


def test_device_rules_parser_reads_the_fields_it_needs() -> None:
    text = textwrap.dedent(
        """
        - func: mm(Tensor self, Tensor mat2) -> Tensor
          structured_delegate: mm.out

        - func: mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
          structured: True
          dispatch:
            CPU: mm_out_cpu
            CUDA: mm_out_cuda

        - func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
          device_check: NoCheck   # TensorIterator
          dispatch:
            CPU, CUDA: where

        - func: stack(Tensor[] tensors, int dim=0) -> Tensor
          dispatch:
            CompositeExplicitAutograd: stack
        """
    )
    rules = parse_rules(text)
    assert rules["mm"].method == "wrapper_CUDA_mm"
    assert rules["mm.out"].method == "wrapper_CUDA_mm_out_out"
    assert rules["where.self"].check is Check.ITERATOR
    assert rules["stack"].check is Check.COMPOSITE


MPS_BATTERY = """
import json
import numpy as np
import torch
from devlint.runtime import vgpu

vgpu.install("mps")
result = {}

def error(function):
    try:
        function()
    except Exception as caught:
        return f"{type(caught).__name__}: {caught}"
    return None

x = torch.ones(3, device="mps")
result["mps_available"] = torch.backends.mps.is_available()
result["cuda_available"] = torch.cuda.is_available()
result["device"] = str(x.device)
result["flags"] = [x.is_mps, x.is_cuda]
result["repr"] = repr(x)
result["sum"] = (x * 2).sum().item()
result["accelerator"] = str(torch.accelerator.current_accelerator())
result["double"] = error(lambda: x.double())
result["factory"] = error(lambda: torch.zeros(2, dtype=torch.float64, device="mps"))
result["from_numpy"] = error(lambda: torch.from_numpy(np.ones(2)).to("mps"))
result["float32_from_numpy"] = error(lambda: torch.from_numpy(np.ones(2)).float().to("mps"))
result["mixed"] = error(lambda: x + torch.ones(3))
result["cuda"] = error(lambda: torch.ones(2).cuda())
print(json.dumps(result))
"""

MPS_FLOAT64 = (
    "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't "
    "support float64. Please use float32 instead."
)


def test_the_mps_profile_plays_an_apple_gpu_without_float64() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", MPS_BATTERY], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    mps = json.loads(completed.stdout.strip().splitlines()[-1])
    assert (mps["mps_available"], mps["cuda_available"]) == (True, False)
    assert (mps["device"], mps["flags"], mps["accelerator"]) == ("mps:0", [True, False], "mps")
    assert mps["repr"] == "tensor([1., 1., 1.], device='mps:0')"
    assert mps["sum"] == 6.0
    assert mps["double"] == mps["factory"] == mps["from_numpy"] == MPS_FLOAT64
    assert mps["float32_from_numpy"] is None
    assert mps["mixed"] == (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, mps:0 and cpu!"
    )
    assert mps["cuda"] == "AssertionError: Torch not compiled with CUDA enabled"
