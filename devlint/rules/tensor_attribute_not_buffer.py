from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Optional, Union

from devlint.analysis.cached_tensors import CachedTensor, cached_tensors
from devlint.analysis.calls import converts_dtype
from devlint.analysis.coercion import coerced_value, cpu_data_constructor
from devlint.analysis.contexts import defaults_of
from devlint.analysis.names import ImportMap
from devlint.analysis.parameters import TENSOR_TYPES
from devlint.analysis.prefilter import (
    FORWARD_METHOD,
    SELF_FACTORY_ASSIGNMENT,
    TENSOR_COERCION,
    AnyOf,
)
from devlint.analysis.syntax import (
    argument,
    call_arguments,
    dotted_name,
    keyword_value,
    nodes_below,
    parameters_of,
    self_attribute,
)
from devlint.analysis.syntax_screen import SyntaxFacts
from devlint.analysis.torch_api import (
    COMBINING_FUNCTIONS,
    FACTORIES,
    PLACEMENT_KEEPING_METHODS,
    SCALAR_CAPABLE_FACTORIES,
    refuses_cpu_scalars,
)
from devlint.rules.base import FlowRule, Invalid

# Methods through which a class may move its own tensors, or reads of an attribute that adapt it.
_SELF_MOVING_METHODS = frozenset({"to", "cuda", "_apply"})
_ADAPTING_METHODS = frozenset({"to", "cuda", "type_as", "cpu"})
# What a tensor tells of itself wherever it lives: reading these is no use of its values.
_DEVICE_FREE_READS = frozenset(
    {"shape", "size", "dtype", "ndim", "dim", "numel", "nelement", "device", "is_cuda"}
)
# Wrappers that hold the tensor they are given where it is.
_WRAPPERS = frozenset({"Parameter", "Variable"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Builtins that reach an object's attributes by name.
_REFLECTION = frozenset({"vars", "getattr", "setattr"})
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


class TensorAttributeNotBuffer(FlowRule):
    """
    ## What it does
    Flags a plain tensor stored on `self` in an `nn.Module`'s `__init__`
    (`self.mask = torch.ones(...)`) and used in `forward`. Not a vector of
    numbers (`torch.tensor([0.5, 0.25])`, a comprehension over `range`) read
    only item by item, with an integer or a loop counter, in arithmetic with a
    call's result (`self.weights[i] * criterion(out, y)`): each item is a 0-dim
    tensor, which PyTorch mixes with tensors on any device.

    A tensor that may be 0-dim (`torch.tensor(low)` of a number, or a value the
    class coerces, `if not isinstance(low, torch.Tensor): low = torch.tensor(low)`,
    itself or through a helper) mixes with tensors on any device, as a number, in
    most operations: it is flagged where it is an operand that a GPU refuses as a
    0-dim CPU tensor (a bound of `clamp`, the mask of `masked_fill`). A class with
    no `forward` of its own runs the one it inherits from a class of the file
    (which calls the subclass's methods); a `to()` of the class moves the
    attribute only where it names it, hands `self` on, or reaches the module's
    attributes without naming them (`vars(self)`, `self.__dict__.items()`).

    Also flags a cache: an attribute `__init__` sets to `None` that `forward`
    (or a method it runs) fills, under a condition that never asks where the
    cached tensor is, with a tensor made on the inputs' device (`device=x.device`,
    `.to(device)`) and then uses.

    ## Why is this bad?
    `model.to(device)` moves parameters and buffers, not plain attributes: the
    tensor stays on the CPU while everything else moves, and `forward` fails on
    the GPU with "Expected all tensors to be on the same device". It is also
    missing from `state_dict()`. A cached tensor stays where the first call made
    it: after the model moves (trained on a GPU, then run on the CPU), `forward`
    reuses it on the old device until the cache's condition holds again.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(16)

        def forward(self, x):
            return x * self.scale
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.ones(16))  # or nn.Parameter(...)
    ```
    and for a cache, `self.register_buffer("mask", None, persistent=False)`.

    ## Fix safety
    No automatic fix yet.
    """

    code = "DEV009"
    name = "tensor-attribute-not-buffer"
    summary = "plain tensor attribute of an nn.Module used in forward"
    trigger_tokens = ("forward",)
    # a factory stored on `self`, a value coerced into a tensor, or a cache that starts as
    # `self.x = None`
    required_patterns = (
        FORWARD_METHOD,
        AnyOf(("= None",), (SELF_FACTORY_ASSIGNMENT, TENSOR_COERCION)),
    )

    VALID = (
        # a `to()` handing `self` to a helper that moves every tensor it holds
        "import torch\nfrom torch import nn\ndef move_tensors(module, *args):\n"
        "    for k, v in list(module.__dict__.items()):\n"
        "        if torch.is_tensor(v):\n            module.__dict__[k] = v.to(*args)\n"
        "class Clip(nn.Module):\n    def __init__(self, low):\n        super().__init__()\n"
        "        self.low = torch.tensor(low)\n"
        "    def to(self, *args, **kwargs):\n        move_tensors(self, *args)\n"
        "        return super().to(*args, **kwargs)\n"
        "    def forward(self, x):\n        return x.clamp(min=self.low)",
        # a clamp of the attribute by a number: nothing of the input's there
        "import torch\nfrom torch import nn\nclass Scaled(nn.Module):\n"
        "    def __init__(self, t=0.07):\n        super().__init__()\n"
        "        self.t = torch.tensor(t)\n"
        "    def forward(self, x):\n        return x / torch.clamp(self.t, min=1e-4)",
        # a number kept as a 0-dim tensor mixes with any device in arithmetic
        "import torch\nfrom torch import nn\nclass Scale(nn.Module):\n"
        "    def __init__(self, scale):\n        super().__init__()\n"
        "        if not torch.is_tensor(scale):\n            scale = torch.tensor(scale)\n"
        "        self.scale = scale\n"
        "    def forward(self, x):\n        return x * self.scale",
        # the base's `to` moves the bound
        "import torch\nfrom torch import nn\nclass Base(nn.Module):\n"
        "    def to(self, *args):\n        self._moved(*args)\n        return super().to(*args)\n"
        "    def _moved(self, *args):\n        self.low = self.low.to(*args)\n"
        "    def forward(self, x):\n        return self.apply_to(x)\n"
        "class Clip(Base):\n    def __init__(self, low):\n        super().__init__()\n"
        "        self.low = torch.tensor(low)\n"
        "    def apply_to(self, x):\n        return x.clamp(min=self.low)",
        # the helper may hand back what it was given, a list
        "import torch\nfrom torch import nn\nclass Clip(nn.Module):\n"
        "    def __init__(self, low):\n        super().__init__()\n"
        "        def check(v):\n            if isinstance(v, list):\n                return v\n"
        "            if not isinstance(v, torch.Tensor):\n                v = torch.tensor(v)\n"
        "            return v\n"
        "        self.low = check(low)\n"
        "    def forward(self, x):\n        return x.clamp(min=self.low)",
        # moved by `__init__` itself
        "import torch\nfrom torch import nn\nclass Agent(nn.Module):\n"
        "    def __init__(self, use_cuda):\n        super().__init__()\n"
        "        self.whoami = torch.LongTensor([1, 2])\n        if use_cuda:\n"
        "            self.whoami = self.whoami.to('cuda')\n"
        "    def forward(self, x):\n        return x + self.whoami",
        # handed to a helper of the project, which may move it
        "import torch\nfrom torch import nn\nclass Elmo(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.bos = torch.from_numpy(make() + 1)\n"
        "    def forward(self, inputs):\n        return add_tokens(inputs, self.bos)",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self, dd):\n        super().__init__()\n"
        "        self.scale = torch.ones(16, **dd)\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('scale', torch.ones(4))\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.scale = nn.Parameter(torch.ones(4))\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.scale = torch.tensor(2.0)\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(4)\n"
        "    def forward(self, x):\n        return x * self.scale.to(x.device)",
        # indexed by another plain tensor, both read on the CPU before the move
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.pe = torch.ones(8, 4)\n"
        "        self.idx = torch.arange(4)\n"
        "    def forward(self, x):\n        return x + self.pe[self.idx].to(x.device)",
        # wrapped, sliced and moved, with nothing computed before the move
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.pe = torch.ones(8, 4)\n"
        "    def forward(self, x):\n"
        "        return x + nn.Parameter(self.pe[: x.size(0)], requires_grad=False).to(x.device)",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(4)\n"
        "    def _apply(self, fn):\n        self.scale = fn(self.scale)\n        return super()._apply(fn)\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nclass Plain:\n    def __init__(self):\n        self.scale = torch.ones(4)\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(4)\n"
        "    def forward(self, x):\n        return x",
        # a local name assigned twice: which value is stored is not certain
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self, dev):\n        super().__init__()\n        m = torch.ones(4)\n"
        "        m = m.to(dev)\n        self.m = m\n"
        "    def forward(self, x):\n        return x * self.m",
        # a method `forward` never calls
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.m = torch.ones(4) > 0\n"
        "    def forward(self, x):\n        return x\n"
        "    def debug(self, x):\n        return x * self.m",
        # read for its shape, and copied into a buffer (a copy crosses devices)
        "import torch\nfrom torch import nn\nclass Grid(nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.grid = torch.ones(n, 2)\n"
        "    def forward(self, x):\n        out = torch.zeros((x.size(0),) + self.grid.shape)\n"
        "        out[0] = self.grid\n        return x * out.to(x.device)",
        # `forward` reads none of its inputs: the tensor meets nothing on the module's device.
        "import torch, math\nfrom torch import nn\nclass Performer(nn.Module):\n"
        "    def __init__(self, m):\n        super().__init__()\n        self.w = torch.randn(m, 4)\n"
        "        self.w = nn.Parameter(nn.init.orthogonal_(self.w), requires_grad=False)\n"
        "    def forward(self, x):\n        return x @ self.w",
        "import torch\nfrom torch import nn\nclass Empty(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.p = torch.rand(3, 3)\n"
        "    def forward(self, *args, **kwargs):\n        return {'loss': self.p.sum()}",
        # caches that ask where the cached tensor is, are made again on every call, or are
        # registered buffers
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.mask = None\n"
        "    def forward(self, x):\n"
        "        if self.mask is None or self.mask.device != x.device:\n"
        "            self.mask = torch.ones(x.size(1), device=x.device)\n"
        "        return x * self.mask",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.mask = None\n"
        "    def forward(self, x):\n"
        "        self.mask = torch.ones(x.size(1), device=x.device)\n"
        "        return x * self.mask",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('mask', None, persistent=False)\n"
        "    def forward(self, x):\n        if self.mask is None:\n"
        "            self.mask = torch.ones(x.size(1), device=x.device)\n"
        "        return x * self.mask",
        # a layer built lazily registers itself: `.to()` moves it
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.proj = None\n"
        "    def forward(self, x):\n        if self.proj is None:\n"
        "            self.proj = nn.Linear(x.size(-1), 4).to(x.device)\n"
        "        return self.proj(x)",
        # ... and so does one its wrapper returns
        "import torch\nfrom torch import nn\nfrom torch.nn.utils import parametrizations as P\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.proj = None\n"
        "    def forward(self, x):\n        if self.proj is None:\n"
        "            self.proj = P.weight_norm(nn.Linear(x.size(-1), 4)).to(x.device)\n"
        "        return self.proj(x)",
        # a condition that asks a method of the module, which may compare devices
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.mask = None\n"
        "        self.where = None\n"
        "    def _stale(self, x):\n        return self.where != x.device\n"
        "    def forward(self, x):\n        if self._stale(x):\n"
        "            self.mask = torch.ones(x.size(1), device=x.device)\n"
        "            self.where = x.device\n"
        "        return x * self.mask",
        # a cache read through a move to the input's device
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.mask = None\n"
        "    def forward(self, x):\n        if self.mask is None:\n"
        "            self.mask = torch.ones(x.size(1), device=x.device)\n"
        "        return x * self.mask.to(x.device)",
        # an item of a vector of numbers, taken by a loop's counter: a 0-dim tensor, which
        # mixes with tensors on any device as a number does
        "import torch\nfrom torch import nn\nclass MultiScale(nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n"
        "        self.weights = torch.FloatTensor([0.32 / 2**s for s in range(n)])\n"
        "    def forward(self, outputs, target):\n        loss = 0\n"
        "        for i, out in enumerate(outputs):\n"
        "            loss += self.weights[i] * (out - target).abs().mean()\n"
        "        return loss",
    )
    INVALID = (
        # coerced from a number: a clamp bound takes no 0-dim CPU tensor beside a GPU input
        Invalid(
            "import torch\nfrom torch import nn\nclass Clip(nn.Module):\n"
            "    def __init__(self, low):\n        super().__init__()\n"
            "        if not isinstance(low, torch.Tensor):\n            low = torch.tensor(low)\n"
            "        self.low = low\n"
            "    def forward(self, x):\n        return x.clamp(min=self.low)",
            8,
            9,
            "where a 0-dim CPU tensor cannot meet a GPU's (line 10)",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self, eps):\n        super().__init__()\n"
            "        self.eps = torch.tensor(eps)\n"
            "    def forward(self, x):\n        return torch.clamp(x, self.eps)",
            6,
            9,
        ),
        # `forward` inherited from a base of the file, which calls the subclass's method; a
        # helper coercing the bound; a `to` that clears something else
        Invalid(
            "import torch\nfrom torch import nn\nclass Transform(nn.Module):\n"
            "    def forward(self, x):\n        return self._apply_transform(x)\n"
            "    def to(self, *args):\n        self.__dict__['_parent'] = None\n"
            "        return super().to(*args)\n"
            "class Clip(Transform):\n    def __init__(self, low=None):\n"
            "        super().__init__()\n"
            "        def check_val(val):\n            if val is None:\n"
            "                return None, 1.0\n"
            "            if not isinstance(val, torch.Tensor):\n"
            "                val = torch.tensor(val)\n"
            "            if not val.dtype.is_floating_point:\n                val = val.float()\n"
            "            return val, torch.finfo(val.dtype).eps\n"
            "        low, low_eps = check_val(low)\n        self.low = low\n"
            "    def _apply_transform(self, obs):\n        if self.low is None:\n"
            "            return obs\n        return obs.clamp(self.low)",
            21,
            9,
            "(line 25)",
        ),
        # a cache filled on the inputs' device, refreshed when the batch size changes
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.mask = None\n        self.size = 0\n"
            "    def forward(self, x):\n        if x.size(0) != self.size:\n"
            "            self.mask = self.make_mask(x.size(0), device=x.device)\n"
            "            self.size = x.size(0)\n"
            "        return x * self.mask\n"
            "    def make_mask(self, n, device):\n        return torch.ones(n, device=device)",
            6,
            9,
            "`self.mask` caches a tensor made on the inputs' device (line 10)",
        ),
        # filled once, moved to where the first input was
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self, n):\n        super().__init__()\n        self.pos = None\n"
            "        self.n = n\n"
            "    def forward(self, x):\n        device = x.device\n"
            "        if self.pos is None:\n            self.pos = torch.arange(self.n).to(device)\n"
            "        return x + self.pos",
            6,
            9,
            "reuses it on the old device (line 12) until line 11 runs again",
        ),
        # a dtype conversion keeps the device
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.pe = torch.ones(8, 4)\n"
            "    def forward(self, x):\n"
            "        return x + nn.Parameter(data=self.pe).to(torch.float16)",
            6,
            9,
        ),
        # the sum runs before the move
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.pe = torch.ones(8, 4)\n"
            "    def forward(self, x):\n"
            "        return (x + nn.Parameter(self.pe, requires_grad=False)).to(x.device)",
            6,
            9,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Attention(nn.Module):\n"
            "    def __init__(self, n):\n        super().__init__()\n"
            "        self.mask = torch.tril(torch.ones(n, n))\n"
            "    def forward(self, att):\n        T = att.size(-1)\n"
            "        return att.masked_fill(self.mask[:T, :T] == 0, 0.0)",
            6,
            9,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(16)\n"
            "    def forward(self, x):\n        return x * self.scale",
            6,
            9,
            "`self.scale` is a plain tensor",
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\nclass Base(nn.Module):\n    pass\n"
            "class Net(Base):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.pos = torch.arange(n)\n"
            "    def forward(self, x):\n        return x + self.pos[: x.size(1)]",
            8,
            9,
        ),
        # a comparison made in `__init__`, sliced per step
        Invalid(
            "import torch\nfrom torch import nn\nclass Attention(nn.Module):\n"
            "    def __init__(self, n):\n        super().__init__()\n"
            "        self.mask = torch.tril(torch.ones(n, n)) == 0\n"
            "    def forward(self, att):\n        T = att.size(-1)\n"
            "        return att.masked_fill(self.mask[:T, :T], 0.0)",
            6,
            9,
        ),
        # inverted, read in a method `forward` calls
        Invalid(
            "import torch\nfrom torch import nn\nclass Attention(nn.Module):\n"
            "    def __init__(self, n):\n        super().__init__()\n"
            "        self.mask = ~torch.tril(torch.ones(n, n, dtype=torch.bool))\n"
            "    def forward(self, att):\n        return self._masked(att)\n"
            "    def _masked(self, att):\n"
            "        return att.masked_fill(self.mask[: att.size(1)], 0.0)",
            6,
            9,
            "yet `forward` uses it (line 10)",
        ),
        # through a local name `__init__` assigns once
        Invalid(
            "import torch\nfrom torch import nn\nclass Attention(nn.Module):\n"
            "    def __init__(self, n):\n        super().__init__()\n"
            "        self.n = torch.ones(n)\n"
            "        causal = torch.tril(torch.ones(n, n))\n        self.mask = causal\n"
            "    def forward(self, att):\n        return att * self.mask",
            8,
            9,
            "`self.mask` is a plain tensor",
        ),
        # a size, not data: `self.mask[0]` is a row
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.mask = torch.ones([4, 4])\n"
            "    def forward(self, x):\n        return x * self.mask[0]",
            6,
            9,
        ),
        # an item kept as a 0-dim CPU tensor, then summed into in place
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.w = torch.tensor([0.5, 0.25])\n"
            "    def forward(self, x):\n        acc = self.w[0] * 1.0\n"
            "        for i in range(2):\n            acc += self.w[i] * x.sum()\n"
            "        return acc",
            6,
            9,
            "(line 8)",
        ),
        # the whole vector, or an item taken by an index that may be a tensor
        Invalid(
            "import torch\nfrom torch import nn\nclass MultiScale(nn.Module):\n"
            "    def __init__(self, n):\n        super().__init__()\n"
            "        self.weights = torch.FloatTensor([0.32 / 2**s for s in range(n)])\n"
            "    def forward(self, losses, level):\n"
            "        return (self.weights[level] * losses).sum()",
            6,
            9,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass MultiScale(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.weights = torch.tensor([0.5, 0.25])\n"
            "    def forward(self, losses):\n        total = 0\n"
            "        for i in range(2):\n            total += self.weights[i] * losses[i].mean()\n"
            "        return total + (self.weights * losses).sum()",
            6,
            9,
            "(line 11)",
        ),
    )

    @classmethod
    def may_fire_in(cls, facts: SyntaxFacts) -> bool:
        return facts.forward_method and (facts.cpu_tensor_source or facts.device_source)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if not self.analysis.flow.is_module_class(node.name):
            return
        own = {
            statement.name: statement
            for statement in node.body
            if isinstance(statement, _FUNCTIONS)
        }
        methods = self.analysis.flow.with_inherited_methods(node, own)
        init, forward = own.get("__init__"), methods.get("forward")
        if init is None or forward is None:
            return
        if not _reads_its_inputs(forward):
            return  # nothing on the module's device reaches the tensor: moving it is harmless
        reassigned = {
            name
            for method_name, method in methods.items()
            if method_name != "__init__"
            for name in _self_assignments(method)
        }
        moved_in_init = _moved_attributes(init)
        run_by_forward = _methods_run_by(forward, methods)
        moving = [
            method
            for name in _SELF_MOVING_METHODS & methods.keys()
            for method in _methods_run_by(methods[name], methods)
        ]
        for assignment, attribute, maybe_0_dim in self._plain_tensor_attributes(init):
            if attribute in reassigned or attribute in moved_in_init:
                continue
            if any(_may_move(method, attribute) for method in moving):
                continue
            if maybe_0_dim:
                use = _first_refused_use(run_by_forward, attribute, self.analysis.names)
            else:
                items_are_numbers = self._vector_of_numbers(assignment.value, init)
                use = _first_plain_use(
                    run_by_forward, attribute, self.analysis.names, items_are_numbers
                )
            if use is not None:
                where = " where a 0-dim CPU tensor cannot meet a GPU's" if maybe_0_dim else ""
                self.report(
                    assignment,
                    f"`self.{attribute}` is a plain tensor: `model.to(device)` does not move it, "
                    f"yet `forward` uses it{where} (line {{line0}}); register it with "
                    f'`self.register_buffer("{attribute}", ...)` or wrap it in `nn.Parameter`',
                    (use,),
                )
        for cached in cached_tensors(init, run_by_forward, node.body):
            self._report_cache(cached)

    def _report_cache(self, cached: CachedTensor) -> None:
        name = cached.attribute
        self.report(
            cached.initialised,
            f"`self.{name}` caches a tensor made on the inputs' device (line {{line0}}), which "
            f"`model.to(device)` does not move: after a move, `forward` reuses it on the old "
            f"device (line {{line1}}) until line {{line0}} runs again; register it with "
            f'`self.register_buffer("{name}", None, persistent=False)`',
            (cached.stored, cached.read),
        )

    def _plain_tensor_attributes(self, init: FunctionNode) -> list[tuple[ast.Assign, str, bool]]:
        """`self.name = <a CPU tensor>` in ``init``, where no later statement of ``init``
        assigns `self.name` again (`self.w = nn.Parameter(self.w)` registers it), and whether
        the tensor may be 0-dim (`torch.tensor(low)`, a coerced parameter), which PyTorch
        mixes with tensors on any device in most operations."""
        found: list[tuple[ast.Assign, str, bool]] = []
        local = _single_local_assignments(init)
        reassigned: set[str] = set()
        for index in range(len(init.body) - 1, -1, -1):
            statement = init.body[index]
            if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
                continue
            name = self_attribute(statement.targets[0])
            if name is None:
                continue
            if name not in reassigned:
                if self._is_plain_tensor(statement.value, local):
                    found.append((statement, name, False))
                elif self._maybe_0_dim_tensor(statement.value, init, index):
                    found.append((statement, name, True))
            reassigned.add(name)
        return found[::-1]

    def _maybe_0_dim_tensor(self, value: ast.expr, init: FunctionNode, index: int) -> bool:
        """A CPU tensor that may be 0-dim: a data constructor given no device
        (`torch.tensor(low)`), or a value ``init`` coerces into one before ``index``, itself or
        through a function returning it (`low, eps = check_val(low)`; see `coercion`)."""
        names = self.analysis.names
        if isinstance(value, ast.Call) and bool(value.args) and cpu_data_constructor(value, names):
            return True
        return coerced_value(value, init, index, names, self.analysis.flow.functions)

    def _is_plain_tensor(self, value: ast.expr, local: Mapping[str, ast.expr]) -> bool:
        """A tensor made on the CPU: a factory without `device=`, or what a placement-keeping
        function, method, arithmetic, comparison or indexing makes of one
        (`torch.tril(torch.ones(n, n)) == 0`, `~torch.triu(...)`, `torch.eye(n)[None]`), also
        through a local name `__init__` assigns once (`mask = torch.tril(...)`)."""
        if isinstance(value, ast.Name):
            held = local.get(value.id)
            return held is not None and self._is_plain_tensor(held, {})
        if isinstance(value, (ast.BinOp, ast.Compare)):
            sides = (
                (value.left, value.right)
                if isinstance(value, ast.BinOp)
                else (value.left, *value.comparators)
            )
            return any(self._is_plain_tensor(side, local) for side in sides) and all(
                isinstance(side, ast.Constant) or self._is_plain_tensor(side, local)
                for side in sides
            )
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.Invert, ast.USub)):
            return self._is_plain_tensor(value.operand, local)
        if isinstance(value, ast.Subscript):
            return self._is_plain_tensor(value.value, local)
        if not isinstance(value, ast.Call) or keyword_value(value, "device") is not None:
            return False
        if any(keyword.arg is None for keyword in value.keywords):
            return False  # `**kwargs` may hold a device
        func = value.func
        # `torch.arange(n).float()`; `torch.tril(...)` is a function, read below.
        method = func.attr if isinstance(func, ast.Attribute) else ""
        receiver = func.value if isinstance(func, ast.Attribute) else None
        if (
            method in PLACEMENT_KEEPING_METHODS
            and receiver
            and self._is_plain_tensor(receiver, local)
        ):
            return True
        qualified = self.analysis.names.qualified_syntax_name(func)
        if qualified in COMBINING_FUNCTIONS:
            passed = call_arguments(value)
            return bool(passed) and self._is_plain_tensor(passed[0], local)
        if qualified not in FACTORIES or argument(value, -1, "device") is not None:
            return False
        if qualified in SCALAR_CAPABLE_FACTORIES:
            passed = call_arguments(value)
            return bool(passed) and isinstance(passed[0], (ast.List, ast.Tuple, ast.ListComp))
        return True

    def _vector_of_numbers(self, value: ast.expr, init: FunctionNode) -> bool:
        """`torch.FloatTensor([w / 2**s for s in range(n)])`, `torch.tensor([0.5, 0.25])`: a
        data constructor given one flat list whose items are numbers: numeric literals, or
        arithmetic of them, of `range` counters and of `__init__`'s parameters defaulting to a
        number. Not a size (`torch.ones([4, 4])`), nor names that may hold lists."""
        if not isinstance(value, ast.Call) or len(value.args) != 1 or value.keywords:
            return False
        qualified = self.analysis.names.qualified_syntax_name(value.func) or ""
        if qualified not in _DATA_CONSTRUCTORS:
            return False
        numbers = {
            name
            for name, default in defaults_of(init).items()
            if isinstance(default, ast.Constant) and type(default.value) in (int, float)
        }
        written = value.args[0]
        if isinstance(written, ast.List):
            return all(_a_number(item, numbers) for item in written.elts)
        if not isinstance(written, ast.ListComp):
            return False
        counters = {
            generator.target.id
            for generator in written.generators
            if isinstance(generator.target, ast.Name)
            and isinstance(generator.iter, ast.Call)
            and dotted_name(generator.iter.func) == "range"
        }
        return _a_number(written.elt, numbers | counters)


