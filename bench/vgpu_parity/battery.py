"""Device mixes, each run the same way on a real GPU and on the virtual one.

    python bench/vgpu_parity/battery.py --record OUT.json    # on a machine with CUDA
    python bench/vgpu_parity/battery.py --compare REF.json   # here: on the virtual GPU

Every case is a few lines of user code placing operands on ``cuda`` and on the CPU. Its outcome
is what PyTorch answered: the device of the result, or the exception's type and first line.
``--record`` writes the outcomes of a real GPU (with the torch version and the GPU's name);
``--compare`` installs devlint's virtual GPU in this process, runs the same cases and prints
where the two disagree, with the share that agree. Only torch and numpy are needed to record,
so the script runs on a GPU machine where devlint is not installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

Case = Callable[[], Any]
GPU = "cuda"


def gpu(*shape: int) -> torch.Tensor:
    return torch.ones(*shape, device=GPU)


def cpu(*shape: int) -> torch.Tensor:
    return torch.ones(*shape)


def gpu_scalar() -> torch.Tensor:
    return torch.tensor(2.0, device=GPU)


def cpu_scalar() -> torch.Tensor:
    return torch.tensor(2.0)


# Operand placements for a two-operand operation: (first, second).
PAIRS: dict[str, Callable[[], tuple[torch.Tensor, torch.Tensor]]] = {
    "gpu,cpu": lambda: (gpu(3), cpu(3)),
    "cpu,gpu": lambda: (cpu(3), gpu(3)),
    "gpu,cpu0": lambda: (gpu(3), cpu_scalar()),
    "cpu0,gpu": lambda: (cpu_scalar(), gpu(3)),
    "gpu0,cpu": lambda: (gpu_scalar(), cpu(3)),
    "gpu,gpu0": lambda: (gpu(3), gpu_scalar()),
}

BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "eq": lambda a, b: a == b,
    "lt": lambda a, b: a < b,
    "maximum": torch.maximum,
    "atan2": torch.atan2,
    "fmod": torch.fmod,
    "logical_and": torch.logical_and,
    "clamp_min_tensor": lambda a, b: torch.clamp(a, min=b),
    "clamp_tensors": lambda a, b: torch.clamp(a, b, b + 1),
    "where_values": lambda a, b: torch.where(a > 0, a, b),
    "where_condition": lambda a, b: torch.where(b > 0, a, a),
    "lerp": lambda a, b: torch.lerp(a, a, b),
    "addcmul": lambda a, b: torch.addcmul(a, a, b),
    "masked_fill_value": lambda a, b: a.masked_fill(a > 0, b.sum()),
    "masked_fill_mask": lambda a, b: a.masked_fill(b > 0, 0.0),
    "matmul": lambda a, b: a @ b,
    "dot": torch.dot,
    "outer": torch.outer,
    "cat": lambda a, b: torch.cat([a, b.expand(3)]),
    "stack": lambda a, b: torch.stack([a, b.expand(3)]),
    "add_inplace": lambda a, b: a.add_(b),
    "mul_inplace": lambda a, b: a.mul_(b),
    "copy_inplace": lambda a, b: a.copy_(b),
    "index_put_setitem": lambda a, b: a.__setitem__(slice(None), b),
    "mse_loss": lambda a, b: F.mse_loss(a, b.expand(3)),
    "binary_cross_entropy": lambda a, b: F.binary_cross_entropy(a / 2, b.expand(3) / 2),
    "bce_with_logits_pos_weight": lambda a, b: F.binary_cross_entropy_with_logits(
        a, a / 2, pos_weight=b
    ),
    "cosine_similarity": lambda a, b: F.cosine_similarity(a[None], b.expand(3)[None]),
    "isin": torch.isin,
    "bucketize": lambda a, b: torch.bucketize(a, b.expand(3).contiguous()),
    "searchsorted": lambda a, b: torch.searchsorted(b.expand(3).contiguous(), a),
    "assert_close": lambda a, b: torch.testing.assert_close(a, b.expand(3) * 0 + 1),
    "allclose": lambda a, b: torch.allclose(a, b.expand(3)),
    "equal": lambda a, b: torch.equal(a, b.expand(3)),
}


def _index_cases() -> dict[str, Case]:
    return {
        "index/gpu_by_cpu_long": lambda: gpu(4)[torch.tensor([0, 2])],
        "index/gpu_by_cpu_bool": lambda: gpu(4)[torch.tensor([True, False, True, False])],
        "index/cpu_by_gpu_long": lambda: cpu(4)[torch.tensor([0, 2], device=GPU)],
        "index/cpu_by_gpu_bool": lambda: cpu(4)[gpu(4) > 0],
        "index/gpu_by_cpu0": lambda: gpu(4)[torch.tensor(1)],
        "index/cpu_by_gpu0": lambda: cpu(4)[torch.tensor(1, device=GPU)],
        "index_put/gpu_cpu_index": lambda: gpu(4).index_put_(
            (torch.tensor([0, 1]),), torch.tensor(5.0, device=GPU)
        ),
        "index_put/gpu_cpu_values": lambda: gpu(4).index_put_(
            (torch.tensor([0, 1], device=GPU),), cpu(2)
        ),
        "setitem/gpu_cpu_mask_cpu_value": lambda: gpu(4).__setitem__(cpu(4) > 0, cpu_scalar()),
        "setitem/cpu_gpu_mask": lambda: cpu(4).__setitem__(gpu(4) > 0, 0.0),
        "setitem/cpu_gpu_values": lambda: cpu(4).__setitem__(torch.tensor([0, 1]), gpu(2)),
        "setitem/cpu_gpu0_value": lambda: cpu(4).__setitem__(torch.tensor([0, 1]), gpu_scalar()),
        "index_fill/column_in_place": lambda: gpu(4, 1).index_fill_(
            0, torch.tensor([0, 1, 2], device=GPU), cpu_scalar()
        ),
        "index_select/cpu_index": lambda: gpu(4).index_select(0, torch.tensor([0, 1])),
        "index_select/gpu_index_cpu_self": lambda: cpu(4).index_select(
            0, torch.tensor([0, 1], device=GPU)
        ),
        "gather/cpu_index": lambda: gpu(2, 3).gather(1, torch.zeros(2, 1, dtype=torch.long)),
        "scatter/cpu_index": lambda: gpu(2, 3).scatter(1, torch.zeros(2, 1, dtype=torch.long), 0.0),
        "scatter_add/cpu_src": lambda: gpu(2, 3).scatter_add(
            1, torch.zeros(2, 1, dtype=torch.long, device=GPU), cpu(2, 1)
        ),
        "index_add/cpu_source": lambda: gpu(4).index_add(0, torch.tensor([0], device=GPU), cpu(1)),
        "masked_select/cpu_mask": lambda: gpu(4).masked_select(cpu(4) > 0),
        "take/cpu_index": lambda: gpu(4).take(torch.tensor([0])),
        "embedding/cpu_ids": lambda: F.embedding(torch.tensor([1]), gpu(5, 2)),
        "embedding/gpu_ids_cpu_weight": lambda: F.embedding(
            torch.tensor([1], device=GPU), cpu(5, 2)
        ),
        "repeat_interleave/cpu_repeats": lambda: gpu(2).repeat_interleave(torch.tensor([1, 2])),
        "bincount/cpu_weights": lambda: torch.tensor([0, 1], device=GPU).bincount(cpu(2)),
    }


class _ScaledByPlainAttribute(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.ones(3)  # a plain attribute: `.to()` leaves it on the CPU
        self.register_buffer("offset", torch.zeros(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class _ShiftedByBuffer(_ScaledByPlainAttribute):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.offset


def _optimizer_made_before_the_move() -> Any:
    model = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters())
    model.to(GPU)
    model(gpu(2, 3)).sum().backward()
    optimizer.step()
    return model.weight


def _state_dict_from_the_gpu() -> Any:
    model = nn.Linear(3, 2)
    model.load_state_dict(nn.Linear(3, 2).to(GPU).state_dict())
    return model.weight


def _grad_from_the_cpu() -> Any:
    weight = nn.Parameter(gpu(3))
    weight.grad = cpu(3)  # a gradient must live where its tensor does
    return weight.grad


def _grad_through_a_move() -> Any:
    leaf = cpu(3).requires_grad_()
    (leaf.to(GPU) * 2).sum().backward()
    return leaf.grad


def _buffer_registered_after_the_move() -> Any:
    model = nn.Linear(3, 3).to(GPU)
    model.register_buffer("shift", cpu(3))
    return model(gpu(2, 3)) + model.shift


def _optimizer_state_from_the_cpu() -> Any:
    model = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters())
    model(cpu(2, 3)).sum().backward()
    optimizer.step()
    state = optimizer.state_dict()
    moved = nn.Linear(3, 1).to(GPU)
    restored = torch.optim.Adam(moved.parameters())
    restored.load_state_dict(state)
    moved(gpu(2, 3)).sum().backward()
    restored.step()
    return restored.state[moved.weight]["exp_avg"]


def _module_cases() -> dict[str, Case]:
    def lstm_state(h_device: str) -> Any:
        lstm = nn.LSTM(3, 2, batch_first=True).to(GPU)
        state = torch.zeros(1, 1, 2, device=h_device)
        return lstm(gpu(1, 4, 3), (state, state))[0]

    return {
        "module/linear_cpu_input": lambda: nn.Linear(3, 2).to(GPU)(cpu(4, 3)),
        "module/linear_gpu_input_cpu_module": lambda: nn.Linear(3, 2)(gpu(4, 3)),
        "module/conv_cpu_input": lambda: nn.Conv2d(1, 1, 3).to(GPU)(cpu(1, 1, 5, 5)),
        "module/conv_gpu_input_cpu_module": lambda: nn.Conv2d(1, 1, 3)(gpu(1, 1, 5, 5)),
        "module/conv1d_cpu_input": lambda: nn.Conv1d(1, 1, 3).to(GPU)(cpu(1, 1, 5)),
        "module/dilated_conv_cpu_input": lambda: nn.Conv2d(1, 1, 3, dilation=2).to(GPU)(
            cpu(1, 1, 9, 9)
        ),
        "module/transposed_conv_cpu_input": lambda: nn.ConvTranspose2d(1, 1, 3).to(GPU)(
            cpu(1, 1, 5, 5)
        ),
        "module/embedding_cpu_ids": lambda: nn.Embedding(5, 2).to(GPU)(torch.tensor([1])),
        "module/layer_norm_cpu_input": lambda: nn.LayerNorm(3).to(GPU)(cpu(2, 3)),
        "module/batch_norm_cpu_input": lambda: nn.BatchNorm1d(3).to(GPU)(cpu(2, 3)),
        "module/lstm_cpu_input": lambda: nn.LSTM(3, 2).to(GPU)(cpu(4, 1, 3))[0],
        "module/lstm_cpu_state": lambda: lstm_state("cpu"),
        "module/gru_cpu_input": lambda: nn.GRU(3, 2).to(GPU)(cpu(4, 1, 3))[0],
        "module/attention_cpu_key": lambda: nn.MultiheadAttention(4, 1).to(GPU)(
            gpu(2, 1, 4), cpu(2, 1, 4), cpu(2, 1, 4)
        )[0],
        "module/plain_attribute": lambda: _ScaledByPlainAttribute().to(GPU)(gpu(3)),
        "module/buffer": lambda: _ShiftedByBuffer().to(GPU)(gpu(3)),
        "module/loss_weight_moved": lambda: nn.CrossEntropyLoss(weight=cpu(3)).to(GPU)(
            gpu(2, 3), torch.tensor([0, 1], device=GPU)
        ),
        "module/loss_weight_not_moved": lambda: nn.CrossEntropyLoss(weight=cpu(3))(
            gpu(2, 3), torch.tensor([0, 1], device=GPU)
        ),
        "module/optimizer_made_before_the_move": _optimizer_made_before_the_move,
        "module/optimizer_state_from_the_cpu": _optimizer_state_from_the_cpu,
        "module/buffer_registered_after_the_move": _buffer_registered_after_the_move,
        "autograd/grad_from_the_cpu": _grad_from_the_cpu,
        "autograd/grad_through_a_move": _grad_through_a_move,
        "functional/embedding_bag_cpu_offsets": lambda: F.embedding_bag(
            torch.tensor([0, 1, 2], device=GPU), gpu(5, 2), torch.tensor([0, 2])
        ),
        "functional/one_hot": lambda: F.one_hot(torch.tensor([0, 2], device=GPU), 3),
        "functional/solve_mixed": lambda: torch.linalg.solve(torch.eye(2, device=GPU), cpu(2, 1)),
        "functional/index_fill_cpu0_value": lambda: gpu(4).index_fill_(
            0, torch.tensor([1], device=GPU), cpu_scalar()
        ),
        "functional/where_python_scalar": lambda: torch.where(gpu(3) > 0, gpu(3), 0.0),
        "functional/kl_div_cpu_target": lambda: F.kl_div(gpu(3).log(), cpu(3) / 3),
        "functional/smooth_l1_cpu0_target": lambda: F.smooth_l1_loss(gpu(3), cpu_scalar()),
        "functional/interpolate": lambda: F.interpolate(gpu(1, 1, 4), scale_factor=2.0),
        "module/state_dict_from_the_gpu": _state_dict_from_the_gpu,
        "functional/linear_cpu_bias": lambda: F.linear(gpu(2, 3), gpu(4, 3), cpu(4)),
        "functional/layer_norm_cpu_weight": lambda: F.layer_norm(gpu(2, 3), (3,), cpu(3)),
        "functional/sdpa_cpu_key": lambda: F.scaled_dot_product_attention(
            gpu(1, 2, 4), cpu(1, 2, 4), gpu(1, 2, 4)
        ),
        "functional/cross_entropy_cpu_target": lambda: F.cross_entropy(
            gpu(2, 3), torch.tensor([0, 1])
        ),
        "functional/cross_entropy_cpu_weight": lambda: F.cross_entropy(
            gpu(2, 3), torch.tensor([0, 1], device=GPU), weight=cpu(3)
        ),
        "functional/nll_loss_cpu_target": lambda: F.nll_loss(gpu(2, 3), torch.tensor([0, 1])),
        "functional/ctc_loss_cpu_targets": lambda: F.ctc_loss(
            gpu(5, 1, 3).log_softmax(2),
            torch.tensor([[1, 2]]),
            torch.tensor([5]),
            torch.tensor([2]),
        ),
        "functional/pack_padded_gpu_lengths": lambda: (
            nn.utils.rnn.pack_padded_sequence(
                gpu(2, 3, 4), torch.tensor([3, 2], device=GPU), batch_first=True
            ).data
        ),
        "functional/pack_padded_cpu_lengths": lambda: (
            nn.utils.rnn.pack_padded_sequence(
                gpu(2, 3, 4), torch.tensor([3, 2]), batch_first=True
            ).data
        ),
        "functional/grid_sample_cpu_grid": lambda: F.grid_sample(
            gpu(1, 1, 4, 4), cpu(1, 2, 2, 2), align_corners=False
        ),
        "functional/einsum_mixed": lambda: torch.einsum("i,i->", gpu(3), cpu(3)),
        "functional/bmm_mixed": lambda: torch.bmm(gpu(1, 2, 3), cpu(1, 3, 2)),
        "functional/addmm_cpu_bias": lambda: torch.addmm(cpu(2, 2), gpu(2, 3), gpu(3, 2)),
        "functional/cdist_mixed": lambda: torch.cdist(gpu(2, 3), cpu(2, 3)),
    }


def _host_cases() -> dict[str, Case]:
    return {
        "host/numpy": lambda: gpu(3).numpy(),
        "host/np_asarray": lambda: np.asarray(gpu(3)),
        "host/np_add": lambda: np.add(gpu(3), 1),
        "host/format": lambda: f"{gpu_scalar():.2f}",
        "host/item": lambda: gpu(3).sum().item(),
        "host/tolist": lambda: gpu(3).tolist(),
        "host/float": lambda: float(gpu_scalar()),
        "host/bool_branch": lambda: bool(gpu_scalar() > 1),
        "host/tensor_of_gpu_scalars": lambda: torch.tensor([gpu_scalar(), gpu_scalar()]),
        "host/stack_of_gpu_scalars": lambda: torch.stack([gpu_scalar(), gpu_scalar()]),
        "host/pin_memory_gpu": lambda: gpu(3).pin_memory(),
        "host/from_numpy_to_gpu": lambda: torch.from_numpy(np.ones(3)).to(GPU),
        "device/second_gpu": lambda: cpu(2).to(f"{GPU}:1"),
        "device/cpu_generator": lambda: torch.randn(3, device=GPU, generator=torch.Generator()),
        "device/multinomial_cpu_generator": lambda: torch.multinomial(
            gpu(3), 1, generator=torch.Generator()
        ),
        "device/randperm": lambda: torch.randperm(4, device=GPU),
        "device/zeros_like": lambda: torch.zeros_like(gpu(3)),
        "device/new_zeros": lambda: gpu(3).new_zeros(2),
        "device/new_tensor": lambda: gpu(3).new_tensor([1.0, 2.0]),
        "device/type_as": lambda: cpu(3).type_as(gpu(3)),
        "device/arange_then_add": lambda: torch.arange(3) + gpu(3),
        "device/bernoulli_cpu_generator": lambda: torch.bernoulli(
            gpu(3) / 2, generator=torch.Generator()
        ),
        "device/type_as_cpu": lambda: gpu(3).type_as(cpu(3)),
        "device/as_tensor_to_cpu": lambda: torch.as_tensor(gpu(3), device="cpu"),
        "device/to_other_tensor": lambda: cpu(3).to(gpu(1)),
        "device/new_tensor_of_gpu": lambda: cpu(3).new_tensor(gpu(3)),
        "device/normal_python_std": lambda: torch.normal(gpu(3), 1.0),
        "device/multinomial_keyword_input": lambda: torch.multinomial(
            input=gpu(3), num_samples=1, generator=torch.Generator()
        ),
        "host/as_tensor_of_gpu_scalars": lambda: torch.as_tensor([gpu_scalar(), gpu_scalar()]),
        "host/new_tensor_of_gpu_scalars": lambda: gpu(3).new_tensor([gpu_scalar()]),
        "host/tensor_data_keyword": lambda: torch.tensor(data=[gpu_scalar(), gpu_scalar()]),
        "zero_dim/allclose": lambda: torch.allclose(gpu(3), cpu_scalar()),
        "zero_dim/allclose_first": lambda: torch.allclose(cpu_scalar(), gpu(3)),
        "zero_dim/bucketize": lambda: torch.bucketize(cpu_scalar(), gpu(3)),
        "zero_dim/searchsorted": lambda: torch.searchsorted(gpu(3), cpu_scalar()),
        "zero_dim/equal": lambda: torch.equal(gpu(3), cpu_scalar()),
        "zero_dim/masked_fill_function": lambda: torch.masked_fill(gpu(3), torch.tensor(True), 0.0),
        "distributions/normal_cpu_scale": lambda: torch.distributions.Normal(
            gpu(3), cpu_scalar()
        ).sample(),
        "distributions/normal_gpu_scale_cpu_loc": lambda: torch.distributions.Normal(
            cpu(3), gpu(3)
        ).sample(),
        "index/gpu_by_list": lambda: gpu(4)[[0, 2]],
        "cat/gpu_with_empty_cpu": lambda: torch.cat([gpu(3), torch.tensor([])]),
        "device/tensor_attribute_cuda": lambda: cpu(3).cuda(),
    }


def cases() -> dict[str, Case]:
    table: dict[str, Case] = {}
    for op_name, op in BINARY.items():
        for pair_name, make_pair in PAIRS.items():
            table[f"{op_name}/{pair_name}"] = lambda op=op, make_pair=make_pair: op(*make_pair())
    table.update(_index_cases())
    table.update(_module_cases())
    table.update(_host_cases())
    return table


def _where(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"ok {value.device}"
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
        return f"ok {value[0].device}"
    return f"ok {type(value).__name__}"


def outcome(case: Case) -> str:
    try:
        value = case()
        if GPU == "cuda" and torch.cuda.is_available():
            torch.cuda.synchronize()
    except Exception as caught:  # every exception is an outcome to compare
        first_line = str(caught).strip().splitlines()[0] if str(caught).strip() else ""
        return f"{type(caught).__name__}: {first_line}"
    return _where(value)


def run_all() -> dict[str, str]:
    return {name: outcome(case) for name, case in cases().items()}


def record(path: Path) -> None:
    if not torch.cuda.is_available():
        sys.exit("--record needs a real CUDA device")
    outcomes = run_all()
    reference = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "device_count": torch.cuda.device_count(),
        "outcomes": outcomes,
    }
    path.write_text(json.dumps(reference, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(outcomes)} cases on {reference['gpu']} (torch {torch.__version__})")


def disagreements(reference: dict[str, str], virtual: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {
        name: (expected, virtual.get(name, "missing"))
        for name, expected in reference.items()
        if virtual.get(name) != expected
    }


def compare(path: Path, as_json: bool) -> None:
    from devlint.runtime import vgpu

    try:
        reference = json.loads(path.read_text())
        outcomes: dict[str, str] = reference["outcomes"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"{path}: not a record of --record ({type(error).__name__}: {error})")
    vgpu.install()
    virtual = run_all()
    differing = disagreements(outcomes, virtual)
    if as_json:
        print(json.dumps({"virtual": virtual, "differing": differing}))
        return
    for name, (real, simulated) in sorted(differing.items()):
        print(f"{name}\n    real GPU:    {real}\n    virtual GPU: {simulated}")
    total = len(outcomes)
    agree = total - len(differing)
    print(
        f"{agree} of {total} cases agree ({agree / total:.1%}) with {reference['gpu']}, "
        f"torch {reference['torch']} (here torch {torch.__version__})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", type=Path, help="run on a real GPU and write the outcomes")
    mode.add_argument("--compare", type=Path, help="run on the virtual GPU against a record")
    parser.add_argument("--json", action="store_true", help="with --compare: print JSON")
    arguments = parser.parse_args()
    if arguments.record:
        record(arguments.record)
    else:
        compare(arguments.compare, arguments.json)


if __name__ == "__main__":
    main()
