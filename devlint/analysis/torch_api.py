"""What the analysis knows of torch's API: factories, modules, losses, placement-keeping methods."""

from __future__ import annotations

import re
from collections.abc import Mapping

# `torch.bernoulli`, `multinomial` and `poisson` sample where their input is (so combine, below);
# `torch.normal` is a factory only when given numbers, so it is neither.
FACTORIES = frozenset(
    "torch." + name
    for name in (
        "tensor as_tensor from_numpy zeros ones empty full rand randn randint randperm arange "
        "range linspace logspace eye tril_indices triu_indices empty_strided "
        "Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor "
        "IntTensor ShortTensor ByteTensor CharTensor BoolTensor"
    ).split()
)
# The factories' own names, as a call or an import spells them (`zeros`, `from_numpy`).
FACTORY_NAMES = frozenset(name.rpartition(".")[2] for name in FACTORIES)
# The methods that move a tensor or module: `.to(...)`, `.cuda()`, `.cpu()`.
DEVICE_MOVES = frozenset({"to", "cuda", "cpu"})
# Factories whose result is 0-dim when given a single number (a CPU one mixes with any device).
SCALAR_CAPABLE_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
LIKE_FACTORIES = frozenset(
    "torch." + name
    for name in "zeros_like ones_like empty_like full_like rand_like randn_like randint_like".split(
        " "
    )
)
# torch functions whose tensor result lives where their tensor arguments do.
COMBINING_FUNCTIONS = frozenset(
    "torch." + name
    for name in (
        "cat concat concatenate stack hstack vstack dstack matmul mm bmm mv dot outer add sub "
        "subtract mul multiply div divide true_divide where maximum minimum fmax fmin pow "
        "atan2 lerp addmm addmv addbmm baddbmm cdist dist cross kron logical_and logical_or "
        "logical_xor eq ne lt le gt ge isclose allclose equal masked_select index_select "
        "gather take_along_dim abs exp log log1p sqrt rsqrt sigmoid tanh relu softmax "
        "log_softmax clamp clip flatten reshape squeeze unsqueeze transpose permute t "
        "sum mean std var prod cumsum cumprod norm argmax argmin sort topk round floor ceil sign "
        "neg square sin cos exp2 erf einsum bernoulli multinomial poisson tril triu diag "
        "diagonal diag_embed roll flip"
    ).split()
)
REDUCTIONS = frozenset("sum mean std var prod norm max min amax amin all any median".split())
# Tensor methods whose result stays where the tensor is.
PLACEMENT_KEEPING_METHODS = frozenset(
    (
        "detach clone contiguous float double half bfloat16 long int short bool byte char "
        "view view_as reshape reshape_as unsqueeze squeeze flatten unflatten t transpose permute "
        "expand expand_as repeat repeat_interleave narrow select index_select masked_fill "
        "masked_fill_ fill_ zero_ add add_ sub sub_ mul mul_ div div_ pow abs exp log sqrt sigmoid "
        "tanh relu softmax log_softmax clamp clamp_ clip argmax argmin cumsum flip roll sort topk "
        "chunk split unbind requires_grad_ pin_memory type squeeze_ unsqueeze_ transpose_ "
        "t_ round floor ceil neg sign eq ne lt le gt ge logical_not masked_select gather "
        "scatter scatter_ index_add index_add_ sum mean std var prod norm max min amax amin all "
        "any median matmul mm bmm tril triu tril_ triu_ diag diagonal"
    ).split()
)
# Tensor methods that combine the tensor with tensor arguments, which must share its device.
OPERAND_METHODS = frozenset(
    (
        "add add_ sub sub_ mul mul_ div div_ matmul mm bmm lt le gt ge eq ne masked_fill "
        "masked_fill_ where logical_and logical_or maximum minimum index_select "
        "gather scatter scatter_ index_add index_add_"
    ).split()
)
# Tensor factories as methods: `x.new_zeros(...)` lives where `x` does.
NEW_METHODS = frozenset("new_zeros new_ones new_empty new_full new_tensor".split())
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
MODULE_BASES = frozenset(
    {
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
        "pytorch_lightning.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
    }
)
MODULE_FACTORY_PREFIXES = ("torchvision.models.", "timm.create_model")

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
_LOSS_NAME = re.compile(r"(?:[a-z0-9]+_)*(?:criterion|loss_fn|loss_func|loss_function)", re.I)

DTYPES = frozenset(
    "torch." + name
    for name in (
        "float float32 float64 double float16 half bfloat16 int int8 int16 int32 int64 long "
        "short uint8 bool complex64 complex128 cfloat cdouble"
    ).split()
)


def is_torch_nn_class(qualified: str) -> bool:
    if not qualified.startswith("torch.nn."):
        return False
    head, _, last = qualified.rpartition(".")
    return last[:1].isupper() and ".functional" not in head and ".init" not in head


def derives_from_module(name: str, bases_of: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether class ``name`` of a file derives, there or through torch, from nn.Module;
    ``bases_of`` maps the file's classes to their bases' qualified (or dotted) names."""
    seen: set[str] = set()
    pending = [name]
    while pending:
        current = pending.pop()
        seen.add(current)
        for base in bases_of.get(current, ()):
            if base in MODULE_BASES or is_torch_nn_class(base):
                return True
            if base not in seen:
                pending.append(base)
    return False


def nn_class_name(qualified: str) -> str:
    return qualified.rpartition(".")[2]


def is_loss_class(qualified: str) -> bool:
    return is_torch_nn_class(qualified) and nn_class_name(qualified).endswith("Loss")


def is_parameterless_class(qualified: str) -> bool:
    return nn_class_name(qualified) in _PARAMETERLESS_MODULES


def looks_like_loader(name: str) -> bool:
    return bool(_LOADER_NAME.fullmatch(name.rsplit(".", 1)[-1]))


def looks_like_loss(name: str) -> bool:
    return bool(_LOSS_NAME.fullmatch(name.rsplit(".", 1)[-1]))