def _may_move(method: FunctionNode, attribute: str) -> bool:
    """Whether ``method`` (a `to`, `cuda` or `_apply` of the class, or a method one of them
    calls) may move `self.<attribute>`: it names the attribute (on `self`, or on what
    `super().to()` returned), hands `self` to a function, or reaches the module's attributes
    without naming them (`vars(self)`, `self.__dict__.items()`, `self.__setattr__(...)`,
    `getattr(self, name)`); `self.__dict__["_parent"] = None` names another."""
    nodes = list(nodes_below(method))
    named_keys = {
        id(node.value)
        for node in nodes
        if isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value != attribute
    }
    for node in nodes:
        if isinstance(node, ast.Attribute):
            on_self = dotted_name(node.value) == "self"
            dunder = on_self and node.attr.startswith("__") and id(node) not in named_keys
            if node.attr == attribute or dunder:
                return True
        elif isinstance(node, ast.Call):
            if dotted_name(node.func) in _REFLECTION:
                return True
            if any(dotted_name(passed) == "self" for passed in call_arguments(node)):
                return True
    return False


def _first_refused_use(
    run_by_forward: Sequence[FunctionNode], attribute: str, names: ImportMap
) -> Optional[ast.expr]:
    """The first `self.<attribute>` in ``run_by_forward`` that is an operand a 0-dim CPU tensor
    cannot be beside a tensor on a GPU (a bound of `clamp`, the mask of `masked_fill`; see
    `refuses_cpu_scalars`), where another operand reads the function's inputs (`obs.clamp(
    self.low)`), which are on the module's device."""
    written = f"self.{attribute}"
    for function in run_by_forward:
        inputs = {parameter.arg for parameter in parameters_of(function)} - {"self"}
        uses: list[ast.expr] = []
        for node in nodes_below(function):
            if not isinstance(node, ast.Call):
                continue
            qualified = names.qualified_syntax_name(node.func)
            operands = refuses_cpu_scalars(node, qualified)
            ours = [operand for operand in operands if dotted_name(operand) == written]
            others = [operand for operand in operands if _reads(operand, inputs)]
            if others:
                uses.extend(ours)
        if uses:
            return min(uses, key=lambda use: (use.lineno, use.col_offset))
    return None


