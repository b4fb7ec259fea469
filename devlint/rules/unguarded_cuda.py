from __future__ import annotations

from typing import Optional

import libcst as cst

from devlint.analysis.devices import argument, cuda_literal
from devlint.rules.base import Invalid, Rule

_GUARDED_DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'


class UnguardedCuda(Rule):
    """
    ## What it does
    Flags code that puts something on CUDA with no availability check around it:
    `.cuda()`, `.to("cuda")`, `.to("cuda:0")`, `torch.device("cuda")` and
    `device="cuda"` arguments.

    ## Why is this bad?
    On a machine without a GPU (a CPU-only CI runner, a colleague's laptop) the
    call raises "Torch not compiled with CUDA enabled" or "Found no NVIDIA
    driver". The code only works on the author's machine.

    Any visible guard counts: `if torch.cuda.is_available():` (and the `else`
    of a negated test), a flag computed from it (`use_gpu = ...`, then
    `if use_gpu:`), a device flag the user controls (`if args.cuda:`), an early
    exit (`if not torch.cuda.is_available(): return`), an `assert`, a ternary,
    a GPU-only test decorator or `pytestmark`, and a `try` that catches the
    error. A device held in a variable, `x.to(device)`, is never flagged.

    ## Example
    ```python
    model = Net().cuda()
    x = torch.zeros(3, device="cuda")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    x = torch.zeros(3, device=device)
    ```

    ## Fix safety
    No automatic fix yet.
    """

    code = "DEV001"
    name = "unguarded-cuda"
    summary = "CUDA used with no availability check"
    trigger_tokens = ("cuda",)

    VALID = (
        "x = x.to(device)",
        "if torch.cuda.is_available():\n    model.cuda()",
        "import torch\nif torch.cuda.device_count() > 0:\n    x = x.cuda()",
        "import torch\nif not torch.cuda.is_available():\n    pass\nelse:\n    x = x.cuda()",
        "import torch\nif torch.cuda.device_count() == 0:\n    x = x\nelif True:\n    x = x.cuda()",
        "import torch\nuse_gpu = torch.cuda.is_available()\nif use_gpu:\n    net.cuda()",
        "import torch\n"
        "args.cuda = not args.no_cuda and torch.cuda.is_available()\n"
        "if args.cuda:\n    model.cuda()",
        "if args.cuda:\n    model.cuda()",
        "if self.on_gpu:\n    batch = batch.cuda()",
        'if device.type == "cuda":\n    x = x.to("cuda")',
        "if x.is_cuda:\n    y = y.cuda()",
        "if not self.cfg.common.cpu:\n    model.cuda()",
        "import torch\ndef f(x):\n"
        "    if not torch.cuda.is_available():\n        return x\n    return x.cuda()",
        "import sys, torch\nif not torch.cuda.is_available():\n    sys.exit(1)\nmodel.cuda()",
        "import pytest, torch\n"
        "def test_it():\n    if not torch.cuda.is_available():\n        pytest.skip('gpu')\n"
        "    torch.zeros(2, device='cuda')",
        "import torch\nassert torch.cuda.is_available()\nmodel.cuda()",
        'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        "import torch\nx = x.cuda() if torch.cuda.is_available() else x",
        "import torch\nx = torch.cuda.is_available() and x.cuda()",
        "import unittest, torch\n"
        "class T(unittest.TestCase):\n"
        "    @unittest.skipIf(not torch.cuda.is_available(), 'needs a GPU')\n"
        "    def test_move(self):\n        torch.ones(1).cuda()",
        "import pytest, torch\n"
        "@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "def test_move():\n    torch.ones(1).cuda()",
        "@requires_cuda\ndef test_move():\n    torch.ones(1).cuda()",
        "import pytest, torch\n"
        "pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "def test_move():\n    torch.ones(1).cuda()",
        "def to_gpu(x):\n    return x.cuda()",
        "import unittest, torch\n"
        "class DistributedTest(unittest.TestCase):\n"
        "    def setUp(self):\n"
        "        if not torch.cuda.is_available():\n"
        "            raise unittest.SkipTest('CUDA not available')\n"
        "class TestBroadcast(DistributedTest):\n"
        "    def test_it(self):\n        torch.rand(5).cuda()",
        "try:\n    x = x.cuda()\nexcept RuntimeError:\n    pass",
        "import torch\n"
        "class Trainer:\n"
        "    def __init__(self):\n        self.use_cuda = torch.cuda.is_available()\n"
        "    def step(self, x):\n"
        "        if self.use_cuda:\n            x = x.cuda()\n        return x",
        "x = torch.zeros(3, device=device)",
        "x = x.to(args.device)",
        "x = x.to('cpu')",
        "# model.cuda()",
        "s = 'model.cuda()'",
    )
    INVALID = (
        Invalid("model = Net().cuda()", 1, 9, "`Net().cuda()`"),
        Invalid("x = x.to('cuda')", 1, 5, "`.to('cuda')`"),
        Invalid('x = x.to("cuda:0")', 1, 5),
        Invalid("import torch\ndevice = torch.device('cuda')", 2, 10, "torch.device"),
        Invalid("import torch\nx = torch.zeros(3, device='cuda')", 2, 20, "device='cuda'"),
        Invalid("import torch\nif torch.cuda.is_available():\n    pass\nelse:\n    x.cuda()", 5, 5),
        Invalid("import torch\nif torch.cuda.is_available():\n    pass\nx = x.cuda(0)", 4, 5),
        Invalid("def f(x):\n    return x.cuda()\nif args.cuda:\n    pass", 2, 12),
        Invalid("try:\n    x = x.cuda()\nexcept KeyboardInterrupt:\n    pass", 2, 9),
        Invalid("import torch as t\ndev = t.device('cuda', 0)", 2, 7),
        Invalid("xs = map(lambda t: t.cuda(), xs)", 1, 20),
        Invalid("import torch\ndef get_device():\n    return torch.device('cuda')", 3, 12),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.guards.guarded:
            return
        construct = self._cuda_construct(node)
        if construct is not None:
            self.report(
                node,
                f"{construct} fails on a machine without CUDA and no availability check guards it; "
                f"move to a chosen device instead: {_GUARDED_DEVICE}",
            )
            return
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                literal = cuda_literal(arg.value)
                if literal is not None:
                    self.report(
                        arg,
                        f"`device={self.context.source_of(arg.value)}` fails on a machine "
                        f"without CUDA and no availability check guards it; pass a device "
                        f"chosen at run time: {_GUARDED_DEVICE}",
                    )

    def _cuda_construct(self, node: cst.Call) -> Optional[str]:
        """How the call is written, when it is one of the CUDA-only constructs."""
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "cuda" and self.context.names.qualified_name(func) is None:
                return f"`{self.context.source_of(node)}`"
            if method == "to":
                target = argument(node, 0, "device")
                if target is not None and cuda_literal(target.value) is not None:
                    return f"`.to({self.context.source_of(target.value)})`"
        if self.context.names.qualified_name(func) == "torch.device":
            target = argument(node, 0, "type")
            if target is not None and cuda_literal(target.value) is not None:
                return f"`{self.context.source_of(node)}`"
        return None
