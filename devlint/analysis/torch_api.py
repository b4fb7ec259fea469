"""What the analysis knows of torch's API: factories, modules, losses, placement-keeping methods.

The tensor functions and methods come from ``devlint/data/torch_api.json``, generated from the
installed torch's own declarations by :mod:`devlint.analysis.generate_torch_api` (torch is
never imported at lint time); small hand overrides cover what the declarations cannot tell.
Modules, losses and loaders are named here by hand.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Optional


def _load_table() -> dict[str, Any]:
    """The table generated from torch's own declarations (see `generate_torch_api`)."""
    path = Path(__file__).resolve().parent.parent / "data" / "torch_api.json"
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


_TABLE = _load_table()
# The torch release the table was generated from.
TORCH_VERSION: str = _TABLE["torch"]


def _torch(key: str, *extra: str) -> frozenset[str]:
    return frozenset("torch." + name for name in (*_TABLE[key], *extra))


def _names(key: str, *extra: str) -> frozenset[str]:
    return frozenset((*_TABLE[key], *extra))


# The hand overrides below cover what torch's declarations cannot tell: functions written in
# Python without tensor annotations (`torch/functional.py`: `einsum`, `norm`, `cdist`), the
# legacy tensor classes, numbers-or-tensors signatures, and operands named as indices.

# Factories: `device=` and no tensor argument in every overload. By hand: `from_numpy` (always
# on the CPU), `linspace`/`logspace` (their bounds may be 0-dim tensors), the tensor classes.
# `torch.normal` is a factory only when given numbers, so it is neither; `bernoulli`,
# `multinomial` and `poisson` sample where their input is (keeping functions).
FACTORIES = _torch(
    "factories",
    *(
        "from_numpy linspace logspace Tensor FloatTensor DoubleTensor HalfTensor "
        "BFloat16Tensor LongTensor IntTensor ShortTensor ByteTensor CharTensor BoolTensor"
    ).split(),
)
# The factories' own names, as a call or an import spells them (`zeros`, `from_numpy`).
FACTORY_NAMES = frozenset(name.rpartition(".")[2] for name in FACTORIES)
# The methods that move a tensor or module: `.to(...)`, `.cuda()`, `.cpu()`.
DEVICE_MOVES = frozenset({"to", "cuda", "cpu"})
# Factories whose result is 0-dim when given a single number (a CPU one mixes with any device).
SCALAR_CAPABLE_FACTORIES = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.scalar_tensor"}
)
LIKE_FACTORIES = _torch("like_factories")
# torch functions whose tensor result lives where their tensor arguments do.
# By hand: functions returning tuples of tensors where their arguments are (`torch.meshgrid`),
# which the declarations list as returning `Tensor[]`, and the analysis holds as one tensor.
# `torch.linalg`, whose functions torch binds without declarations: by hand, those that
# combine their tensors (`linalg.solve(A, b)`), and those of one tensor (tuples held as one).
_LINALG_COMBINING = tuple(
    "linalg." + name
    for name in "solve solve_ex solve_triangular lstsq matmul vecdot cross multi_dot".split()
)
_LINALG_KEEPING = tuple(
    "linalg." + name
    for name in (
        "inv inv_ex det slogdet norm vector_norm matrix_norm cholesky cholesky_ex eigh eigvalsh "
        "qr svd svdvals pinv matrix_exp matrix_power matrix_rank diagonal"
    ).split()
)
KEEPING_FUNCTIONS = _torch(
    "keeping_functions",
    "einsum",
    "norm",
    "cdist",
    "meshgrid",
    "broadcast_tensors",
    "split",
    "tensor_split",
    *_LINALG_COMBINING,
    *_LINALG_KEEPING,
)
_CLAMPS = ("clamp", "clip", "clamp_", "clip_", "clamp_min", "clamp_max", "clamp_min_", "clamp_max_")
# Operations whose kernels take no 0-dim CPU tensor beside tensors on a GPU, as other operations
# take one as a number (recorded on an H200 by `bench/vgpu_parity`): tensor bounds, exact
# comparisons, searches, and the mask of `masked_fill` (whose value may be one).
_NO_CPU_SCALAR_OPERATIONS = frozenset(
    {*_CLAMPS, "equal", "isin", "bucketize", "searchsorted", "dot"}
)
# Keywords naming their operands (`torch.isin(x, test_elements=t)`).
OPERAND_KEYWORDS = frozenset(
    {"input", "other", "tensors", "min", "max", "mask", "elements", "test_elements"}
    | {"boundaries", "sorted_sequence"}
)
_MASKED_FILLS = frozenset({"masked_fill", "masked_fill_"})