def _reads(operand: ast.expr, inputs: Collection[str]) -> bool:
    """Whether ``operand`` reads one of the function's inputs (`obs`, `x.abs()`): a tensor of
    the caller's, on the module's device."""
    return any(isinstance(node, ast.Name) and node.id in inputs for node in nodes_below(operand))


def _moved_attributes(init: FunctionNode) -> set[str]:
    """Attributes `__init__` moves itself (`self.x = self.x.to("cuda")`, under a flag or not):
    the class manages their device by hand."""
    moved: set[str] = set()
    for node in nodes_below(init):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if isinstance(func, ast.Attribute) and func.attr in _ADAPTING_METHODS:
            targets = (dotted_name(target) or "" for target in node.targets)
            moved.update(t[len("self.") :] for t in targets if t.startswith("self."))
    return moved


def _self_assignments(method: FunctionNode) -> set[str]:
    """The attributes of `self` a method assigns (`self.x = ...`)."""
    assigned: set[str] = set()
    for statement in method.body:
        for node in nodes_below(statement):
            if isinstance(node, ast.Assign):
                targets = (dotted_name(target) or "" for target in node.targets)
                assigned.update(t[len("self.") :] for t in targets if t.startswith("self."))
    return assigned


def _reads_its_inputs(forward: FunctionNode) -> bool:
    params = forward.args
    inputs = {param.arg for param in (*params.posonlyargs, *params.args)[1:]}
    inputs |= {param.arg for param in params.kwonlyargs}
    inputs |= {star.arg for star in (params.vararg, params.kwarg) if star is not None}
    return any(
        isinstance(node, ast.Name) and node.id in inputs
        for statement in forward.body
        for node in nodes_below(statement)
    )


