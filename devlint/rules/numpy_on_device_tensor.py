from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from devlint.analysis.operations import Citations
from devlint.analysis.prefilter import DEVICE_SOURCE_OR_TENSOR_TYPE
from devlint.analysis.syntax import has_arguments, method_name, nodes_below
from devlint.analysis.syntax_screen import PLOTTING_FUNCTIONS, SyntaxFacts
from devlint.analysis.values import Kind, Value, Where, sequence_items
from devlint.context import NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import FlowRule, Invalid

if TYPE_CHECKING:
    from devlint.flow_context import FlowContext


class NumpyOnDeviceTensor(FlowRule):
    """
    ## What it does
    Flags `.numpy()`, or a numpy function such as `np.mean(t)`, on a tensor that
    may be on a GPU, with no `.cpu()` before it: a tensor moved with
    `.to(device)` or `.cuda()`, the output of a module moved there, a tensor of
    the module in `forward` and the methods it calls (a parameter, a buffer, a
    torch layer's `weight`), or a tensor that lives on the caller's device:
    `forward`'s input, or a tensor parameter of any function, or an item of one
    annotated as a list of tensors (`List[torch.Tensor]`): library code runs
    wherever its caller keeps the data. A numpy function that only looks at its
    argument is not flagged: `np.isscalar(t)`, `np.iterable(t)`, and
    `np.shape(t)` and `np.ndim(t)`, which return `t.shape` and `t.ndim`; nor
    are `np.squeeze(t)`, `np.nonzero(t)` and `np.swapaxes(t, ...)`, which call
    the tensor's own method and return a tensor where it was. A module's output
    handed to a numpy function is not flagged: a pipeline may return numpy
    images already;
    `.numpy()` itself proves a tensor, and so does a torch layer that returns
    one tensor (`nn.Linear`, `nn.Conv2d`; not `nn.LSTM`'s tuple or a container's
    whatever-its-layers-return), and so does a module class of the file whose
    `forward` returns a tensor for certain at every `return` (a tensor method's
    result, a torch function's, such a layer's). Code that prepares CPU data by design (a
    dataset's methods, collate functions, the helpers of a test module) is left
    out. In a file that places nothing on a device, CPU-side code whose callers
    pass CPU tensors, only a parameter annotated `Tensor` (a typed API) counts;
    and a script's helper whose every call in the file passes a CPU tensor takes
    that as its evidence.

    On some paths is enough: `if use_gpu: x = x.cuda()` (or `model = model.cuda()`)
    makes `x` (or what `model` computes) a tensor that may be on a GPU, and so is
    what a module computes from an input that may be there. Except where a later
    test of the same flag says the move did not happen: `if self.gpu_mode:
    self.G.cuda()`, then `if self.gpu_mode: s = s.cpu().numpy()` `else: s =
    s.numpy()`; the flag (a name or a dotted one) must be bound by one assignment
    outside any loop (or be an attribute of such a name, `args.cuda`), so that
    both tests read the same truth.

    ## Why is this bad?
    NumPy arrays live in host memory: on a CUDA tensor `.numpy()` raises "can't
    convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the
    tensor to host memory first." On a CPU-only machine it works, so the bug
    waits for the first GPU run.

    ## Example
    ```python
    preds = model(images.to(device))
    array = preds.detach().numpy()
    ```

    ## Use instead
    ```python
    array = preds.detach().cpu().numpy()
    ```

    ## Fix safety
    `.cpu()` is inserted before `.numpy()` (after `.detach()` where there is one),
    or after a numpy function's argument: a **safe** fix, since `.cpu()` on a
    tensor already on the CPU returns it unchanged. A numpy reduction (`np.mean`,
    `np.sum`, `np.max`, ...) given a tensor calls the tensor's own method with
    numpy's keywords, which fails on any device: there `.cpu().numpy()` is
    inserted, so that numpy gets an array.
    """

    code = "DEV007"
    name = "numpy-on-device-tensor"
    summary = ".numpy() on a tensor that may be on a GPU"
    fixable = True
    trigger_tokens = ("numpy", "imshow", "matshow", "pyplot")
    # A file that places nothing on a device is CPU-side by design, and its `.numpy()` on a
    # parameter is how its callers use it (they pass CPU tensors); there only a parameter
    # annotated `Tensor`, a typed API, lives on its caller's device (see `parameters`).
    required_patterns = (DEVICE_SOURCE_OR_TENSOR_TYPE,)

    VALID = (
        # a helper an executor runs takes its callers' word, as one called by name does
        "import torch\nfrom concurrent.futures import ProcessPoolExecutor\n"
        "def metrics(estimate: torch.Tensor):\n    return estimate.numpy().mean()\n"
        "def evaluate(model, batches, device):\n    model.to(device)\n"
        "    with ProcessPoolExecutor() as pool:\n        for noisy in batches:\n"
        "            estimate = model(noisy.to(device)).cpu()\n"
        "            pool.submit(metrics, estimate)",
        # the branch for tensors off the GPU, and what is made from them
        "import numpy as np, torch\ndef inverse(magnitude: torch.Tensor, phase):\n"
        "    joined = torch.cat([magnitude * phase.cos(), magnitude * phase.sin()], dim=1)\n"
        "    if magnitude.device.type == 'cuda':\n        return joined.flip(1)\n"
        "    return np.flip(joined.detach().numpy(), 1)",
        "import torch\ndef to_array(x: torch.Tensor):\n    if not x.is_cuda:\n"
        "        return x.numpy()\n    return x.cpu().numpy()",
        # the name read for its device now holds the array made from it
        "import numpy as np, torch\ndef top_p(logits):\n    device = logits.device\n"
        "    logits = logits.detach().cpu().float().numpy()\n"
        "    return torch.from_numpy(np.argsort(logits)).to(device)",
        # arithmetic of an input of unknown kind (a size) is no tensor
        "import numpy as np\nimport torch\nfrom torch import nn\nclass Layer(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.window = 7\n"
        "    def forward(self, x, H):\n        Hp = int(np.ceil(H / self.window)) * self.window\n"
        "        return x + torch.zeros((1, Hp), device=x.device).sum()",
        # a class of the file with an `imshow` of its own: that code is read on its own
        "import torch\nclass Viewer:\n    def imshow(self, t):\n        print(t.cpu().numpy())\n"
        "viewer = Viewer()\nviewer.imshow(torch.rand(8, 8).cuda())",
        # an `Accelerator` kept on the CPU: a module's methods run there
        "import torch\nfrom torch import nn\nfrom accelerate import Accelerator\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n    def weights(self):\n"
        "        return self.fc.weight.detach().numpy()\n"
        "model = Accelerator(cpu=True).prepare(Net())",
        # a LightningModule moved back to the CPU for inference
        "import torch\nimport pytorch_lightning as pl\nfrom torch import nn\n"
        "class Lit(pl.LightningModule):\n    def __init__(self):\n        super().__init__()\n"
        "        self.encoder = nn.Linear(32, 2)\n    def predict(self, x):\n"
        "        return self.encoder(x).argmax(1).numpy()\n"
        "model = Lit.load_from_checkpoint('x.ckpt')\nmodel.cpu()",
        # a function dispatching on one argument's type takes its siblings in kind
        "import numpy as np, torch\ndef fit(y_center: torch.Tensor, y_scale: torch.Tensor):\n"
        "    if isinstance(y_center, torch.Tensor):\n        return torch.std(y_scale, dim=-1)\n"
        "    return np.std(y_scale, axis=-1)\nx = torch.ones(2).to('cuda')",
        # matplotlib given host copies; a helper of the file named `imshow` is read on its own
        "import torch\nimport matplotlib.pyplot as plt\nout = model(x.to('cuda'))\n"
        "plt.imshow(out[0].detach().cpu())\nplt.plot([l.item() for l in out.detach()])",
        "import torch\ndef imshow(t):\n    print(t.cpu().numpy())\nimshow(torch.ones(3).cuda())",
        "import torch\nclass Viewer:\n    def imshow(self, t):\n        print(t.cpu().numpy())\n"
        "    def show(self):\n        self.imshow(torch.ones(3).cuda())",
        # a private method's callers are all in sight: they hand it CPU tensors
        "import torch\nimport matplotlib.pyplot as plt\nclass Plots:\n"
        "    def plot(self, grads):\n        for g in grads:\n            self._draw(g.cpu())\n"
        "    def _draw(self, image: torch.Tensor):\n        plt.imshow(image)\n"
        "x = torch.ones(2).to('cuda')",
        # numpy functions that only look at their argument: a type test, `t.shape`, `t.ndim`
        "import numpy as np, torch\nt = torch.ones(3).cuda()\n"
        "if np.isscalar(t) or np.ndim(t) == 0:\n    pass\nsize = np.shape(t)",
        # the branch of the flag a parameter's move was made under where nothing moved
        "import torch\nclass Trainer:\n    def __init__(self, model, use_cuda):\n"
        "        self.use_cuda = use_cuda\n        self.model = model\n        if self.use_cuda:\n"
        "            self.model = self.model.cuda()\n    def predict(self, batch):\n"
        "        out = self.model(batch)\n        if self.use_cuda:\n"
        "            return out.detach().cpu().numpy()\n        return out.detach().numpy()",
        # ... or hand it to its own method: `t.squeeze()`, still on the GPU
        "import numpy as np, torch\nt = torch.ones(3, 1).cuda()\nn = np.squeeze(t).cpu().numpy()",
        # the `else` of the flag the move was made under: nothing moved there
        "import torch\nfrom torch import nn\nclass Trainer:\n    def __init__(self, args):\n"
        "        self.gpu_mode = args.gpu_mode\n        self.G = nn.Linear(3, 3)\n"
        "        if self.gpu_mode:\n            self.G.cuda()\n    def show(self, z):\n"
        "        samples = self.G(z)\n        if self.gpu_mode:\n"
        "            return samples.cpu().numpy()\n        return samples.data.numpy()",
        "import torch\nuse_gpu = torch.cuda.is_available()\nx = torch.ones(3)\n"
        "if use_gpu:\n    x = x.cuda()\nif not use_gpu:\n    print(x.numpy())",
        "import argparse\nimport torch\nargs = argparse.ArgumentParser().parse_args()\n"
        "x = torch.ones(3)\nif args.cuda:\n    x = x.cuda()\nif not args.cuda:\n    print(x.numpy())",
        # a module class whose `forward` moves its output to the CPU
        "import numpy as np\nimport torch\nfrom torch import nn\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n"
        "    def forward(self, x):\n        return self.fc(x).cpu().detach()\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "net = Net().to(device)\n"
        "print(np.mean(net(torch.randn(3, 4).to(device))))",
        # a module class whose `forward` returns a tuple: its output is no tensor
        "import numpy as np\nimport torch\nfrom torch import nn\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n"
        "    def forward(self, x):\n        return self.fc(x), x\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "net = Net().to(device)\n"
        "print(np.mean(net(torch.randn(3, 4).to(device))))",
        # a script that defines a helper again calls the new one from there on
        "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "def fake_data(n):\n    return torch.rand(n, 1, device=device)\n"
        "def fake_data(n):\n    return torch.rand(n, 1)\n"
        "print(fake_data(3).numpy())",
        # the module's `device` is the CPU where the helper runs
        "import torch\ndevice = torch.device('cpu')\ndef fake_data(n):\n"
        "    return torch.rand(n, 1, device=device) * 5\n"
        "print(fake_data(4).squeeze().numpy())",
        # every call in the file passes CPU tensors: the callers' word
        "from typing import List\nimport torch\ndef to_arrays(ts: List[torch.Tensor]):\n"
        "    return [t.numpy() for t in ts]\nout = to_arrays([torch.zeros(2)])",
        "from typing import List\nimport torch\n"
        "def to_arrays(embeddings: List[torch.Tensor], weights: List[float]):\n"
        "    return [e.cpu().numpy() for e in embeddings] + [w for w in weights]",
        "import torch\nfrom torch import nn\ndef predict(use_gpu, x):\n"
        "    model = nn.Linear(2, 2)\n    if use_gpu:\n        model = model.cuda()\n"
        "    return model(x).detach().cpu().numpy()",
        # every call of the file passes the typed parameter a CPU tensor: the callers' word,
        # through a helper that calls it (analysed first) and `torch.meshgrid`'s tuple
        "import torch\ndef show(t: torch.Tensor):\n    return t.numpy()\n"
        "def grid(n):\n    g = torch.meshgrid(torch.arange(n), torch.arange(n), indexing='xy')\n"
        "    return show(torch.stack(g))\ndef run(model):\n    model.cuda()",
        "import torch\nx = torch.zeros(3).to(device)\na = x.cpu().numpy()",
        "import torch\nx = torch.zeros(3).to(device)\na = x.detach().cpu().numpy()",
        "import torch\nx = torch.zeros(3)\na = x.numpy()",
        "def f(x):\n    return x.tolist()",
        # a file that places nothing on a device is CPU-side code: its callers pass CPU tensors
        "import torch\ndef tensor_id(tensor):\n    return hash(tensor.numpy().data)",
        "import torch\nclass Pairs(torch.utils.data.Dataset):\n"
        "    def __getitem__(self, i):\n        return self.data[i].numpy()",
        # a script's helper whose every call, in sight, passes a CPU tensor
        "import torch\nx = torch.zeros(2).cuda()\ndef show(t: torch.Tensor):\n"
        "    return t.numpy()\nshow(torch.ones(3))",
        # branches that agree, a path-blind analysis cannot tell: the second undoes the first
        "import torch\nx = torch.zeros(3)\nif use_gpu:\n    x = x.cuda()\n"
        "if use_gpu:\n    x = x.cpu()\na = x.numpy()",
        # a name the code type-tests may hold an array: its device read says nothing of it
        "import numpy as np\nimport torch\ndef pad(array, n):\n    if torch.is_tensor(array):\n"
        "        array = array.index_select(0, torch.arange(n, device=array.device))\n"
        "    else:\n        array = array.take(range(n))\n        array = np.pad(array, 2)\n"
        "    return array",
        # moved on no path: the CPU tensor either way
        "import torch\nx = torch.zeros(3)\nif use_gpu:\n    x = x.cpu()\na = x.numpy()",
        # a type test proves the other branch holds an array
        "import numpy as np\nimport torch\ndef f(image):\n"
        "    if isinstance(image, torch.Tensor):\n        image = image.unsqueeze(1)\n"
        "    else:\n        image = np.expand_dims(image, 0)\n    return image",
        "import numpy as np\nimport torch\ndef f(video):\n"
        "    if isinstance(video, list) and isinstance(video[0], np.ndarray):\n"
        "        video = np.concatenate(video)\n    return video.unsqueeze(0)",
        "import numpy as np\nimport torch\ndef f(image):\n    if type(image) is Image:\n"
        "        image = np.array(image)\n    return image.unsqueeze(0)",
        # uses after the name is rebound say nothing of the parameter
        "import numpy as np\nimport torch\ndef f(img):\n    img = np.ascontiguousarray(img)\n"
        "    img = torch.from_numpy(img)\n    return img.permute(2, 0, 1)",
        # the annotation says what it is
        "import numpy as np\ndef f(sigmas: list, t):\n    a = np.array(sigmas)\n"
        "    return sigmas.numel(), a",
        "import numpy as np\nimport torch\npipe = Pipeline().to(device)\n"
        "images = pipe(prompt)[0]\nassert np.allclose(images, 0)",
        "import torch\nx = torch.zeros(3).to('cpu')\na = x.numpy()",
        "import torch\nclass Base:\n    def __init__(self):\n"
        "        self._cpu_device = torch.device('cpu')\n"
        "class Evaluator(Base):\n    def process(self, out):\n"
        "        return out.argmax(dim=0).to(self._cpu_device).numpy()",
        "x = out.to(self.cpu_device)\na = x.numpy()",
        "import numpy as np\nimport torch\nx = torch.zeros(3).to(device)\nm = np.mean(x.cpu())",
        "import numpy as np\nimport torch\nx = torch.zeros(3)\nm = np.mean(x)",
        "import numpy as np\nimport torch\nouts = []\nfor _ in range(3):\n"
        "    outs.append(torch.ones(2).cuda().cpu())\ns = np.stack(outs)",
        "import numpy as np\nimport torch\nouts = [torch.ones(2).cuda(), torch.ones(2)]\n"
        "s = np.stack(outs)",
        # the branch proved the device is the CPU
        "import torch\nx = torch.zeros(3).to(device)\nif device == 'cpu':\n    a = x.numpy()",
        "import torch\nx = torch.zeros(3).to(self.device)\nif self.device != CPU:\n"
        "    x = x.cpu()\na = x.numpy()",
        # an LSTM returns a tuple, a Sequential what its last layer returns
        "import numpy as np\nfrom torch import nn\nrnn = nn.LSTM(4, 8).to(device)\n"
        "m = np.mean(rnn(x))",
    )
    INVALID = (
        # what a layer computes is where the module is, in a file that moves nothing itself
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(3, 2)\n"
            "    def forward(self, x):\n        return self.fc(x).argmax(1).numpy()",
            8,
            16,
            "output of `self.fc`, a layer of the module",
        ),
        # ... and in a LightningModule's step, on the accelerator its Trainer chose
        Invalid(
            "import numpy as np\nimport pytorch_lightning as pl\nfrom torch import nn\n"
            "class Lit(pl.LightningModule):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(3, 2)\n    def validation_step(self, batch, i):\n"
            "        x, y = batch\n        preds = self.fc(x).argmax(1)\n"
            "        self.log('acc', np.mean(preds.numpy() == 1))",
            11,
            33,
        ),
        # ... in the branches it tests alone: after them, the sibling is the caller's again
        Invalid(
            "import torch\ndef colorize(depth_map: torch.Tensor, valid_mask: torch.Tensor):\n"
            "    if isinstance(depth_map, torch.Tensor):\n        depth = depth_map.cpu().numpy()\n"
            "    else:\n        depth = depth_map\n    return depth, valid_mask.numpy()\n"
            "x = torch.ones(2).to('cuda')",
            7,
            19,
            "`valid_mask` may be on a GPU (parameter `valid_mask`)",
        ),
        # a type test that is no tensor test says nothing of the siblings
        Invalid(
            "import torch\ndef apply(x: torch.Tensor, scale):\n"
            "    if isinstance(scale, (int, float)):\n        return x.numpy() * scale\n"
            "y = torch.ones(2).to('cuda')",
            4,
            16,
        ),
        # `.half()` of a module's output is a tensor
        Invalid(
            "import numpy as np, torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(3, 2)\n"
            "    def forward(self, x):\n        return self.fc(x).half()\n"
            "model = Net().cuda()\nm = np.mean(model(torch.randn(2, 3).cuda()))",
            10,
            13,
        ),
        # matplotlib converts what it draws with `np.asarray`: a list of losses on the GPU too
        Invalid(
            "import torch\nimport matplotlib.pyplot as plt\nfrom torch import nn\n"
            "model, criterion = nn.Linear(3, 2).cuda(), nn.CrossEntropyLoss()\nlosses = []\n"
            "for x, y in batches:\n    loss = criterion(model(x.cuda()), y.cuda())\n"
            "    losses.append(loss.detach())\nplt.plot(losses)",
            9,
            10,
            "`losses` holds tensors that may be on a GPU",
        ),
        Invalid(
            "import torch\nimport matplotlib.pyplot as plt\nfig, axes = plt.subplots(1, 2)\n"
            "image = torch.rand(3, 8, 8).to('cuda')\naxes[0].imshow(image.permute(1, 2, 0))",
            5,
            16,
            "and `axes[0].imshow` converts it to an array in host memory",
        ),
        # a batch of a loader accelerate prepared: on the accelerator's device
        Invalid(
            "from accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
            "accelerator = Accelerator()\nloader = accelerator.prepare(DataLoader(data))\n"
            "for batch in loader:\n    print(batch['labels'].numpy())",
            6,
            11,
            "prepared by `accelerator` at line 4",
        ),
        # a parameter of a module the module holds (`self.crf.transitions`), read in a method
        # of a module the file moves: on the module's device
        Invalid(
            "import torch\nfrom torch import nn\nclass CRF(nn.Module):\n    def __init__(self, n):\n"
            "        super().__init__()\n        self.transitions = nn.Parameter(torch.randn(n, n))\n"
            "class Tagger(nn.Module):\n    def __init__(self, n, use_crf):\n"
            "        super().__init__()\n        if use_crf:\n            self.crf = CRF(n)\n"
            "        self.to('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "    def scores(self):\n        return self.crf.transitions.detach().numpy()",
            14,
            16,
            "`self.crf.transitions`, a parameter of the module",
        ),
        # ... moved in the `else` branch: the evidence is that move's
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self, model, cpu_only):\n"
            "        self.model = model\n        if cpu_only:\n            pass\n        else:\n"
            "            self.model = self.model.cuda()\n"
            "    def predict(self, batch):\n        return self.model(batch).detach().numpy()",
            10,
            16,
            "moved with `.cuda()` to `cuda` at line 8, on some paths",
        ),
        # a model the caller passed, moved under a condition: on a device on that path
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self, model, cuda_device=-1):\n"
            "        self.model = model\n        if cuda_device >= 0:\n"
            "            self.model = self.model.cuda(cuda_device)\n"
            "    def predict(self, batch):\n        return self.model(batch).detach().numpy()",
            8,
            16,
            "on some paths",
        ),
        # the flag is bound again in between: its two tests may read two truths
        Invalid(
            "import torch\nuse_gpu = torch.cuda.is_available()\nx = torch.ones(3)\n"
            "if use_gpu:\n    x = x.cuda()\nuse_gpu = False\nif not use_gpu:\n    print(x.numpy())",
            8,
            11,
        ),
        # a loop's target: each iteration binds another truth, and `x` stays moved
        Invalid(
            "import torch\nx = torch.ones(3)\nfor use_gpu in (True, False):\n    if use_gpu:\n"
            "        x = x.cuda()\n    if not use_gpu:\n        print(x.numpy())",
            7,
            15,
        ),
        # a branch's word stays in the branch: after `if not use_gpu: print(...)`, `x` may be moved
        Invalid(
            "import torch\nuse_gpu = torch.cuda.is_available()\nx = torch.ones(3)\n"
            "if use_gpu:\n    x = x.cuda()\nif not use_gpu:\n    print('on the CPU')\n"
            "print(x.numpy())",
            8,
            7,
        ),
        # moved under opposite truths of one flag: under neither
        Invalid(
            "import torch\nuse_gpu = torch.cuda.is_available()\nx = torch.ones(3)\n"
            "y = torch.ones(3)\nif use_gpu:\n    x = x.cuda()\nif not use_gpu:\n"
            "    y = y.cuda()\nz = x if cond else y\nif not use_gpu:\n    print(z.numpy())",
            11,
            11,
        ),
        # a function's local is bound again at each call, while the global it moved stays moved
        Invalid(
            "import torch\nfrom torch import nn\nnet = nn.Linear(3, 3)\ndef step(x, cfg):\n"
            "    use_gpu = cfg.gpu\n    if use_gpu:\n        net.cuda()\n    out = net(x)\n"
            "    if not use_gpu:\n        return out.detach().numpy()\n"
            "    return out.detach().cpu().numpy()",
            10,
            16,
        ),
        # two flags: the second says nothing of the first's move
        Invalid(
            "import torch\nx = torch.ones(3)\nif args.cuda:\n    x = x.cuda()\n"
            "if not args.plot:\n    print(x.numpy())",
            6,
            11,
        ),
        # A module class of the file whose `forward` returns one tensor: its output is one.
        Invalid(
            "import numpy as np\nimport torch\nfrom torch import nn\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(4, 2)\n"
            "    def forward(self, x):\n        h = self.fc(x)\n        return h.softmax(-1)\n"
            "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "net = Net().to(device)\n"
            "print(np.mean(net(torch.randn(3, 4).to(device))))",
            13,
            15,
            "output of `net`",
        ),
        # The items of a parameter annotated as a list of tensors are on the caller's device.
        Invalid(
            "from typing import List\nimport torch\n"
            "def to_arrays(embeddings: List[torch.Tensor]):\n"
            "    return [e.numpy() for e in embeddings]",
            4,
            13,
            "an item of parameter `embeddings`",
        ),
        # A module given an input that may be on a device, or moved on some paths.
        Invalid(
            "import torch\ndef embed(use_gpu, array, encoder):\n    if use_gpu:\n"
            "        batch = torch.from_numpy(array).cuda()\n    else:\n"
            "        batch = torch.from_numpy(array)\n    out = encoder(batch).detach()\n"
            "    return out.numpy()",
            8,
            12,
            "on some paths",
        ),
        Invalid(
            "import torch\nfrom torch import nn\ndef predict(use_gpu, x):\n"
            "    model = nn.Linear(2, 2)\n    if use_gpu:\n        model = model.cuda()\n"
            "    return model(x).detach().numpy()",
            7,
            12,
            "output of `model`",
        ),
        Invalid(
            # a torch layer's weight, in the module's code, lives where the module was moved
            "import torch\nfrom torch import nn\nclass Tagger(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.crf = nn.Linear(3, 3)\n"
            "    def forward(self, x):\n        x = x.to(self.crf.weight.device)\n"
            "        return x, self.crf.weight.detach().numpy()",
            9,
            19,
            "(`self.crf.weight`, a parameter of the module)",
            fixed="import torch\nfrom torch import nn\nclass Tagger(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.crf = nn.Linear(3, 3)\n"
            "    def forward(self, x):\n        x = x.to(self.crf.weight.device)\n"
            "        return x, self.crf.weight.detach().cpu().numpy()",
        ),
        # one call passes a tensor on a device: the typed parameter keeps its contract
        Invalid(
            "import torch\ndef show(t: torch.Tensor):\n    return t.numpy()\n"
            "def run(model):\n    show(torch.randn(3))\n    show(torch.randn(3).cuda())",
            3,
            12,
        ),
        # a torch layer's output is one tensor, on the layer's device
        Invalid(
            "import numpy as np\nfrom torch import nn\nnet = nn.Linear(4, 2).to(device)\n"
            "outs = [net(x.to(device)) for x in batches]\nm = np.mean(outs[0])",
            5,
            13,
            "output of `net`",
        ),
        # a tensor whose device the code reads lives on a device chosen elsewhere
        Invalid(
            "import torch\ndef td_errors(policy, batch):\n    q = policy(batch).values\n"
            "    r = torch.tensor(batch.returns, device=q.device)\n    td = r - q\n"
            "    return td.detach().numpy()",
            6,
            12,
            "(created on `q.device` at line 4)",
        ),
        # indexed (maybe down to one element) and combined with what may be an array: if
        # `r - q` exists at all, it is on `q`'s device
        Invalid(
            "import numpy as np\nimport torch\ndef td_errors(policy, batch):\n"
            "    q = policy(batch).values\n    q = q[np.arange(len(q)), batch.act]\n"
            "    r = batch.returns\n    if isinstance(r, np.ndarray):\n"
            "        r = torch.tensor(r, device=q.device)\n    return (r - q).detach().numpy()",
            9,
            12,
            "`q`, whose device is read at line 8",
        ),
        # moved on one path only: the bug waits for the run with a GPU
        Invalid(
            "import torch\nx = torch.zeros(3)\nif use_gpu:\n    x = x.cuda()\na = x.data.numpy()",
            5,
            5,
            "(moved with `.cuda()` to `cuda` at line 4, on some paths)",
        ),
        # a typed API: its caller's tensors, wherever they live (a metric on a GPU)
        Invalid(
            "from torch import Tensor\ndef score(preds: Tensor) -> float:\n"
            "    return auc(preds.numpy())",
            3,
            16,
            "parameter `preds`",
        ),
        Invalid(
            "import torch\nx = torch.zeros(3).to(device)\na = x.numpy()",
            3,
            5,
            "`x` may be on a GPU (moved to `device` at line 2)",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2).cuda()\n"
            "preds = model(torch.ones(3).cuda())\narray = preds.detach().numpy()",
            5,
            9,
            "`preds.detach().cpu().numpy()`",
            fixed="import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2).cuda()\n"
            "preds = model(torch.ones(3).cuda())\narray = preds.detach().cpu().numpy()",
        ),
        Invalid(
            "import numpy as np\nimport torch\nx = torch.zeros(3).to(device)\nm = np.mean(x)",
            4,
            13,
            "`numpy.mean` needs an array in host memory",
            fixed="import numpy as np\nimport torch\nx = torch.zeros(3).to(device)\n"
            "m = np.mean(x.cpu().numpy())",
        ),
        Invalid(
            "import numpy as np\nimport torch\nx = torch.zeros(3).to(device)\nm = np.exp(x)",
            4,
            12,
            "`numpy.exp` converts it",
            fixed="import numpy as np\nimport torch\nx = torch.zeros(3).to(device)\n"
            "m = np.exp(x.cpu())",
        ),
        Invalid(
            "import torch\ndef roc_auc(y_preds: torch.Tensor, y_targets):\n"
            "    return score(y_targets.numpy(), y_preds.cpu().numpy())\n"
            "metric = EpochMetric(roc_auc, device=device)",
            3,
            18,
            "parameter `y_targets`",
            fixed="import torch\ndef roc_auc(y_preds: torch.Tensor, y_targets):\n"
            "    return score(y_targets.cpu().numpy(), y_preds.cpu().numpy())\n"
            "metric = EpochMetric(roc_auc, device=device)",
        ),
        Invalid(
            "import torch\ndef draw(sem_seg):\n    if isinstance(sem_seg, torch.Tensor):\n"
            "        sem_seg = sem_seg.numpy()\n    return sem_seg\n"
            "draw(model(images.to(device)))",
            4,
            19,
            "parameter `sem_seg`",
        ),
        Invalid(
            "import numpy as np\nimport torch\na = torch.ones(2).cuda()\n"
            "b = torch.ones(2).cuda()\ns = np.stack([a, b])",
            5,
            15,
        ),
        # the advice puts an expression in parentheses before `.cpu()`
        Invalid(
            "import numpy as np\nimport torch\nm = torch.ones(2).to(device)\n"
            "mask = np.uint8(m * 255)",
            4,
            17,
            "call `.cpu()` first: `(m * 255).cpu()`",
        ),
        # a list of device tensors, kept through `append`
        Invalid(
            "import numpy as np\nimport torch\nouts = []\nfor _ in range(3):\n"
            "    outs.append(torch.ones(2).cuda())\ns = np.stack(outs)",
            6,
            14,
            "`outs` holds tensors that may be on a GPU",
        ),
    )

    @classmethod
    def may_fire_in(cls, facts: SyntaxFacts) -> bool:
        return facts.device_source or facts.tensor_parameter or facts.forward_method

    def begin_analysis(self, analysis: FlowContext) -> None:
        super().begin_analysis(analysis)
        self._defined: Optional[set[str]] = None  # the names of the file's functions

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        qualified = self.analysis.names.qualified_syntax_name(func) or ""
        if qualified.startswith("numpy."):
            if qualified not in _INSPECTING:
                self._check_numpy_function(node, qualified)
            return
        if _plotting_call(func, qualified) and not self._defined_here(func):
            shown = qualified or self.analysis.source_of(func)  # `axes[0].imshow`
            self._check_numpy_function(node, shown)
            return
        if not isinstance(func, ast.Attribute) or func.attr != "numpy" or has_arguments(node):
            return
        receiver = self.analysis.flow.value_of(func.value)
        if not _may_be_on_gpu(receiver):
            return
        name = self.analysis.source_of(func.value)
        citations = Citations()
        evidence = _evidence(citations, receiver)
        self.report(
            node,
            f"`{name}` may be on a GPU ({evidence}) and `.numpy()` needs host memory: "
            f"call `.cpu()` first: `{_operand(name, func.value)}.cpu().numpy()`",
            citations.cited(),
            RawFix(
                Applicability.SAFE,
                "Insert `.cpu()`",
                # `.cpu()` before the method's name: past any parentheses around the receiver.
                (NodeEdit.insert_before(method_name(func), "cpu()."),),
            ),
        )

    def _defined_here(self, func: ast.expr) -> bool:
        """`viewer.imshow(t)` where the file defines an `imshow` of its own: the analysis reads
        that code on its own."""
        if not isinstance(func, ast.Attribute):
            return False
        if self._defined is None:
            self._defined = {
                node.name
                for node in nodes_below(self.analysis.tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        return func.attr in self._defined

    def _check_numpy_function(self, node: ast.Call, qualified: str) -> None:
        """`np.mean(t)`, `np.stack([a, b])`: numpy converts its tensor arguments in host memory."""
        for argument in _converted_arguments(node):
            value = self.analysis.flow.value_of(argument)
            if value.kind is Kind.SEQUENCE:
                self._check_sequence(argument, value, qualified)
                return
            if value.kind is not Kind.TENSOR or value.module_output or not _may_be_on_gpu(value):
                continue  # a module's output may be an array already (a pipeline's images)
            name = self.analysis.source_of(argument)
            citations = Citations()
            evidence = _evidence(citations, value)
            # A reduction calls the tensor's own method with numpy's keywords (`t.mean(axis=
            # None, ...)`), which fails on any device: it needs the array itself.
            reduction = qualified in _METHOD_REDUCTIONS
            converted = ".cpu().numpy()" if reduction else ".cpu()"
            fix = None
            if isinstance(argument, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
                fix = RawFix(
                    Applicability.SAFE,
                    f"Insert `{converted}`",
                    (NodeEdit.insert_after(argument, converted),),
                )
            what = (
                "needs an array in host memory (given a tensor, it calls the tensor's own method "
                "with numpy's keywords, which fails on any device)"
                if reduction
                else "converts it to an array in host memory"
            )
            self.report(
                argument,
                f"`{name}` may be on a GPU ({evidence}) and `{qualified}` {what}: call "
                f"`{converted}` first: `{_operand(name, argument)}{converted}`",
                citations.cited(),
                fix,
            )
            return

    def _check_sequence(self, argument: ast.expr, value: Value, qualified: str) -> None:
        """`np.stack(outputs)` where every tensor the list holds is on a device."""
        held = sequence_items(value)
        if not held or not all(
            item.kind is Kind.TENSOR and item.where is Where.DEVICE and not item.module_output
            for item in held
        ):
            return
        name = self.analysis.source_of(argument)
        citations = Citations()
        evidence = citations.of(held[0].placement)
        self.report(
            argument,
            f"`{name}` holds tensors that may be on a GPU ({evidence}) and `{qualified}` "
            "converts them to an array in host memory: move each with `.cpu()` first "
            f"(`[t.cpu() for t in {name}]`)",
            citations.cited(),
        )


def _operand(source: str, node: ast.expr) -> str:
    """``source`` as the receiver of a method: `(mask < threshold)`, but `mask` or `out[0]`."""
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        return source
    return f"({source})"


def _may_be_on_gpu(value: Value) -> bool:
    """On a device, or on the caller's device: a tensor parameter, `forward`'s input, what a
    module's layers compute. Library code runs wherever its caller keeps the data."""
    if value.where in (Where.DEVICE, Where.MAYBE_DEVICE):
        return True
    return value.where is Where.INPUT and value.kind is Kind.TENSOR


def _evidence(citations: Citations, value: Value) -> str:
    cited = citations.of(value.placement)
    return f"{cited}, on some paths" if value.where is Where.MAYBE_DEVICE else cited


# numpy reductions that, given a tensor, call its method with numpy's keywords
# (`t.mean(axis=None, dtype=None, out=None)`), which torch refuses: a `TypeError` on any device
# (checked with numpy 2.4 and torch 2.13).
_METHOD_REDUCTIONS = frozenset(
    f"numpy.{name}" for name in "mean sum std var prod max min amax amin any all".split()
)
# numpy functions that look at their argument without converting it: a type test, or an
# attribute read first (`np.shape(t)` returns `t.shape`, `np.ndim(t)` returns `t.ndim`), or
# the tensor's own method called (`np.squeeze(t)` returns `t.squeeze()`, on its device; the
# others numpy calls so fall back to an array when the method refuses numpy's arguments).
_INSPECTING = frozenset(
    {
        "numpy.isscalar",
        "numpy.iterable",
        "numpy.ndim",
        "numpy.shape",
        "numpy.size",
        "numpy.squeeze",
        "numpy.nonzero",
        "numpy.swapaxes",
    }
)


# matplotlib converts what it plots with `np.asarray`, which refuses a tensor off the CPU.
_PYPLOT_PLOTTING = frozenset(f"matplotlib.pyplot.{name}" for name in PLOTTING_FUNCTIONS)
# Methods that show an image, whatever shows it (an `Axes`, `cv2`): none takes a GPU tensor.
_IMAGE_SHOWING = frozenset({"imshow", "matshow"})
_IMAGE_LIBRARIES = ("matplotlib.", "cv2.", "skimage.")


def _plotting_call(func: ast.expr, qualified: str) -> bool:
    """A call that draws its arguments in host memory: `plt.plot(...)`, `ax[i].imshow(...)`;
    not a helper of the project named `imshow`."""
    if qualified in _PYPLOT_PLOTTING:
        return True
    if not isinstance(func, ast.Attribute) or func.attr not in _IMAGE_SHOWING:
        return False
    if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return False
    # (`utils.imshow`, `self.imshow`: code the analysis reads on its own)
    return not qualified or qualified.startswith(_IMAGE_LIBRARIES)


def _converted_arguments(node: ast.Call) -> list[ast.expr]:
    """The positional arguments of a numpy call, with the items of a list or tuple literal."""
    found: list[ast.expr] = []
    for passed in node.args:
        if isinstance(passed, (ast.List, ast.Tuple)):
            found.extend(item for item in passed.elts if not isinstance(item, ast.Starred))
        elif not isinstance(passed, ast.Starred):
            found.append(passed)
    return found
