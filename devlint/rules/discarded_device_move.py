from __future__ import annotations

import ast

from devlint.analysis.calls import converts_dtype
from devlint.analysis.operations import Citations
from devlint.analysis.syntax_screen import SyntaxFacts
from devlint.analysis.torch_api import DEVICE_MOVES
from devlint.analysis.values import Kind, Where
from devlint.context import NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import FlowRule, Invalid


class DiscardedDeviceMove(FlowRule):
    """
    ## What it does
    Flags `x.to(...)`, `x.cuda()` and `x.cpu()` written as a statement of their
    own when `x` is a tensor.

    ## Why is this bad?
    `Tensor.to` returns a moved copy and leaves `x` where it was; the copy is
    thrown away. Only `nn.Module.to` works in place. The code then runs on the
    wrong device, or fails later with "Expected all tensors to be on the same
    device".

    The rule fires only when the receiver is known to be a tensor (a factory
    call, a DataLoader batch, the result of tensor operations). It never fires
    on modules (`nn.Module` subclasses, `nn.Sequential`, `resnet18()`,
    `from_pretrained(...)`) or on objects of unknown kind.

    ## Example
    ```python
    image = torch.as_tensor(array)
    image.to(device)
    ```

    ## Use instead
    ```python
    image = torch.as_tensor(array)
    image = image.to(device)
    ```

    ## Fix safety
    `x.to(d)` becomes `x = x.to(d)` when `x` is a plain name: an **unsafe** fix,
    since code below that relied on `x` staying where it was changes behaviour.
    """

    code = "DEV004"
    name = "discarded-device-move"
    summary = "tensor device move whose result is thrown away"
    fixable = True
    trigger_tokens = (".to(", ".cuda(", ".cpu(")

    VALID = (
        # what a class held in a name constructs is an object, not a tensor
        "def sample(pipe_class, vae, unet, device):\n    vae.to(device)\n"
        "    pipeline = pipe_class(vae=vae, unet=unet)\n    pipeline.to(device)",
        # a model's `.device` and `.requires_grad_()` say nothing of a tensor: a model's
        # `.to()` works in place
        "def cache_outputs(vae, unet):\n    vae_device = vae.device\n    vae.requires_grad_(False)\n"
        "    vae.to('cpu')\n    unet.to('cpu')\n    vae.to(vae_device)",
        "import torch\nx = torch.zeros(3)\nx = x.to(device)",
        "from torch import nn\nmodel = nn.Linear(2, 2)\nmodel.to(device)",
        "from torch import nn\nclass Net(nn.Module):\n    pass\nnet = Net()\nnet.to(device)",
        "import torch\nseq = torch.nn.Sequential(torch.nn.ReLU())\nseq.cuda()",
        "import torchvision\nmodel = torchvision.models.resnet18()\nmodel.to(device)",
        "model = AutoModel.from_pretrained('bert')\nmodel.to(device)",
        "inputs = tokenizer(text, return_tensors='pt')\ninputs.to(device)",
        "def f(x):\n    x.to(device)",
        "from models import Net\nnet = Net()\nnet.cuda()",
        "import torch\nx = torch.zeros(3)\ny = x.to(device)",
        "import torch\nx = torch.zeros(3)\nprint(x.to(device))",
        "import torch\ntorch.zeros(2).cuda()",
        # a sibling that is used as a module, or named as one, is no evidence of data
        "for model, x in pairs:\n    x = x.to(dev)\n    model.to(dev)\n    model(x)",
        "for net, x in pairs:\n    x = x.to(dev)\n    net.to(dev)",
        "for a, b in pairs:\n    a.to(dev)\n    b.to(dev)",
    )
    INVALID = (
        Invalid(
            "import torch\nimage = torch.as_tensor(array)\nimage.to(cfg.MODEL.DEVICE)",
            3,
            1,
            "`image` stays on the CPU (created on the CPU by `torch.as_tensor(...)` at line 2)",
        ),
        Invalid("import torch\nx = torch.randn(2).cuda()\nx.cpu()", 3, 1, "`x = x.cpu()`"),
        Invalid(
            "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
            "for x, y in loader:\n    x.to(device)",
            4,
            5,
        ),
        Invalid(
            "import torch\ncentroids = torch.rand(3, 4)\ncentroids.cuda()",
            3,
            1,
            fixed="import torch\ncentroids = torch.rand(3, 4)\ncentroids = centroids.cuda()",
        ),
        Invalid(
            "import torch\ndef run(image, device):\n    if not isinstance(image, torch.Tensor):\n"
            "        image = torch.as_tensor(image)\n    image.to(device)",
            5,
            5,
            "`image` stays where it was",
        ),
        Invalid(
            "for a, b in pairs:\n    a = a.to(dev)\n    b.to(dev)",
            3,
            5,
            "`b` stays where it was; assign it: `b = b.to(dev)`",
            fixed="for a, b in pairs:\n    a = a.to(dev)\n    b = b.to(dev)",
        ),
        Invalid(
            "import torch\nx = torch.zeros(3).float()\nx.to(torch.float16)",
            3,
            1,
            "returns a converted copy that is thrown away: `x` keeps its dtype",
        ),
        Invalid(
            "import torch\nx = torch.rand(5, 6)\nx.to(dtype=torch.float16)",
            3,
            1,
            "returns a converted copy that is thrown away: `x` keeps its dtype",
        ),
    )

    @classmethod
    def may_fire_in(cls, facts: SyntaxFacts) -> bool:
        return facts.discarded_move

    def visit_Expr(self, node: ast.Expr) -> None:
        call = node.value
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return
        if call.func.attr not in DEVICE_MOVES:
            return
        if not isinstance(call.func.value, (ast.Name, ast.Attribute, ast.Subscript)):
            return  # `torch.zeros(2).cuda()`: no later code could read what stayed behind
        receiver = self.analysis.flow.value_of(call.func.value)
        if receiver.kind is not Kind.TENSOR:
            return
        name = self.analysis.source_of(call.func.value)
        citations = Citations()
        if converts_dtype(call, self.analysis.names):
            copy, stays = "a converted copy", f"`{name}` keeps its dtype"
        else:
            evidence = citations.of(receiver.placement)  # cited only where the message uses it
            place = "on the CPU" if receiver.where is Where.CPU else "where it was"
            copy = "a moved copy"
            stays = f"`{name}` stays {place}" + (f" ({evidence})" if evidence else "")
        fix = None
        if isinstance(call.func.value, ast.Name):
            # Before the statement: it starts at the outermost parenthesis, the call inside it.
            assignment = NodeEdit.insert_before(node, f"{name} = ")
            fix = RawFix(Applicability.UNSAFE, f"Assign the result to `{name}`", (assignment,))
        self.report(
            call,
            f"`{self.analysis.source_of(call)}` returns {copy} that is thrown away: {stays}; "
            f"assign it: `{name} = {self.analysis.source_of(call)}`",
            citations.cited(),
            fix,
        )