def _calls_a_layer(call: ast.Call) -> bool:
    """`self.layer(...)`: a submodule, which runs on the module's device."""
    return isinstance(call.func, ast.Attribute) and dotted_name(call.func.value) == "self"


def _single_local_assignments(function: FunctionNode) -> dict[str, ast.expr]:
    """The local names a function's top level assigns exactly once, and nowhere else."""
    counts: dict[str, int] = {}
    for node in nodes_below(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    return {
        statement.targets[0].id: statement.value
        for statement in function.body
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and counts.get(statement.targets[0].id) == 1
    }


def _methods_run_by(
    forward: FunctionNode, methods: Mapping[str, FunctionNode]
) -> list[FunctionNode]:
    """`forward` and the methods of its class it calls as `self.name(...)`, transitively: they
    run on the module's device too."""
    reached = [forward]
    index = 0
    while index < len(reached):
        for node in nodes_below(reached[index]):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and dotted_name(node.func.value) == "self"
            ):
                method = methods.get(node.func.attr)
                if method is not None and method not in reached and node.func.attr != "__init__":
                    reached.append(method)
        index += 1
    return reached


def _first_plain_use(
    run_by_forward: Sequence[FunctionNode],
    attribute: str,
    names: ImportMap,
    items_are_numbers: bool,
) -> Optional[ast.Attribute]:
    """The first read of `self.<attribute>` in ``run_by_forward`` (`forward` first) that does
    not adapt it (`self.x.to(...)` does) and is not handed to a helper of the project, which may
    move it (`add_tokens(x, self.x)`). Where the attribute is a vector of numbers, an item of
    it taken by an integer index in arithmetic (`self.weights[i] * loss`) is a 0-dim tensor,
    which PyTorch mixes with tensors on any device, as a number."""
    for function in run_by_forward:
        items = _number_items(function, attribute) if items_are_numbers else set()
        use = _first_plain_use_in(function, attribute, names, items)
        if use is not None:
            return use
    return None