def refuses_cpu_scalars(call: ast.Call, qualified: Optional[str]) -> list[ast.expr]:
    """The operands of ``call`` that a 0-dim CPU tensor cannot be when another is on a GPU:
    every operand of a clamp, an exact comparison or a search; `masked_fill`'s receiver and
    mask. ``qualified`` is the torch function called, None for a tensor method."""
    receiver: list[ast.expr] = []
    if qualified is None and isinstance(call.func, ast.Attribute):
        name, receiver = call.func.attr, [call.func.value]
    elif qualified is not None and qualified.startswith("torch."):
        name = qualified.rpartition(".")[2]
    else:
        return []
    passed = [arg for arg in call.args if not isinstance(arg, ast.Starred)]
    if name in _NO_CPU_SCALAR_OPERATIONS:
        named = [k.value for k in call.keywords if k.arg in OPERAND_KEYWORDS]
        return receiver + passed + named
    if name in _MASKED_FILLS:  # `x.masked_fill(mask, v)`, `torch.masked_fill(x, mask, v)`
        operands = receiver + passed
        masks = operands[1:2] or [k.value for k in call.keywords if k.arg == "mask"]
        return operands[:1] + masks
    return []


# Those whose tensor arguments are all operands that must share one device (lengths, batch
# sizes and index lists, which torch takes on the CPU, keep a function out). By hand: functions
# whose index or bound operands must be on the input's device too.
COMBINING_FUNCTIONS = _torch(
    "operand_functions",
    *(
        "einsum norm cdist equal allclose masked_select index_select gather take_along_dim "
        "clamp clip bucketize searchsorted isin masked_fill"
    ).split(),
    *_LINALG_COMBINING,
)
REDUCTIONS = frozenset("sum mean std var prod norm max min amax amin all any median".split())
# Tensor methods whose result stays where the tensor is. By hand: `norm` and `pin_memory` (its
# `device=` names no place for the data) in; out: what takes another tensor's device
# (`type_as`, `set_`), `type` (`x.type(torch.cuda.FloatTensor)` moves it), the moves, and
# `values`, which would read a dict's `.values()` as a tensor where a receiver's kind is unknown.
PLACEMENT_KEEPING_METHODS = _names("keeping_methods", "norm", "pin_memory") - {
    "type_as",
    "set_",
    "type",
    "values",
    *DEVICE_MOVES,
}
# Tensor methods that combine the tensor with tensor arguments, which must share its device.
# `copy_` copies across devices, and `*_as`/`type_as` read only a shape or dtype: not operands.
OPERAND_METHODS = _names(
    "operand_methods",
    *(
        "masked_fill masked_fill_ mm bmm index_select gather scatter scatter_ index_add index_add_"
    ).split(),
    *_CLAMPS,
    "equal",
    "allclose",
    "dot",
    "isin",
) - {"copy_", "expand_as", "reshape_as", "view_as", "type_as", "map_"}
# Tensor factories as methods: `x.new_zeros(...)` lives where `x` does.
NEW_METHODS = _names("new_methods")
# Tensor methods returning Python numbers, booleans or lists: `.item()`, `.tolist()`, `.dim()`.
HOST_METHODS = _names("host_methods")
MODULE_SELF_METHODS = frozenset(
    "eval train half float double bfloat16 requires_grad_ share_memory apply to_empty".split()
)

