from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Optional

from devlint.analysis.advice import device_in_scope, move_advice
from devlint.analysis.contexts import CallFinding
from devlint.analysis.imported import Feed, Mix, fed_modules, mixed_arguments
from devlint.analysis.operations import (
    Citations,
    cpu_factory,
    find_mismatch,
    first_cpu_operand,
    first_cpu_sequence,
    iteration_value,
    operands,
)
from devlint.analysis.prefilter import CPU_TENSOR_SOURCE, DEVICE_OR_INPUT_SOURCE
from devlint.analysis.syntax import call_arguments, dotted_name
from devlint.analysis.syntax_screen import SyntaxFacts
from devlint.analysis.torch_api import (
    FUNCTIONAL_LOSSES,
    looks_like_loss,
    loss_operands,
    takes_cpu_targets,
)
from devlint.analysis.values import (
    UNKNOWN,
    Kind,
    Value,
    Where,
    cannot_meet,
    follows_input,
    made_by_factory,
)
from devlint.rules.base import FlowRule, Invalid

if TYPE_CHECKING:
    from devlint.flow_context import FlowContext


class MissingDeviceMove(FlowRule):
    """
    ## What it does
    Flags a CPU tensor reaching something on another device: the input of a
    module moved to a device; the labels or targets of a loss whose other
    argument is on a device; a loss built with a CPU `weight` while its inputs
    are on a device; a tensor created inside `forward` without `device=` and
    combined with the module's input, or with a tensor parameter of any
    function (which lives on its caller's device). Such a tensor is reported at
    the factory that made it, where `device=` goes, citing where it meets the
    input. Calls carry placements: a helper of the file, or a method of the
    class called as `self.helper(...)`, is analysed with the values its call
    passes, so a CPU tensor the caller made (`mask = torch.ones(...)` in
    `forward`) that the helper combines with the module's input, or hands to a
    module on a device, is reported in the caller, at its factory or argument.
    A function of another project file is read from its summary: which of its
    parameters one operation combines (`blend(x, torch.randn(4))`, where
    `blend` adds them) and which parameter's device its result stays on. A
    tuple or list whose every tensor is on the CPU counts as a CPU input (an
    LSTM's `(h0, c0)`), and a helper method of the file's module class called
    on an instance (`model.init_hidden(n)`) is analysed like a helper function.
    A tensor parameter says nothing of the caller's device where the code
    prepares CPU data: a dataset's methods, a collate function, or a helper
    whose every call in the file moves what it returns to a device
    (`inputs = self.mask_tokens(inputs)`, then `inputs = inputs.to(device)`),
    nor where every call in the project's other files passes it moved to the
    CPU (`renorm(img.cpu())`, for a function its own file never calls). A
    method's callers are all in its file when it is private, static, or called
    by no other file of the project: their CPU arguments are its parameters'.

    In a module's `forward` and the methods it calls, its registered buffers and
    parameters, its torch layers (`self.proj`) and their `weight` and `bias`,
    and the parameters of the modules it holds (`self.crf.transitions`) live on
    the module's device. `forward`'s inputs do too, except those the code shows
    to be numbers: annotated `int`, `float` or `bool`, a number by default, or
    used as a size (`torch.arange(seq_len)`, `range(n)`). The module's other
    methods (a VAE's `sample`) see its layers on its device too, in a file that
    moves something to a device and never moves a module back to the CPU;
    not the methods `__init__` runs, while the module is still on the CPU.
    `self(x)`, or `self.pos(x)` for a module of a class of the file, runs that
    `forward` with what the call passes. A LightningModule needs no move written:
    its Trainer moves the module, and each batch, to the accelerator it picks.
    So its methods run on the module's device (but `setup`, `prepare_data`, the
    `*_dataloader` and `configure_*` hooks, and the ones that see the batch
    before its transfer), and the batch of `training_step`, `validation_step`,
    `test_step` and `predict_step` is there too: a target made there without
    `device=self.device` fails on the first GPU run. In the same way, accelerate's
    `accelerator.prepare(model, loader)` and Lightning Fabric's `fabric.setup(model)`
    and `fabric.setup_dataloaders(loader)` put the model (the module itself, as
    `Module.to` does), and the loader's batches, on the device they chose (not with `Accelerator(cpu=True)`,
    `device_placement=False` or `Fabric(accelerator="cpu")`; with
    `Accelerator(cpu=args.cpu)`, only on some runs, which is no evidence).

    ## Why is this bad?
    The forgotten `.to(device)`: the script runs on the author's CPU, then fails
    on the first GPU run with "Expected all tensors to be on the same device" or
    "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor)
    should be the same".

    The rule follows each tensor from where it is made (a factory without
    `device=`, a `DataLoader`, `torch.load(..., map_location="cpu")`, `.cpu()`)
    through assignments, unpacking, loops and branches, and reports only when
    the CPU placement is certain on the path to the use.

    ## Example
    ```python
    model = Net().to(device)
    for images, labels in loader:
        images = images.to(device)
        loss = criterion(model(images), labels)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        loss = criterion(model(images), labels)
    ```

    ## Fix safety
    No automatic fix yet.
    """

    code = "DEV005"
    name = "missing-device-move"
    summary = "CPU tensor reaching a module, loss or input on another device"
    trigger_tokens = ("torch",)
    required_patterns = (DEVICE_OR_INPUT_SOURCE, CPU_TENSOR_SOURCE)

    VALID = (
        # `torch.tensor(t)` copies `t` where it is: an input may be a tensor on the device
        "import torch\nfrom torch import nn\nclass Attention(nn.Module):\n"
        "    def forward(self, scores, mask, distances):\n"
        "        distances = torch.tensor(distances).masked_fill(mask == 0, 1e9)\n"
        "        return scores + distances",
        # every caller in sight passes CPU tensors or values it does not know: `model` is not
        # on a device by contract beside the caller's CPU `factors`
        "import torch\nclass Planner(Base):\n    def __init__(self) -> None:\n"
        "        self.best = 1e99\n    @staticmethod\n    def plan(tables):\n"
        "        factors = torch.tensor([t.factor for t in tables])\n"
        "        return Planner.allocate(model=sizes, factors=factors)\n    @staticmethod\n"
        "    def to_bytes(model: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:\n"
        "        return model[:, 0] * factors + model[:, 1]\n    @staticmethod\n"
        "    def allocate(model: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:\n"
        "        return Planner.to_bytes(model, factors)",
        # `torch.Tensor(t)` of a tensor aliases it, on its device
        "import torch\ndef scales(layer_ids: torch.Tensor, n: int) -> torch.Tensor:\n"
        "    loss_scales = torch.Tensor(layer_ids + 1)\n"
        "    return loss_scales * torch.where(layer_ids < n - 1, 2.0, 1.0)",
        # the subclass sets the base's layer again, to a function
        "import torch\nfrom torch import nn\nclass Base(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.layer = nn.Linear(32, 2)\n"
        "    def forward(self, x):\n        return self.layer(x)\n"
        "class Doubled(Base):\n    def __init__(self):\n        super().__init__()\n"
        "        self.layer = lambda t: t * 2\n"
        "    def forward(self, x):\n        return self.layer(torch.ones(32)) + x",
        # a placeholder of no elements for a weight the call does not use
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
        "class Attention(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.q = nn.Linear(8, 8)\n    def forward(self, query):\n"
        "        return F.multi_head_attention_forward(query, query, query, 8, 2,\n"
        "            torch.empty([0]), self.q.bias, None, None, False, 0.0, self.q.weight,\n"
        "            self.q.bias, use_separate_proj_weight=True, q_proj_weight=self.q.weight,\n"
        "            k_proj_weight=self.q.weight, v_proj_weight=self.q.weight)",
        # a static method whose every call in the file (`Post.scale(...)`) passes CPU tensors
        "import torch\ndef predict(model, image):\n    out = model(image.to('cuda'))\n"
        "    return out.cpu()\nclass Post:\n    def run(self, model, image):\n"
        "        return Post.scale(predict(model, image))\n    @staticmethod\n"
        "    def scale(boxes: torch.Tensor):\n        return boxes * torch.Tensor([1.0, 2.0])",
        # a script that places nothing on a device (an optimizer reads `.parameters()` anyway)
        "import torch\nfrom torch import nn\ncriterion = nn.BCEWithLogitsLoss()\n"
        "def real_loss(out):\n    labels = torch.ones(out.size(0))\n"
        "    return criterion(out.squeeze(), labels)\n"
        "net = nn.Linear(3, 1)\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "loss = real_loss(net(torch.randn(4, 3)))",
        # an `Accelerator` that keeps to the CPU, or places nothing itself
        "import torch\nfrom torch import nn\nfrom accelerate import Accelerator\n"
        "accelerator = Accelerator(cpu=True)\nmodel = accelerator.prepare(nn.Linear(4, 2))\n"
        "out = model(torch.randn(3, 4))",
        "import torch\nfrom torch import nn\nfrom accelerate import Accelerator\n"
        "accelerator = Accelerator(device_placement=False)\n"
        "model = accelerator.prepare(nn.Linear(4, 2))\nout = model(torch.randn(3, 4))",
        # `prepare_model(..., device_placement=False)`: this call places nothing
        "import torch\nfrom torch import nn\nfrom accelerate import Accelerator\n"
        "accelerator = Accelerator()\n"
        "model = accelerator.prepare_model(nn.Linear(4, 2), device_placement=False)\n"
        "out = model(torch.randn(3, 4))",
        # the CPU on some runs (`--cpu`): a device only then, which is no evidence of a mismatch
        "import torch\nfrom torch import nn\nfrom accelerate import Accelerator\n"
        "accelerator = Accelerator(cpu=args.cpu)\nmodel = accelerator.prepare(nn.Linear(4, 2))\n"
        "out = model(torch.randn(3, 4))",
        "import torch\nfrom torch import nn\nfrom lightning.fabric import Fabric\n"
        "fabric = Fabric(accelerator='cpu')\nmodel = fabric.setup(nn.Linear(4, 2))\n"
        "out = model(torch.randn(3, 4))",
        "import torch\nfrom torch import nn\nfrom lightning.fabric import Fabric\n"
        "fabric = Fabric(accelerator='cpu')\nmodel = nn.Linear(4, 2)\nfabric.setup(model)\n"
        "out = model(torch.randn(3, 4))",
        # a LightningModule's hooks that run before the Trainer moves it, or on the CPU batch
        "import torch\nimport pytorch_lightning as pl\nfrom torch import nn\n"
        "class Lit(pl.LightningModule):\n    def __init__(self):\n        super().__init__()\n"
        "        self.net = nn.Linear(4, 2)\n"
        "    def on_before_batch_transfer(self, batch, i):\n"
        "        return batch + self.net(torch.zeros(1, 4)).sum()",
        # a LightningModule's step creating its tensors where the module is
        "import torch\nimport lightning as L\nfrom torch import nn\n"
        "class Lit(L.LightningModule):\n    def __init__(self):\n        super().__init__()\n"
        "        self.net = nn.Linear(4, 2)\n    def training_step(self, batch, i):\n"
        "        x, y = batch\n        noise = torch.randn(x.shape, device=self.device)\n"
        "        return self.net(x + noise).sum()",
        # an integer index may leave a 0-dim tensor, which mixes with any device
        "import torch\ndef first(value):\n    return value[0]\n"
        "def shift(lengths: torch.Tensor, n):\n    return lengths + first(torch.arange(n))",
        # CTC's targets may stay on the CPU (cuDNN wants them there), in a helper or not
        "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
        "def score(net, x, targets, lengths, target_lengths):\n"
        "    return F.ctc_loss(net(x).log_softmax(-1), targets, lengths, target_lengths)\n"
        "net = nn.Linear(3, 5).to(device)\ntargets = torch.randint(1, 5, (2, 4))\n"
        "loss = score(net, torch.randn(6, 2, 3).to(device), targets, [6, 6], [4, 4])",
        "import torch\nfrom torch import nn\nctc = nn.CTCLoss()\n"
        "net = nn.Linear(3, 5).to(device)\ntargets = torch.randint(1, 5, (2, 4))\n"
        "out = net(torch.randn(6, 2, 3).to(device)).log_softmax(-1)\n"
        "loss = ctc(out, targets, [6, 6], [4, 4])",
        # the helper leaves the first iteration's value alone: its analysis cannot see `t == 0`
        "import torch\ndef step(prev, cur, t):\n    if t == 0:\n        return cur\n"
        "    return prev + cur\ndef smooth(x: torch.Tensor, n):\n    prev = torch.zeros(3)\n"
        "    for t in range(n):\n        cur = x[t].to(x.device)\n"
        "        prev = step(prev, cur, t)\n    return prev",
        # each iteration moves what the loop passes to the helper, the first one included
        "import torch\nimport torch.nn.functional as F\n"
        "def convolve(signal, kernel):\n    return F.conv1d(signal, kernel)\n"
        "def drop(waves: torch.Tensor, freqs):\n    drop_filter = torch.zeros(1, 9, 1)\n"
        "    for freq in freqs:\n        drop_filter = drop_filter.to(waves.device)\n"
        "        kernel = torch.ones(1, 1, 9).to(waves.device)\n"
        "        drop_filter = convolve(drop_filter, kernel)\n"
        "    return convolve(waves, drop_filter)",
        # an unpacked item nothing proves a tensor (a number, perhaps), or bound again
        "import torch\ndef shift(pair):\n    a, b = pair\n    return a + torch.zeros(3)\n"
        "def main(x):\n    return x.to('cuda:0')",
        "import torch\ndef shift(pair):\n    a, b = pair\n    a = a.numpy()\n"
        "    return a.size(0) + torch.zeros(3)\ndef main(x):\n    return x.to('cuda:0')",
        # the annotation says what the items are
        "import numpy as np\nimport torch\nfrom typing import Tuple\n"
        "def shift(pair: Tuple[np.ndarray, int]):\n    a, b = pair\n"
        "    return a.unsqueeze(0) + torch.zeros(3)\ndef main(x):\n    return x.to('cuda:0')",
        # a dataset's items are CPU data by design
        "import torch\nclass Pairs(torch.utils.data.Dataset):\n    def __getitem__(self, pair):\n"
        "        a, b = pair\n        return a.unsqueeze(0) + torch.zeros(3)\n"
        "def main(x):\n    return x.to('cuda:0')",
        # a helper only a method calls, with data it moved to the CPU, takes the method's word
        "import torch\nfrom torch import nn\ndef peaks(hm: torch.Tensor):\n"
        "    offsets = torch.FloatTensor([0.25, 0.25])\n"
        "    return hm.flatten(1)[:, :2] + offsets\n"
        "class Detector(nn.Module):\n    def forward(self, x):\n        return x\n"
        "    def landmarks(self, x):\n        return peaks(self(x).cpu())",
        # the None branch leaves a caller's mask alone: it holds what the caller passed
        "import torch\ndevice = 'cuda:0'\ndef apply(x, mask=None):\n"
        "    if mask is not None:\n        mask = mask.to(x.device)\n    return x * mask\n"
        "def main():\n    return apply(torch.randn(3, device=device), torch.ones(3))",
        # a test of a parameter typed `Tensor` alone is a defensive check: no evidence that
        # callers pass None
        "import torch\nfrom torch import nn\nclass Attention(nn.Module):\n"
        "    def forward(self, hidden: torch.Tensor, mask: torch.Tensor):\n"
        "        if mask is None:\n            mask = torch.ones(hidden.shape[:2])\n"
        "        return hidden * mask.unsqueeze(-1)",
        # an array's `size` is a number: it proves no tensor
        "import torch\ndef noisy(x):\n    return x + torch.randn(x.size, 1)\n"
        "model = torch.nn.Linear(2, 2).to('cuda:0')",
        # only a parameter's `is None` test says its callers pass None; a cache's lookup may
        # always find the tensor
        "import torch\nfrom torch import nn\nclass Encoder(nn.Module):\n"
        "    def forward(self, tokens):\n        mask = self.cache.get('mask')\n"
        "        if mask is None:\n            mask = torch.ones(tokens.shape[1])\n"
        "        return tokens * mask",
        "import torch\nfrom torch import nn\n"
        "class Tagger(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.lstm = nn.LSTM(8, 16)\n"
        "    def init_hidden(self, n, device):\n"
        "        return torch.zeros(1, n, 16, device=device), torch.zeros(1, n, 16, device=device)\n"
        "    def forward(self, x, hidden):\n        return self.lstm(x, hidden)\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "model = Tagger().to(device)\n"
        "hidden = model.init_hidden(4, device)\nout = model(torch.randn(5, 4, 8).to(device), hidden)",
        # a helper of the file moves the batch's tensors in place
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
        "def to_gpu(batch):\n    batch['x'] = batch['x'].cuda()\n"
        "model = nn.Linear(3, 2).cuda()\nfor batch in DataLoader(ds):\n"
        "    to_gpu(batch)\n    model(batch['x'])",
        # ... by keys drawn from the batch itself
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
        "def to_gpu(batch):\n    for key in batch:\n        batch[key] = batch[key].cuda()\n"
        "model = nn.Linear(3, 2).cuda()\nfor batch in DataLoader(ds):\n"
        "    to_gpu(batch)\n    model(batch['x'])",
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
        "def to_gpu(batch):\n    for i, _ in enumerate(batch):\n        batch[i] = batch[i].cuda()\n"
        "model = nn.Linear(3, 2).cuda()\nfor batch in DataLoader(ds):\n"
        "    to_gpu(batch)\n    model(batch[0])",
        # ... or by any key, rewriting each item from itself
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
        "def to_gpu(batch, keys=('x', 'y')):\n    for key in keys:\n"
        "        batch[key] = batch[key].cuda()\n"
        "model = nn.Linear(3, 2).cuda()\nfor batch in DataLoader(ds):\n"
        "    to_gpu(batch)\n    model(batch['x'])",
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
        "def to_gpu(batch):\n    for key in list(batch.keys()):\n"
        "        batch[key] = torch.as_tensor(batch[key]).cuda()\n"
        "model = nn.Linear(3, 2).cuda()\nfor batch in DataLoader(ds):\n"
        "    to_gpu(batch)\n    model(batch['x'])",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2).to(device)\n"
        "x = torch.randn(4, 3).to(device)\nout = model(x)",
        # the helper moves what it is passed; the caller moves it; the accumulator is rebound
        "import torch\nfrom torch import nn\ndef score(net, x):\n    return net(x.to(device))\n"
        "net = nn.Linear(3, 2).to(device)\ns = score(net, torch.randn(4, 3))",
        "import torch\nfrom torch import nn\ndef score(net, x):\n    return net(x)\n"
        "net = nn.Linear(3, 2).to(device)\ns = score(net, torch.randn(4, 3).to(device))",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def penalty(self):\n        total = torch.zeros(())\n"
        "        for p in self.parameters():\n            total = total + p.abs().sum()\n"
        "        return total",
        # numbers among forward's inputs, by annotation, default or use as a size
        "import torch\nfrom torch import nn\nclass Windows(nn.Module):\n"
        "    def forward(self, x, H: int, W, scale=0.5):\n"
        "        rows = torch.arange(H) * W * scale\n        mask = torch.zeros(H, W)\n"
        "        return x, rows, mask",
        # pyg's `Data.to` moves its attributes
        "import torch\nfrom torch import nn\ndata = Data()\ndata.x = torch.randn(4, 3)\n"
        "data = data.to(device)\nmodel = nn.Linear(3, 2).to(device)\nout = model(data.x)",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2)\nout = model(torch.randn(4, 3))",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2).to(device)\n"
        "out = model(torch.randn(4, 3, device=device))",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2)\nmodel.to(device)\n"
        "x = torch.randn(4, 3)\nx = x.to(device)\nout = model(x)",
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
        "model = nn.Linear(3, 2).to(device)\ncriterion = nn.CrossEntropyLoss()\n"
        "for x, y in DataLoader(ds):\n    x, y = x.to(device), y.to(device)\n"
        "    loss = criterion(model(x), y)",
        "import torch\nfrom torch import nn\nmodel = nn.DataParallel(nn.Linear(3, 2).cuda())\n"
        "out = model(torch.randn(4, 3))",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x + torch.zeros_like(x)",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        mask = torch.ones(3, device=x.device)\n        return x * mask",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x * torch.tensor(0.5)",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        pos = torch.arange(10).to(x.device)\n        return x + pos",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x + x.new_zeros(3)",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2).to(device)\n"
        "if use_gpu:\n    x = torch.randn(4, 3).to(device)\nelse:\n    x = torch.randn(4, 3)\n"
        "out = model(x)",
        "import torch\nfrom torch import nn\nw = torch.ones(2)\n"
        "criterion = nn.CrossEntropyLoss(weight=w).to(device)\n"
        "out = nn.Linear(3, 2).to(device)(torch.randn(4, 3).to(device))\nloss = criterion(out, y)",
        # a tensor parameter meets tensors made on its device, a 0-dim one, numpy data, CPU code
        "import torch\ndef f(x: torch.Tensor, n):\n    return x + torch.arange(n, device=x.device)",
        "import torch\ndef f(x: torch.Tensor):\n    return x * torch.tensor(2.0)",
        "import torch\ndef f(x: torch.Tensor, a):\n    return x + torch.from_numpy(a)",
        "import torch\ndef f(x: torch.Tensor):\n    return x.cpu() + torch.zeros(3)",
        # a file that places nothing on a device is CPU-side code (a data pipeline's resizer):
        # a parameter used as a tensor there is what its callers made on the CPU
        "import torch\ndef shift(x, n):\n    idx = torch.arange(n)\n    return x.unsqueeze(0) + idx",
        "import torch\ndef collate(x: torch.Tensor):\n    return x + torch.zeros(3)",
        "import torch\nclass Data(torch.utils.data.Dataset):\n"
        "    def get(self, x: torch.Tensor):\n        return x + torch.zeros(3)",
        # a parameter moves with the module that holds it, whatever it was made on
        "import torch\nclass Policy(Base):\n    def __init__(self):\n"
        "        self.support = torch.nn.Parameter(torch.linspace(0, 1, 5))\n"
        "    def q(self, logits: torch.Tensor):\n        return logits * self.support",
        # a cache whose items are replaced before use
        "import torch\nclass Memory:\n    def __init__(self):\n"
        "        self.encs = {k: torch.zeros(4, 3) for k in range(2)}\n"
        "    def add(self, k, e):\n        self.encs[k] = e\n"
        "    def score(self, q: torch.Tensor, k):\n        return q @ self.encs[k].t()",
        "import torch\nclass DataCollatorForMasking:\n"
        "    def mask(self, labels: torch.Tensor):\n"
        "        return torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & labels",
        "import torch\nfrom torch import nn\nclass Encoder(nn.Module):\n"
        "    def forward(self, tokens, mask=None):\n        if mask is None:\n"
        "            mask = torch.ones(tokens.shape[:2], device=tokens.device).bool()\n"
        "        return tokens * mask.unsqueeze(-1)",
        "import torch\ndef f(x: torch.Tensor):\n    return x.expand_as(torch.zeros(3, 3))",
        # a name proves nothing: `n` may be a number
        "import torch\ndef f(n):\n    return n + torch.zeros(3)",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.act = nn.ReLU()\n"
        "    def forward(self, x):\n        return self.act(torch.ones(3))",
        # the method moves what its caller made on the CPU before combining it
        "import torch\nfrom torch import nn\nclass CRF(nn.Module):\n"
        "    def _score(self, logits, mask):\n        return logits * mask.to(logits.device)\n"
        "    def forward(self, inputs):\n        mask = torch.ones(inputs.shape)\n"
        "        return self._score(inputs, mask)",
        # a buffer registered as None is no tensor; one reassigned later holds what it is given
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.register_buffer('mask', None)\n"
        "    def forward(self, n):\n        return torch.ones(n) * self.mask",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.register_buffer('freq', torch.ones(4))\n"
        "    def reset(self):\n        self.freq = torch.zeros(4)\n"
        "    def forward(self, n):\n        return torch.arange(n)[:, None] * self.freq",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.register_buffer('freq', torch.ones(4))\n"
        "    def forward(self, n):\n"
        "        return torch.arange(n, device=self.freq.device)[:, None] * self.freq",
        # the helper combines the caller's CPU tensors with each other only
        "import torch\ndef scale(x: torch.Tensor, w):\n    return x * w\n"
        "def run():\n    return scale(torch.ones(3), torch.ones(3))",
        # every call of the helper moves what it returns: it works on CPU data
        "import torch\nclass Trainer:\n    def mask(self, inputs: torch.Tensor):\n"
        "        probability = torch.full(inputs.shape, 0.15)\n"
        "        return inputs.masked_fill(probability > 0.5, 0)\n"
        "    def train(self, batches):\n        for data in batches:\n"
        "            inputs = self.mask(self.tokenize(data))\n"
        "            inputs = inputs.to(self.device)",
        # ... after the block it is called in
        "import torch\ndef fliplr(img: torch.Tensor):\n"
        "    inv = torch.arange(img.size(3) - 1, -1, -1).long()\n"
        "    return img.index_select(3, inv)\ndef extract(model, loader):\n"
        "    for img in loader:\n        for i in range(2):\n            if i == 1:\n"
        "                img = fliplr(img)\n            out = model(img.cuda())",
        # a method `__init__` runs feeds its layers while the module is on the CPU
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3)\n"
        "        self.flat = self._flat_size((3, 32, 32))\n"
        "    def _flat_size(self, shape):\n        return self.conv(torch.zeros(1, *shape)).numel()\n"
        "model = Net().to('cuda')",
        # `self(x)` runs `forward`, which may move its input itself
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n"
        "    def forward(self, x):\n        return self.fc(x.to(self.fc.weight.device))\n"
        "    def check(self):\n        return self(torch.zeros(1, 4))\nmodel = Net().to('cuda')",
        # `__init__` hands `self` to a helper, which may call any method on the CPU
        "import torch\nfrom torch import nn\ndef flat(net, shape):\n    return net.probe(shape)\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n        self.n = flat(self, (3, 8, 8))\n"
        "    def probe(self, shape):\n        return self.conv(torch.zeros(1, *shape)).numel()\n"
        "model = Net().to('cuda')",
        # a file moving a module back to the CPU, or only to a dtype, keeps no method on a device
        "import torch\nfrom torch import nn\nclass Policy(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n"
        "    def act(self, obs):\n        return self.fc(torch.from_numpy(obs).float())\n"
        "policy = Policy().to('cpu')",
        # a file that puts nothing on a device trains on the CPU by design
        "import torch\nfrom torch import nn\nclass PPO(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc1 = nn.Linear(4, 2)\n"
        "    def train_net(self, rows):\n        return self.fc1(torch.tensor(rows))",
        # `torch.tensor` of a number is a 0-dim tensor, which mixes with any device
        "import torch\nfrom torch import nn\nclass Scale(nn.Module):\n"
        "    def __init__(self, scale: float):\n        super().__init__()\n"
        "        self.lin = nn.Linear(4, 4)\n        self.scale = scale\n"
        "    def forward(self, x):\n        return self.lin(x) * torch.tensor(self.scale)",
        # a module of the file's own class may move what it is given
        "import torch\nfrom torch import nn\nclass Pos(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.emb = nn.Embedding(64, 8)\n"
        "    def forward(self, steps):\n        return self.emb(steps.to(self.emb.weight.device))\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.pos = Pos()\n    def forward(self, x):\n"
        "        return x + self.pos(torch.arange(x.size(1)))",
    )

    INVALID = (
        # a branch a call's `None` default never takes is no early exit of the helper
        Invalid(
            "import torch\ndef add(total, p, weight=None):\n    if weight is not None:\n"
            "        p = p * weight\n    return total + p\ndef accumulate(params):\n"
            "    total = torch.zeros(3)\n    for p in params:\n"
            "        total = add(total, p.to('cuda'))\n    return total",
            7,
            13,
            "but `add`, called at line 9, combines it with a tensor on `cuda`",
        ),
        # the caller passes a device tensor beside its CPU one
        Invalid(
            "import torch\nclass Planner(Base):\n    @staticmethod\n    def plan(tables):\n"
            "        factors = torch.tensor([t.factor for t in tables])\n"
            "        model = torch.ones(len(tables), 2, device='cuda')\n"
            "        return Planner.allocate(model=model, factors=factors)\n    @staticmethod\n"
            "    def to_bytes(model: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:\n"
            "        return model[:, 0] * factors + model[:, 1]\n    @staticmethod\n"
            "    def allocate(model: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:\n"
            "        return Planner.to_bytes(model, factors)",
            5,
            19,
            "combines it with a tensor on `cuda`",
        ),
        # a layer its base's `__init__` builds, run by `super().__init__()`
        Invalid(
            "import torch\nfrom torch import nn\nclass Base(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.layer = nn.Linear(32, 2)\n"
            "    def forward(self, x):\n        return self.layer(x)\n"
            "class Scaled(Base):\n    def __init__(self, scale):\n        super().__init__()\n"
            "        self.scale = scale\n"
            "    def forward(self, x):\n        return self.layer(torch.ones(32)) * self.scale + x",
            14,
            27,
            "`self.layer` is a layer of the module",
        ),
        # ... or inherited with no `__init__`, through a method of the base, in a file that
        # moves the module
        Invalid(
            "import torch\nfrom torch import nn\nclass Base(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.layer = nn.Linear(32, 2)\n"
            "    def forward(self, x):\n        return self.layer(x)\n"
            "    def step(self, x):\n        return self(x).sum()\n"
            "class Probe(Base):\n    def check(self):\n        return self.step(torch.ones(32))\n"
            "probe = Probe().to('cuda')",
            13,
            26,
            "`Base.forward` passes it to `self.layer` at line 8",
        ),
        # a static method its call in the file gives tensors on a device still fires
        Invalid(
            "import torch\nclass Post:\n    @staticmethod\n    def scale(boxes: torch.Tensor):\n"
            "        return boxes * torch.Tensor([1.0, 2.0])\n"
            "Post.scale(torch.rand(3, 2).cuda())",
            5,
            24,
        ),
        # a helper's list index keeps a dimension: no 0-dim tensor, which would mix legally
        Invalid(
            "import torch\ndef expand(value, n):\n    dims = [None] * n\n    dims[-1] = ...\n"
            "    return value[dims]\ndef mask_of(lengths: torch.Tensor, n):\n"
            "    steps = expand(torch.arange(n), 2)\n    return steps < lengths.unsqueeze(1)",
            7,
            20,
            "`torch.arange(n)` creates a tensor on the CPU that is combined with "
            "`lengths.unsqueeze(1)` at line 8",
        ),
        # ... and where its `forward` hands it to a layer, the call is where it goes wrong
        Invalid(
            "import torch\nfrom torch import nn\nclass Pos(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.emb = nn.Embedding(64, 8)\n"
            "    def forward(self, steps):\n        return self.emb(steps)\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.pos = Pos()\n    def forward(self, x):\n"
            "        return x + self.pos(torch.arange(x.size(1)))",
            14,
            29,
            "`Pos.forward` passes it to `self.emb` at line 8",
        ),
        # ... but of a list it has a dimension: `self.freqs` is one, `__init__` shows it
        Invalid(
            "import torch\nfrom torch import nn\nclass Scorer(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.lin = nn.Linear(4, 4)\n        self.freqs = [0.5, 1.0, 2.0, 4.0]\n"
            "    def forward(self, x):\n        w = torch.tensor(self.freqs) * 2.0\n"
            "        return self.lin(x) + w.sqrt()",
            9,
            13,
        ),
        # ... and so is a parameter annotated as a list of numbers
        Invalid(
            "import torch\nfrom typing import List\n"
            "def weigh(scores: torch.Tensor, freqs: List[float]):\n"
            "    return scores + torch.tensor(freqs)",
            4,
            21,
        ),
        # a method of a module other than `forward` runs where the module is
        Invalid(
            "import torch\nfrom torch import nn\nclass VAE(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.decoder = nn.Linear(8, 64)\n"
            "    def sample(self, n):\n        z = torch.randn(n, 8)\n        return self.decoder(z)\n"
            "model = VAE().to('cuda')",
            9,
            29,
            "`self.decoder` is a layer of the module",
        ),
        # ... and so does a method `forward` calls, with what `forward` passes it
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.layer = nn.Linear(32, 2)\n"
            "    def step(self, x):\n        return self.layer(x)\n"
            "    def forward(self, x):\n        return self.step(torch.ones(32)) + x",
            10,
            26,
            "`step` passes it to `self.layer` at line 8, which is a layer of the module",
        ),
        # the same helper, also kept to run on the module's output
        Invalid(
            "import torch\nfrom torch import nn\ndef peaks(hm: torch.Tensor):\n"
            "    offsets = torch.FloatTensor([0.25, 0.25])\n"
            "    return hm.flatten(1)[:, :2] + offsets\n"
            "class Detector(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.post = peaks\n"
            "    def forward(self, x):\n        return self.post(x)\n"
            "    def landmarks(self, x):\n        return peaks(self(x).cpu())",
            4,
            15,
        ),
        # the same helper, given the module's output where it is
        Invalid(
            "import torch\nfrom torch import nn\ndef peaks(hm: torch.Tensor):\n"
            "    offsets = torch.FloatTensor([0.25, 0.25])\n"
            "    return hm.flatten(1)[:, :2] + offsets\n"
            "class Detector(nn.Module):\n    def forward(self, x):\n        return x\n"
            "    def landmarks(self, x):\n        return peaks(self(x))",
            4,
            15,
            "on the caller's device (parameter `hm`)",
        ),
        # a cast is no move: what the helper returns stays where it was made
        Invalid(
            "import torch\ndef add_noise(x: torch.Tensor):\n"
            "    return x + torch.randn(x.shape)\n"
            "def run(h):\n    return add_noise(h).to(h.dtype)",
            3,
            16,
            "parameter `x`",
        ),
        # ... not where one call uses it as it is
        Invalid(
            "import torch\nclass Trainer:\n    def mask(self, inputs: torch.Tensor):\n"
            "        probability = torch.full(inputs.shape, 0.15)\n"
            "        return inputs.masked_fill(probability > 0.5, 0)\n"
            "    def train(self, batches):\n        for data in batches:\n"
            "            inputs = self.mask(self.tokenize(data))\n"
            "            inputs = inputs.to(self.device)\n"
            "    def predict(self, inputs):\n        return self.model(self.mask(inputs))",
            4,
            23,
            "parameter `inputs`",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n"
            "class Tagger(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.lstm = nn.LSTM(8, 16)\n"
            "    def init_hidden(self, n):\n"
            "        return torch.zeros(1, n, 16), torch.zeros(1, n, 16)\n"
            "    def forward(self, x, hidden):\n        return self.lstm(x, hidden)\n"
            "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "model = Tagger().to(device)\n"
            "hidden = model.init_hidden(4)\nout = model(torch.randn(5, 4, 8).to(device), hidden)",
            14,
            46,
            "`hidden` holds tensors on the CPU (created on the CPU by `torch.zeros(...)` at line 8)",
        ),
        Invalid(
            # a layer's weight moves with the module
            "import torch\nfrom torch import nn\nclass Tied(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.proj = nn.Linear(3, 3)\n"
            "    def forward(self, x):\n        w = self.proj.weight\n"
            "        return x @ (torch.eye(3) + w)",
            9,
            21,
            "(`self.proj.weight`, a parameter of the module)",
        ),
        Invalid(
            # the helper writes another container's items: the batch stays where it was
            "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
            "def log(batch, stats):\n    for key in batch:\n"
            "        stats[key] = batch[key].float().mean()\n"
            "model = nn.Linear(3, 2).cuda()\nfor batch in DataLoader(ds):\n"
            "    log(batch, {})\n    model(batch['x'])",
            10,
            11,
            "`batch['x']` is on the CPU (from the DataLoader at line 8)",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
            "model = nn.Linear(3, 2)\nmodel.to(device)\nloader = DataLoader(ds)\n"
            "for x, y in loader:\n    out = model(x)",
            8,
            17,
            "`x` is on the CPU (from the DataLoader at line 6) but `model` was moved to "
            "`device` at line 5",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n"
            "model = nn.Linear(3, 2).to(device)\ncriterion = nn.CrossEntropyLoss()\n"
            "for x, labels in DataLoader(ds):\n    x = x.to(device)\n"
            "    loss = criterion(model(x), labels)",
            8,
            32,
            "`labels` is on the CPU (from the DataLoader at line 6) but `model(x)` is on `device`",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nw = torch.tensor([1.0, 2.0])\n"
            "criterion = nn.CrossEntropyLoss(weight=w)\nmodel = nn.Linear(3, 2).to(device)\n"
            "out = model(torch.randn(4, 3).to(device))\nloss = criterion(out, y)",
            7,
            8,
            "holds a `weight` on the CPU",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n        mask = torch.ones(x.shape)\n        return x * mask",
            5,
            16,
            "creates a tensor on the CPU inside `forward` that is combined with `x` at line 6",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\n"
            "def train(model, loader, device):\n    model.to(device)\n"
            "    for data, target in loader:\n        data = data.to(device)\n"
            "        loss = F.nll_loss(model(data), target)",
            7,
            40,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Trainer:\n"
            "    def __init__(self, loader):\n        self.model = nn.Linear(3, 2).cuda()\n"
            "        self.loader = loader\n"
            "    def run(self):\n        for x, y in self.loader:\n            self.model(x)",
            9,
            24,
        ),
        Invalid(
            "import torch\nfrom torch import Tensor\n"
            "def lengths_to_mask(lengths: Tensor, n: int):\n"
            "    return torch.arange(n) < lengths[:, None]",
            4,
            12,
            "combined with `lengths[:, None]`, which is on the caller's device (parameter "
            "`lengths`)",
        ),
        Invalid(
            "import torch\ndef place(t, device):\n    return t.to(device)\n"
            "def shift(x, n):\n    idx = torch.arange(n)\n    return x.unsqueeze(0) + idx",
            5,
            11,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.step_embedding = nn.Embedding(10, 4)\n"
            "    def forward(self, x):\n        steps = torch.arange(x.size(1))\n"
            "        return x + self.step_embedding(steps)",
            9,
            40,
            "`self.step_embedding` is a layer of the module",
        ),
        # the path callers take when they omit `mask`
        Invalid(
            "import torch\nfrom torch import nn\nclass Encoder(nn.Module):\n"
            "    def forward(self, tokens, mask=None):\n        if mask is None:\n"
            "            mask = torch.ones(tokens.shape[0], tokens.shape[1]).bool()\n"
            "        return tokens * mask.unsqueeze(-1)",
            6,
            20,
        ),
        # the items of a caller's tuple live where the caller keeps its tensors
        Invalid(
            "import torch\ndef decode(features_tuple):\n    features, lengths = features_tuple\n"
            "    scores = torch.zeros(features.size(0), 5)\n    return features + scores\n"
            "def main(x):\n    return x.to('cuda:0')",
            4,
            14,
            "an item of parameter `features_tuple`",
        ),
        # `x.size(0)` is a tensor's method (an array's `size` is a number)
        Invalid(
            "import torch\ndef noisy(x):\n    return x + torch.randn(x.size(0), 1)\n"
            "def main():\n    print(noisy(torch.ones(4, 1).to('cuda:0')))",
            3,
            16,
            "parameter `x`",
        ),
        # the `else` of `is not None`, on a parameter typed to take None (no default)
        Invalid(
            "import torch\nfrom torch import nn\nclass Encoder(nn.Module):\n"
            "    def forward(self, tokens, mask: 'torch.Tensor | None'):\n"
            "        if mask is not None:\n"
            "            tokens = tokens * mask.unsqueeze(-1)\n        else:\n"
            "            mask = torch.ones(tokens.shape[0], tokens.shape[1]).bool()\n"
            "        return tokens.sum(-1) * mask",
            8,
            20,
        ),
        # `if not timesteps:` of a parameter whose default is None: callers that pass none
        Invalid(
            "import torch\nfrom torch import nn\nclass Diffusion(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.emb = nn.Embedding(10, 4)\n"
            "    def forward(self, x, timesteps=None):\n        if not timesteps:\n"
            "            timesteps = torch.randint(10, (x.size(0),))\n"
            "        return x + self.emb(timesteps)",
            10,
            29,
        ),
        # a module class defined in a test function: its methods run on the module's device
        Invalid(
            "import torch\nfrom torch import nn\ndef test_clipping():\n"
            "    class TestModel(nn.Linear):\n        def check(self):\n"
            "            norm = torch.stack([p.grad.norm() for p in self.parameters()]).norm()\n"
            "            torch.testing.assert_close(norm, torch.tensor(0.05))\n"
            "    TestModel(2, 2).check()",
            7,
            46,
        ),
        # `if t: ... else:` of a parameter typed to take None
        Invalid(
            "import torch\nfrom torch import nn\nclass Diffusion(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.emb = nn.Embedding(10, 4)\n"
            "    def forward(self, x, t: 'torch.Tensor | None'):\n        if t:\n"
            "            pass\n        else:\n            t = torch.randint(10, (x.size(0),))\n"
            "        return x + self.emb(t)",
            12,
            29,
        ),
        # a helper hands its caller's CPU data to the model the caller moved
        Invalid(
            "import torch\nfrom torch import nn\ndef score(net, features):\n"
            "    return net(features)\nnet = nn.Linear(3, 2).to(device)\n"
            "features = torch.randn(4, 3)\nresult = score(net, features)",
            7,
            21,
            "`score` passes it to `net` at line 4, which was moved to `device` at line 5",
        ),
        # a loss in a module's method: the target made on the CPU, the output where the module is
        Invalid(
            "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(3, 2)\n    def forward(self, x):\n"
            "        logits = self.fc(x)\n"
            "        target = torch.zeros(logits.shape[0], dtype=torch.long)\n"
            "        return F.cross_entropy(logits, target)",
            10,
            18,
            "combined with `logits` at line 11, which is on the module's device",
        ),
        # what the module returned, unpacked (a subclass's `forward` returns two tensors)
        Invalid(
            "import torch\nimport torch.nn.functional as F\nimport pytorch_lightning as pl\n"
            "class Clip(pl.LightningModule):\n    def validation_step(self, batch, i):\n"
            "        images, texts = batch\n"
            "        image_logits, text_logits = self.forward(images, texts)\n"
            "        truth = torch.arange(len(image_logits))\n"
            "        return F.cross_entropy(image_logits, truth)",
            8,
            17,
            "which is on the module's device (output of `self.forward`)",
        ),
        # accelerate's `prepare` (Lightning Fabric's `setup`) places the model on its device
        Invalid(
            "import torch\nfrom torch import nn\nfrom accelerate import Accelerator\n"
            "accelerator = Accelerator()\nmodel = accelerator.prepare(nn.Linear(4, 2))\n"
            "out = model(torch.randn(3, 4))",
            6,
            13,
            "`model` was prepared by `accelerator` at line 5: move the input with "
            "`.to(accelerator.device)`",
        ),
        # ... moving the module itself, as `Module.to` does, whatever becomes of the result
        Invalid(
            "import torch\nfrom torch import nn\nfrom lightning.fabric import Fabric\n"
            "fabric = Fabric()\nmodel = nn.Linear(1, 2)\n"
            "fabric.setup(model, torch.optim.Adam(model.parameters()))\n"
            "loss = model(torch.randn(1, 1)).sum()",
            7,
            14,
            "`model` was prepared by `fabric` at line 6",
        ),
        # ... and makes the loader yield its batches there
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
            "from lightning.fabric import Fabric\nfrom torch.utils.data import DataLoader\n"
            "fabric = Fabric()\nmodel, opt = fabric.setup(nn.Linear(4, 2), torch.optim.SGD([], 1))\n"
            "loader = fabric.setup_dataloaders(DataLoader(data))\nfor x, y in loader:\n"
            "    loss = F.cross_entropy(model(x), torch.zeros(len(x), dtype=torch.long))",
            10,
            38,
            "is on `fabric.device` (output of `model`, prepared by `fabric` at line 7)",
        ),
        # a LightningModule needs no move written: its Trainer moves it, and the batch, itself
        Invalid(
            "import torch\nimport pytorch_lightning as pl\nfrom torch import nn\n"
            "class Lit(pl.LightningModule):\n    def __init__(self):\n        super().__init__()\n"
            "        self.layer = nn.Linear(32, 2)\n    def forward(self, x):\n"
            "        return self.layer(x)\n    def step(self, x):\n        return self(x).sum()\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self.step(torch.ones(32))",
            13,
            26,
            "`Lit.forward` passes it to `self.layer` at line 9",
        ),
        Invalid(
            "import torch\nfrom lightning.pytorch import LightningModule\nfrom torch import nn\n"
            "class Lit(LightningModule):\n    def __init__(self):\n        super().__init__()\n"
            "        self.layer = nn.Linear(32, 2)\n    def validation_step(self, batch, i):\n"
            "        x, y = batch\n        logits = self.layer(x)\n"
            "        mask = torch.ones(4, 2)\n        return (logits * mask).sum()",
            11,
            16,
        ),
        # the target passed by name
        Invalid(
            "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
            "net = nn.Linear(3, 2).to(device)\ny = torch.randint(0, 2, (4,)).long()\n"
            "loss = F.cross_entropy(net(torch.randn(4, 3).to(device)), weight=None, target=y)",
            6,
            79,
        ),
        # the labels a helper's loss compares with the output of the model the caller moved
        Invalid(
            "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
            "def score(net, features, targets):\n"
            "    return F.cross_entropy(net(features), targets)\n"
            "net = nn.Linear(3, 2).to(device)\ntargets = torch.randint(0, 2, (4,))\n"
            "result = score(net, torch.randn(4, 3).to(device), targets)",
            7,
            11,
            "`score`, called at line 8, combines it with a tensor on `device`",
        ),
        # ... through a loss the script built, which the helper reads
        Invalid(
            "import torch\nfrom torch import nn\ncriterion = nn.CrossEntropyLoss()\n"
            "def score(net, features, targets):\n    return criterion(net(features), targets)\n"
            "net = nn.Linear(3, 2).to(device)\ntargets = torch.randint(0, 2, (4,))\n"
            "result = score(net, torch.randn(4, 3).to(device), targets)",
            7,
            11,
        ),
        # a helper's `assert_close` compares devices: the caller's 0-dim CPU `expected` fails it
        Invalid(
            "import torch\nfrom torch import nn\ndef check(model, x, expected):\n"
            "    torch.testing.assert_close(model(x).sum(), expected)\n"
            "net = nn.Linear(4, 2).to(device)\n"
            "check(net, torch.ones(3, 4).to(device), torch.tensor(1.0))",
            6,
            41,
        ),
        # a plain class's method sees what its construction site passed to `__init__`
        Invalid(
            "import torch\nfrom torch import nn\nclass Evaluator:\n"
            "    def __init__(self, model, data):\n        self.model = model\n"
            "        self.data = data\n    def run(self):\n        return self.model(self.data)\n"
            "evaluator = Evaluator(nn.Linear(3, 2).cuda(), torch.randn(4, 3))",
            8,
            27,
        ),
        # an in-place CPU accumulator of a module's parameters, which live on its device
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def penalty(self):\n        total = torch.zeros(())\n"
            "        for p in self.parameters():\n            total += p.abs().sum()\n"
            "        return total",
            5,
            17,
        ),
        # the deprecated `Variable` wraps the tensor where it is
        Invalid(
            "import torch\nfrom torch import nn\nfrom torch.autograd import Variable\n"
            "class Grid(nn.Module):\n    def forward(self, x):\n"
            "        grid = Variable(torch.zeros(x.size(0), 4))\n        return torch.mul(grid, x)",
            6,
            25,
        ),
        # a CPU accumulator with elements, summed out of place: so on the first iteration
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def penalty(self):\n        total = torch.zeros(1)\n"
            "        for p in self.parameters():\n            total = total + p.abs()\n"
            "        return total",
            5,
            17,
            "combined with `p.abs()` at line 7",
        ),
        # a registered buffer (or parameter) lives on the module's device: `.to()` moves it
        Invalid(
            "import torch\nfrom torch import nn\nclass Rotary(nn.Module):\n"
            "    def __init__(self, dim):\n        super().__init__()\n"
            "        self.register_buffer('inv_freq', torch.ones(dim))\n"
            "    def forward(self, n):\n        t = torch.arange(n)\n"
            "        return t[:, None] * self.inv_freq",
            8,
            13,
            "on the module's device (`self.inv_freq`, a buffer of the module)",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Scale(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.gamma = nn.Parameter(torch.ones(4))\n"
            "    def forward(self, x):\n        return self.gamma * torch.rand(4)",
            8,
            29,
            "a parameter of the module",
        ),
        # a method of the module, called with the caller's CPU mask, combines it with the input
        Invalid(
            "import torch\nfrom torch import nn\nclass CRF(nn.Module):\n"
            "    def _score(self, logits, mask):\n        return (logits * mask).sum()\n"
            "    def forward(self, inputs, mask=None):\n        if mask is None:\n"
            "            mask = torch.ones(inputs.shape[:2])\n"
            "        return self._score(inputs, mask)",
            8,
            20,
            "`_score`, called at line 9, combines it with a tensor on the module's device (input "
            "`inputs`) at line 5",
        ),
        # a loop's first iteration passes the CPU tensor made before it to the helper
        Invalid(
            "import torch\nimport torch.nn.functional as F\n"
            "def convolve(signal, kernel):\n    return F.conv1d(signal, kernel)\n"
            "def drop(waves: torch.Tensor, freqs):\n    drop_filter = torch.zeros(1, 9, 1)\n"
            "    for freq in freqs:\n        kernel = torch.ones(1, 1, 9).to(waves.device)\n"
            "        drop_filter = convolve(drop_filter, kernel)\n"
            "    return convolve(waves, drop_filter)",
            6,
            19,
            "`convolve`, called at line 9, combines it with a tensor on the device its caller chose",
        ),
        # a helper of the file, called with a CPU tensor, combines it with its caller's input
        Invalid(
            "import torch\ndef scale(x: torch.Tensor, w):\n    return x * w\n"
            "def run(x: torch.Tensor):\n    w = torch.ones(3)\n    return scale(x, w)",
            5,
            9,
            "on the device its caller chose (parameter `x`)",
        ),
        # a tensor method combines its receiver with its tensor arguments
        Invalid(
            "import torch\ndef sequence_mask(lengths: torch.Tensor, max_len):\n"
            "    return torch.arange(0, max_len).repeat(3, 1).lt(lengths.unsqueeze(1))",
            3,
            12,
        ),
    )

    @classmethod
    def may_fire_in(cls, facts: SyntaxFacts) -> bool:
        return (
            facts.device_source or facts.forward_method or facts.tensor_parameter
        ) and facts.cpu_tensor_source

    def begin_analysis(self, analysis: FlowContext) -> None:
        super().begin_analysis(analysis)
        self._factories_reported: set[ast.AST] = set()

    def visit_Call(self, node: ast.Call) -> None:
        flow = self.analysis.flow
        passed_on: set[ast.expr] = set()  # each argument once, whatever its helper met
        for passed in flow.call_findings.get(node, ()):
            if passed.argument in passed_on:
                continue
            passed_on.add(passed.argument)
            if passed.inner.combined:
                self._check_combined_in_callee(node, passed)
            else:
                self._check_passed_to_module(node, passed)
        arguments = [(value, flow.value_of(value)) for value in call_arguments(node)]
        if all(value is UNKNOWN for _, value in arguments):
            return  # every check below needs an argument whose placement is known
        self._check_forward_operation(node)
        callee = flow.value_of(node.func)
        if callee.is_loss and callee.cpu_weight is not None and callee.where is Where.CPU:
            self._check_loss_weight(node, callee, arguments)
        elif self._is_loss(node, callee):
            compared = {id(operand) for operand in loss_operands(node)}
            self._check_loss([pair for pair in arguments if id(pair[0]) in compared])
        elif callee.where is Where.DEVICE and callee.kind in (Kind.MODULE, Kind.UNKNOWN):
            self._check_module_input(node, callee, arguments)
        elif callee.where is Where.INPUT and callee.kind is Kind.MODULE:
            self._check_layer_input(node, arguments)
        if flow.project is not None:
            for feed in fed_modules(flow.project, node):
                self._check_fed_module(feed)
            reported: set[ast.expr] = set()
            for mix in mixed_arguments(flow.project, node):
                self._check_mixed_in_imported(node, mix, reported)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._check_forward_operation(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_forward_operation(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        self._check_forward_operation(node)

    def _is_loss(self, node: ast.Call, callee: Value) -> bool:
        """A loss that compares its input with its target (not CTC's, which may stay on the
        CPU)."""
        if callee.is_loss:
            return not callee.cpu_targets
        qualified = self.analysis.names.qualified_syntax_name(node.func) or ""
        if qualified in FUNCTIONAL_LOSSES:
            return not takes_cpu_targets(qualified)
        name = dotted_name(node.func)
        return name is not None and looks_like_loss(name)

    def _check_module_input(
        self, node: ast.Call, module: Value, arguments: list[tuple[ast.expr, Value]]
    ) -> None:
        found = first_cpu_operand(arguments)
        from_sequence = found is None
        found = found or first_cpu_sequence(arguments)  # `model(x, (h0, c0))`
        if found is None:
            return
        argument, value = found
        citations = Citations()
        cpu_evidence = citations.of(value.placement)
        module_evidence = citations.of(module.placement)
        shown = f"`{self.analysis.source_of(argument)}`"
        where = (
            f"holds tensors on the CPU ({cpu_evidence})"
            if from_sequence
            else f"is on the CPU ({cpu_evidence})"
        )
        self.report(
            argument,
            f"{shown} {where} but `{self.analysis.source_of(node.func)}` was {module_evidence}: "
            f"move {'each of them' if from_sequence else 'the input'} {self._module_move(module, argument)}",
            citations.cited(),
        )

    def _check_fed_module(self, feed: Feed) -> None:
        """`score(net, x)` where `score`, in another file, calls `net(x)`."""
        flow = self.analysis.flow
        module, given = flow.value_of(feed.module), flow.value_of(feed.given)
        if not (
            module.where is Where.DEVICE
            and module.kind in (Kind.MODULE, Kind.UNKNOWN)
            and given.is_cpu_tensor()
        ):
            return
        citations = Citations()
        cpu_evidence = citations.of(given.placement)
        module_evidence = citations.of(module.placement)
        self.report(
            feed.given,
            f"`{self.analysis.source_of(feed.given)}` is on the CPU ({cpu_evidence}) but "
            f"{feed.function} passes it to {self._named(feed)}, {module_evidence}: move it "
            f"{self._module_move(module, feed.given)}",
            citations.cited(),
        )

    def _named(self, feed: Feed) -> str:
        shown = self.analysis.source_of(feed.module)
        if shown == feed.module_parameter:
            return f"`{shown}`"
        return f"`{feed.module_parameter}`, that is `{shown}`"

    def _check_passed_to_module(self, node: ast.Call, passed: CallFinding) -> None:
        """`score(net, features)` where `score` calls `net(features)` and `net` was moved."""
        inner = passed.inner
        assert isinstance(inner.node, ast.Call)
        citations = Citations()
        cpu_evidence = citations.of(passed.value.placement)
        module_evidence = citations.of(inner.partner.placement) or "the module, on its device"
        inner_line = citations.line_of(inner.node)
        argument = self.analysis.source_of(passed.argument)
        self.report(
            passed.argument,
            f"`{argument}` is on the CPU ({cpu_evidence}) but `{inner.function}` passes it to "
            f"`{self.analysis.source_of(inner.node.func)}` at line {inner_line}, which "
            f"{'is' if inner.partner.where is Where.INPUT else 'was'} {module_evidence}: "
            f"move it {self._module_move(inner.partner, passed.argument)}",
            citations.cited(),
        )

    def _check_combined_in_callee(self, node: ast.Call, passed: CallFinding) -> None:
        """`self._likelihood(inputs, mask)` where the helper adds `mask`, made here on the CPU,
        to `inputs`: reported where `device=` goes, the factory, or else at the argument."""
        inner = passed.inner

        def place(citations: Citations) -> str:
            return f"line {citations.line_of(inner.node)}"

        self._report_combined(
            node, passed.argument, passed.value, inner.partner, f"`{inner.function}`", place
        )

    def _check_mixed_in_imported(self, node: ast.Call, mix: Mix, reported: set[ast.expr]) -> None:
        """`blend(x, torch.randn(4))` where `blend`, in another file, adds its two parameters;
        ``reported``: the call's arguments already reported (once each, whatever it meets)."""
        flow = self.analysis.flow
        for argument, other in ((mix.first, mix.second), (mix.second, mix.first)):
            value, partner = iteration_value(flow, argument), iteration_value(flow, other)
            if argument in reported:
                continue
            if value.is_cpu_tensor() and cannot_meet(value, partner):
                reported.add(argument)
                self._report_combined(
                    node,
                    argument,
                    value,
                    partner,
                    mix.function,
                    lambda _: f"line {mix.line} of {mix.file}",
                )
                return

    def _report_combined(
        self,
        node: ast.Call,
        argument: ast.expr,
        value: Value,
        partner: Value,
        function: str,
        place: Callable[[Citations], str],
    ) -> None:
        factory = cpu_factory(value, argument)
        origin = value.placement.origin
        if origin is argument and isinstance(origin, ast.Call):
            # `self.walk(x, torch.ones(3))`: the argument is the factory
            factory = origin if made_by_factory(value) else None
        if factory is not None and factory in self._factories_reported:
            return
        citations = Citations()
        call_line = citations.line_of(node)
        combined_at = place(citations)
        if partner.where is Where.DEVICE:
            follows = (
                f"a tensor on `{partner.placement.device}` ({citations.of(partner.placement)})"
            )
        elif _on_module_device(partner):
            follows = f"a tensor on the module's device ({citations.of(partner.placement)})"
        else:
            follows = f"a tensor on the device its caller chose ({citations.of(partner.placement)})"
        called = (
            f"{function}, called at line {call_line}, combines it with {follows} at {combined_at}"
        )
        if factory is not None:
            if not self.analysis.expects_failure():
                self._factories_reported.add(factory)
            self.report(
                factory,
                f"`{self.analysis.source_of(factory)}` creates a tensor on the CPU, but {called}: "
                "create it with `device=` that tensor's device",
                citations.cited(),
                statement=self.analysis.statement_of(factory) or factory,
            )
            return
        self.report(
            argument,
            f"`{self.analysis.source_of(argument)}` is on the CPU "
            f"({citations.of(value.placement)}), but {called}: move it there first",
            citations.cited(),
        )

    def _module_move(self, module: Value, argument: ast.expr) -> str:
        device = device_in_scope(self.analysis.tree, module.placement, argument)
        return f"with `.to({device})`" if device is not None else "to the module's device"

    def _check_layer_input(self, node: ast.Call, arguments: list[tuple[ast.expr, Value]]) -> None:
        found = first_cpu_operand(arguments)
        if found is None:
            return
        argument, value = found
        citations = Citations()
        cpu_evidence = citations.of(value.placement)
        layer = self.analysis.source_of(node.func)
        what = "the module itself" if layer == "self" else "a layer of the module"
        advice = (
            "create it with `device=` the module's device"
            if made_by_factory(value)
            else "move it to the module's device"
        )
        self.report(
            argument,
            f"`{self.analysis.source_of(argument)}` is on the CPU ({cpu_evidence}) but "
            f"`{layer}` is {what}, on the module's device: {advice}",
            citations.cited(),
        )

    def _check_loss(self, arguments: list[tuple[ast.expr, Value]]) -> None:
        found = find_mismatch(arguments, proven=True)  # a loss takes tensors
        if found is None:
            # `F.cross_entropy(logits, torch.zeros(n, dtype=torch.long))` in a module's method
            self._check_operands(arguments)
            return
        citations = Citations()
        cpu_evidence = citations.of(found.cpu_value.placement)
        placement = found.device_value.placement
        device = placement.device
        device_evidence = citations.of(placement)
        holder = self.analysis.source_of(found.device_node)
        self.report(
            found.cpu_node,
            f"`{self.analysis.source_of(found.cpu_node)}` is on the CPU ({cpu_evidence}) but "
            f"`{self.analysis.source_of(found.device_node)}` is on `{device}` "
            f"({device_evidence}): move it "
            f"{move_advice(self.analysis.tree, placement, found.cpu_node, holder)}",
            citations.cited(),
        )

    def _check_loss_weight(
        self, node: ast.Call, loss: Value, arguments: list[tuple[ast.expr, Value]]
    ) -> None:
        on_device = next((pair for pair in arguments if pair[1].is_on_device()), None)
        if on_device is None or loss.cpu_weight is None:
            return
        citations = Citations()
        weight_evidence = citations.of(loss.cpu_weight.placement)
        device_evidence = citations.of(on_device[1].placement)
        name = self.analysis.source_of(node.func)
        self.report(
            node,
            f"`{name}` holds a `weight` on the CPU ({weight_evidence}) but its input "
            f"`{self.analysis.source_of(on_device[0])}` is on `{on_device[1].placement.device}` "
            f"({device_evidence}): move the loss with `{name}.to(...)` or create the weight there",
            citations.cited(),
        )

    def visit_Subscript(self, node: ast.Subscript) -> None:
        """`table[ids]`: a CPU tensor indexed with indices on the caller's device (a CUDA
        tensor may be indexed with CPU indices, not the other way round)."""
        flow = self.analysis.flow
        table = flow.value_of(node.value)
        if not table.is_cpu_tensor():
            return
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        indices = [(part, flow.value_of(part)) for part in parts]
        tensors = [(part, value) for part, value in indices if value.kind is Kind.TENSOR]
        if tensors:
            self._check_operands([(node.value, table), *tensors])

    def _check_forward_operation(self, node: ast.AST) -> None:
        self._check_operands(operands(node, self.analysis.flow))

    def _check_operands(self, pairs: list[tuple[ast.expr, Value]]) -> None:
        follower = next(
            (pair for pair in pairs if follows_input(pair[1])), None
        )  # (an in-place target on the CPU counts a 0-dim operand: see `operations.operands`)
        if follower is None:
            return
        found: Optional[tuple[ast.expr, Value]] = first_cpu_operand(pairs)
        if found is None:
            return
        created, value = found
        input_node, input_value = follower
        if input_value.kind is Kind.TENSOR and not made_by_factory(value):
            return  # outside `forward`, only a tensor the function itself made is evidence
        evidence = input_value.placement.evidence
        if input_value.kind is not Kind.TENSOR:
            follows = "which follows the module's device"
        else:
            place = "module" if _on_module_device(input_value) else "caller"
            follows = f"which is on the {place}'s device" + (f" ({evidence})" if evidence else "")
        inside_forward = input_value.kind is not Kind.TENSOR and evidence.startswith("input ")
        where = "inside `forward` " if inside_forward else ""
        factory = cpu_factory(value, created)
        if factory is not None:
            # Reported where the fix goes, `device=` on the factory, once for all its uses.
            if factory in self._factories_reported:
                return
            if not self.analysis.expects_failure():  # (inside `pytest.raises` it is meant)
                self._factories_reported.add(factory)
            self.report(
                factory,
                f"`{self.analysis.source_of(factory)}` creates a tensor on the CPU {where}that "
                f"is combined with `{self.analysis.source_of(input_node)}` at line {{line0}}, "
                f"{follows}: create it with `device=` the input's device (or register it as a "
                "buffer)",
                (created,),
                statement=self.analysis.statement_of(factory) or factory,
            )
            return
        citations = Citations()
        evidence = citations.of(value.placement)
        self.report(
            created,
            f"`{self.analysis.source_of(created)}` is {evidence} {where}but combined "
            f"with `{self.analysis.source_of(input_node)}`, {follows}: "
            "create it with `device=` the input's device (or register it as a buffer)",
            citations.cited(),
        )


def _on_module_device(value: Value) -> bool:
    """Whether an operand that follows a device follows the module's: an input of `forward`
    (whatever it was turned into), a buffer or a parameter, which `.to()` moves; not a tensor
    parameter of a plain function, which lives where its caller chose."""
    evidence = value.placement.evidence
    return (
        value.kind is not Kind.TENSOR
        or evidence.startswith(("input ", "output of `self"))
        or "of the module" in evidence
    )