_DATA_CONSTRUCTORS = frozenset(
    {"torch.tensor", "torch.as_tensor"} | {f"torch.{kind}" for kind in TENSOR_TYPES}
)


def _a_number(item: ast.expr, numbers: Collection[str]) -> bool:
    """A numeric literal, a name of ``numbers``, or arithmetic of them."""
    if isinstance(item, ast.Constant):
        return type(item.value) in (int, float)
    if isinstance(item, ast.Name):
        return item.id in numbers
    if isinstance(item, ast.UnaryOp) and isinstance(item.op, (ast.USub, ast.UAdd)):
        return _a_number(item.operand, numbers)
    if isinstance(item, ast.BinOp):
        return _a_number(item.left, numbers) and _a_number(item.right, numbers)
    return False


def _number_items(function: FunctionNode, attribute: str) -> set[int]:
    """The reads `self.<attribute>[i]` in ``function`` that are operands of arithmetic with a
    call's result (`self.w[i] * criterion(out, y)`), where `i` is an integer literal or a loop's
    counter (`for i in range(...)`, `for i, _ in enumerate(...)`)."""
    counters = _loop_counters(function)
    found: set[int] = set()
    for node in nodes_below(function):
        if not isinstance(node, ast.BinOp):
            continue
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if (
                not isinstance(side, ast.Subscript)
                or dotted_name(side.value) != f"self.{attribute}"
            ):
                continue
            if not isinstance(other, ast.Call):
                continue  # `self.w[0] * 2` stays a 0-dim CPU tensor, which `torch.cat` refuses
            index = side.slice
            integer = isinstance(index, ast.Constant) and type(index.value) is int
            if integer or (isinstance(index, ast.Name) and index.id in counters):
                found.add(id(side.value))
    return found