LOADER_CLASSES = frozenset(
    {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
)
_LOADER_NAME = re.compile(r"(?:[a-z0-9]+_)*(?:data)?loader|dl|(?:[a-z0-9]+_)dl", re.IGNORECASE)

_PARAMETERLESS_MODULES = frozenset(
    (
        "ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax "
        "LogSoftmax Softplus Softsign Hardtanh Hardswish Hardsigmoid Tanhshrink Threshold GLU "
        "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout Identity Flatten Unflatten "
        "MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d "
        "AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d "
        "AdaptiveMaxPool3d Upsample PixelShuffle PixelUnshuffle ZeroPad2d ConstantPad1d "
        "ConstantPad2d ReflectionPad2d ReplicationPad2d CosineSimilarity PairwiseDistance"
    ).split()
)
WRAPPER_MODULES = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
# Lightning's module, under the names its packages export it by.
LIGHTNING_MODULE_BASES = frozenset(
    {
        "pytorch_lightning.LightningModule",
        "pytorch_lightning.core.LightningModule",
        "pytorch_lightning.core.lightning.LightningModule",
        "pytorch_lightning.core.module.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "lightning.pytorch.core.module.LightningModule",
    }
)
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"}) | (
    LIGHTNING_MODULE_BASES
)
# The hooks of a LightningModule that its Trainer calls with the module and the batch on the
# accelerator it chose (the batch moved by `transfer_batch_to_device`).
LIGHTNING_STEP_HOOKS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
# Hooks that run before the Trainer moves the module, or on data still on the CPU.
LIGHTNING_HOST_HOOKS = frozenset(
    {
        "prepare_data",
        "setup",
        "teardown",
        "transfer_batch_to_device",
        "on_before_batch_transfer",
        "on_save_checkpoint",
        "on_load_checkpoint",
        "state_dict",
        "load_state_dict",
    }
)
MODULE_FACTORY_PREFIXES = ("torchvision.models.", "timm.create_model")


def _in_modules(modules: tuple[str, ...], names: str) -> frozenset[str]:
    return frozenset(f"{module}.{name}" for module in modules for name in names.split())


# Collectives of the distributed libraries that return their tensor argument reduced, gathered
# or broadcast, on its device (ignite moves it back where it was; accelerate works on the
# process's device, where the tensor already is). Given a number, ignite returns a number.
DEVICE_KEEPING_COLLECTIVES = _in_modules(
    ("ignite.distributed", "ignite.distributed.utils"), "all_reduce all_gather broadcast"
) | _in_modules(
    ("accelerate.utils", "accelerate.utils.operations"),
    "gather reduce broadcast pad_across_processes",
)
# Context managers whose `as` target is a share of their argument, where the argument is:
# accelerate's `with state.split_between_processes(data) as mine:`.
SPLITTING_CONTEXTS = frozenset({"split_between_processes"})


def combines_operands(qualified: str | None) -> bool:
    """A torch function whose tensor arguments must all share one device: a combining function,
    or a functional layer (`F.grid_sample(x, grid)`, `F.linear(x, w)`; its losses are read on
    their own, as losses)."""
    if qualified is None:
        return False
    if qualified in COMBINING_FUNCTIONS:
        return True
    return qualified.startswith("torch.nn.functional.") and qualified not in FUNCTIONAL_LOSSES


FUNCTIONAL_LOSSES = frozenset(
    "torch.nn.functional." + name
    for name in (
        "cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss "
        "binary_cross_entropy binary_cross_entropy_with_logits kl_div cosine_embedding_loss "
        "margin_ranking_loss hinge_embedding_loss multilabel_margin_loss soft_margin_loss "
        "multilabel_soft_margin_loss multi_margin_loss triplet_margin_loss poisson_nll_loss "
        "gaussian_nll_loss ctc_loss"
    ).split()
)
LOSS_WEIGHT_KEYWORDS = ("weight", "pos_weight")
# Losses whose targets and lengths may stay on the CPU (cuDNN's CTC wants them there).
CPU_TARGET_LOSSES = frozenset({"torch.nn.functional.ctc_loss"})
_LOSS_OPERAND_KEYWORDS = frozenset({"input", "target", "input1", "input2", "anchor", "positive"})


def loss_operands(call: ast.Call) -> list[ast.expr]:
    """The two tensors a loss compares: its first two arguments, passed by position or by name
    (`F.cross_entropy(logits, target=labels)`)."""
    chosen = [arg for arg in call.args if not isinstance(arg, ast.Starred)][:2]
    chosen += [keyword.value for keyword in call.keywords if keyword.arg in _LOSS_OPERAND_KEYWORDS]
    return chosen[:2]


# Assertions that compare the tensors' devices before their values (`check_device=True`, the
# default; `assert_allclose` always does).
_DEVICE_CHECKING_ASSERTIONS = frozenset(
    {"torch.testing.assert_close", "torch.testing.assert_allclose"}
)


def device_compared(call: ast.Call, qualified: str) -> list[ast.expr]:
    """The tensors an assertion requires on one device (`assert_close(actual, expected)`),
    none where it does not compare devices."""
    if qualified not in _DEVICE_CHECKING_ASSERTIONS:
        return []
    check = next((k.value for k in call.keywords if k.arg == "check_device"), None)
    if isinstance(check, ast.Constant) and check.value is False:
        return []
    compared = [arg for arg in call.args[:2] if not isinstance(arg, ast.Starred)]
    compared += [k.value for k in call.keywords if k.arg in ("actual", "expected")]
    return compared


def takes_cpu_targets(qualified: str) -> bool:
    """`F.ctc_loss`, `nn.CTCLoss`: their targets need not be where the input is."""
    return qualified in CPU_TARGET_LOSSES or (
        is_torch_nn_class(qualified) and nn_class_name(qualified) == "CTCLoss"
    )


_LOSS_NAME = re.compile(r"(?:[a-z0-9]+_)*(?:criterion|loss_fn|loss_func|loss_function)", re.I)

DTYPE_NAMES = frozenset(
    (
        "float float32 float64 double float16 half bfloat16 int int8 int16 int32 int64 long "
        "short uint8 bool complex64 complex128 cfloat cdouble"
    ).split()
)
DTYPES = frozenset("torch." + name for name in DTYPE_NAMES)


def is_torch_nn_class(qualified: str) -> bool:
    if not qualified.startswith("torch.nn."):
        return False
    head, _, last = qualified.rpartition(".")
    return last[:1].isupper() and ".functional" not in head and ".init" not in head


def derives_from_module(name: str, bases_of: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether class ``name`` of a file derives, there or through torch, from nn.Module;
    ``bases_of`` maps the file's classes to their bases' qualified (or dotted) names."""
    return _derives(name, bases_of, lambda base: base in MODULE_BASES or is_torch_nn_class(base))


def derives_from_lightning(name: str, bases_of: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether class ``name`` of a file derives, there or directly, from a LightningModule."""
    return _derives(name, bases_of, LIGHTNING_MODULE_BASES.__contains__)


def _derives(
    name: str, bases_of: Mapping[str, tuple[str, ...]], is_root: Callable[[str], bool]
) -> bool:
    seen: set[str] = set()
    pending = [name]
    while pending:
        current = pending.pop()
        seen.add(current)
        for base in bases_of.get(current, ()):
            if is_root(base):
                return True
            if base not in seen:
                pending.append(base)
    return False


def nn_class_name(qualified: str) -> str:
    return qualified.rpartition(".")[2]


def is_loss_class(qualified: str) -> bool:
    return is_torch_nn_class(qualified) and nn_class_name(qualified).endswith("Loss")


# torch.nn classes whose forward returns something other than one tensor: a tuple (recurrent
# layers, attention), or whatever the layers they hold return (containers).
_NOT_ONE_TENSOR_LAYERS = frozenset(
    {
        "RNN",
        "LSTM",
        "GRU",
        "MultiheadAttention",
        "Sequential",
        "ModuleList",
        "ModuleDict",
        "ParameterList",
        "ParameterDict",
        "AdaptiveLogSoftmaxWithLoss",
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d",
    }
)


def returns_one_tensor(qualified: str) -> bool:
    """A torch layer whose forward returns one tensor, so its output is no array or tuple."""
    return nn_class_name(qualified) not in _NOT_ONE_TENSOR_LAYERS


def is_parameterless_class(qualified: str) -> bool:
    return nn_class_name(qualified) in _PARAMETERLESS_MODULES


def looks_like_loader(name: str) -> bool:
    return bool(_LOADER_NAME.fullmatch(name.rsplit(".", 1)[-1]))


def looks_like_loss(name: str) -> bool:
    return bool(_LOSS_NAME.fullmatch(name.rsplit(".", 1)[-1]))