def _loop_counters(function: FunctionNode) -> set[str]:
    """Names `for` loops of ``function`` bind to integers: `for i in range(n)`, `for i, x in
    enumerate(xs)`, and bind nowhere else (not a parameter either)."""
    counters: set[str] = set()
    stored: dict[str, int] = {}
    for node in nodes_below(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored[node.id] = stored.get(node.id, 0) + 1
        if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call)):
            continue
        looped = dotted_name(node.iter.func)
        target = node.target
        if looped == "range" and isinstance(target, ast.Name):
            counters.add(target.id)
        elif looped == "enumerate" and isinstance(target, ast.Tuple) and target.elts:
            first = target.elts[0]
            if isinstance(first, ast.Name):
                counters.add(first.id)
    parameters = {p.arg for p in parameters_of(function)}
    return {name for name in counters if stored.get(name) == 1 and name not in parameters}


def _wrapped_in(moved: ast.expr) -> Iterator[ast.expr]:
    """What a move moves with ``moved``: the tensor a slice, a placement-keeping method or a
    wrapper reads (`nn.Parameter(self.pe, requires_grad=False).to(self.device)`), with nothing
    else computed before the move."""
    yield moved
    if isinstance(moved, ast.Subscript):
        yield from _wrapped_in(moved.value)
        yield from _wrapped_in(moved.slice)  # `self.pe[self.idx]`: both read on the CPU
    elif (
        isinstance(moved, ast.Call)
        and isinstance(moved.func, ast.Attribute)
        and moved.func.attr in PLACEMENT_KEEPING_METHODS
    ):
        yield from _wrapped_in(moved.func.value)
    if (
        isinstance(moved, ast.Call)
        and (dotted_name(moved.func) or "").rpartition(".")[2] in _WRAPPERS
    ):
        wrapped = argument(moved, 0, "data")
        if wrapped is not None:
            yield from _wrapped_in(wrapped)


def _first_plain_use_in(
    forward: FunctionNode,
    attribute: str,
    names: ImportMap,
    number_items: Collection[int] = (),
) -> Optional[ast.Attribute]:
    nodes = [node for statement in forward.body for node in nodes_below(statement)]
    calls = [node for node in nodes if isinstance(node, ast.Call)]
    adapted = {
        id(moved)
        for node in calls
        if isinstance(node.func, ast.Attribute)
        and node.func.attr in _ADAPTING_METHODS
        and not converts_dtype(node, names)
        for moved in _wrapped_in(node.func.value)
    }
    handed_over = {
        id(passed)
        for node in calls
        if not (names.qualified_syntax_name(node.func) or "").startswith("torch.")
        and not _calls_a_layer(node)
        for passed in call_arguments(node)
    }
    # `self.x.size()`, and `buffer[i] = self.x` (a copy, which crosses devices), hold no harm.
    harmless = {
        id(node.value)
        for node in nodes
        if isinstance(node, ast.Attribute) and node.attr in _DEVICE_FREE_READS
    } | {
        id(node.value)
        for node in nodes
        if isinstance(node, ast.Assign)
        and all(isinstance(target, ast.Subscript) for target in node.targets)
    }
    skipped = adapted | handed_over | harmless | set(number_items)
    uses = [
        node
        for node in nodes
        if isinstance(node, ast.Attribute)
        and id(node) not in skipped
        and dotted_name(node) == f"self.{attribute}"
    ]
    return min(uses, key=lambda node: (node.lineno, node.col_offset), default=None)
