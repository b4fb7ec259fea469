from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.call_screen import CallFacts
from devlint.analysis.device_cases import device_cases, is_parametrize, runs_in_case
from devlint.analysis.device_fix import DeviceChoice, DeviceChooser
from devlint.analysis.devices import argument, cuda_literal, string_value
from devlint.analysis.guards import checks_availability
from devlint.analysis.names import dotted_name
from devlint.context import FileContext, NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import Invalid, Rule
from devlint.traversal import descendants

# `.cuda(` or a string that starts with "cuda": every construct the rule reports holds one.
_CUDA_TEXT = re.compile(r"""\.\s*cuda\s*\(|["']cuda""")

# `parser.add_argument(...)` (argparse) and `@click.option(...)`: command-line options.
_OPTION_METHODS = frozenset({"add_argument", "option"})

# A test run for CUDA and for an NPU, whose skip marks are about each device.
_NPU_CASE_TEST = (
    "import pytest, torch\n"
    "@pytest.mark.parametrize('device', [\n"
    "    pytest.param('cuda', marks=pytest.mark.skipif(not torch.cuda.is_available(), reason='')),\n"
    "    pytest.param('npu', marks=pytest.mark.skipif(not HAS_NPU, reason='')),\n"
    "])\n"
    "@pytest.mark.parametrize('dtype', [torch.half, torch.float])\n"
    "def test_group(device, dtype):\n"
    "    if device == 'npu' and dtype == torch.half:\n"
    "        return\n"
)


class UnguardedCuda(Rule):
    """
    ## What it does
    Flags code that puts something on CUDA with no availability check around it:
    `.cuda()`, `.to("cuda")`, `.to("cuda:0")`, `torch.device("cuda")` and
    `device="cuda"` arguments, and a command-line device option whose default is
    CUDA (`parser.add_argument("--device", default="cuda")`, `"cuda:0"`, or a
    `click.option`) in a file that never checks whether CUDA is there.

    ## Why is this bad?
    On a machine without a GPU (a CPU-only CI runner, a colleague's laptop) the
    call raises "Torch not compiled with CUDA enabled" or "Found no NVIDIA
    driver". The code only works on the author's machine.

    Any visible guard counts: `if torch.cuda.is_available():` (and the `else`
    of a negated test), a flag computed from it (`use_gpu = ...`, then
    `if use_gpu:`), a device flag the user controls (`if args.cuda:`), an early
    exit (`if not torch.cuda.is_available(): return`), an `assert`, a ternary,
    a GPU-only test decorator or `pytestmark` (on the test or on its class,
    `@pytest.mark.skipif(...)`, `@unittest.skipIf`/`skipUnless`, or a marker kept
    in a variable such as `requires_gpu = pytest.mark.skipif(...)`), the
    `marks=` of a `pytest.param(...)` for the values of that case, a fixture
    that calls `pytest.skip` without CUDA and that the test takes as a
    parameter (or names in `usefixtures`), and a `try` that catches the error.
    A test's name is no guard: `def test_forward_cuda():` with no marker is
    exactly what fails on a CPU-only CI runner. A device held in a variable,
    `x.to(device)`, is never flagged.

    A test parametrized over devices
    (`@pytest.mark.parametrize("device", ["cpu", "cuda"])`, or
    `pytest.param("npu", marks=...)`) runs its body once per device: a `.cuda()`
    there runs for the CPU or NPU case too, and fails on a machine without CUDA,
    whatever skip marks the CUDA case carries. It is reported where the body
    surely reaches it in such a case: the `if` statements around it and the
    exits before it (an `if` or `else` that leaves, an `assert`) are read with
    the parameter bound to that device
    (`if device == "cuda":` leaves it out; a test of something else, such as
    `dtype`, may go either way). A skip marker on the whole test, on its class
    or module, a skipping fixture, or an availability check around it silences
    it.

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
    `.cuda()` becomes `.to(device)`, `.to("cuda")` becomes `.to(device)` and
    `device="cuda"` becomes `device=device`. The fix is **safe** only where the
    device reused is known to fall back when no accelerator is there: a `device`
    (or `self.device`) defined by an availability check devlint recognises
    (`torch.device("cuda" if torch.cuda.is_available() else "cpu")`, the
    `torch.accelerator` choice), or Lightning's `self.device`. Where the module's
    own `device = "cuda"` (or `torch.device("cuda")`, `"cuda:0"`) is the cause,
    that definition is guarded and reused: a safe fix. A `device` parameter (which
    may be `"cpu"` by default) or a device of unknown origin (`args.device`) is
    reused as an **unsafe** fix; a name holding something else (`device = 3`) is
    not reused. Where nothing fits, one definition is inserted after the imports,
    with a blank line between (adding `import torch` where isort puts it, keeping
    the alias in use, never reusing a name the file has): an **unsafe** fix,
    applied with `--unsafe-fixes`.

    The device written follows the project's torch floor (see "Device-agnostic
    code" in the README): `torch.accelerator.current_accelerator(check_available=True)
    or torch.device("cpu")` from torch 2.7, the `is_available()` form on 2.6, the
    CUDA, MPS, CPU chain from 1.12, and CUDA or the CPU where the floor is unknown,
    older, set by `accelerators = "cuda"`, or where the file uses float64 (which MPS
    lacks). `.cuda(i)` and `"cuda:N"` keep their index under a CUDA guard: safe
    fixes.
    An option's default `"cuda"` becomes
    `"cuda" if torch.cuda.is_available() else "cpu"` (safe; with no `torch`
    imported there is no fix).
    """

    code = "DEV001"
    name = "unguarded-cuda"
    summary = "CUDA used with no availability check"
    fixable = True
    trigger_tokens = ("cuda",)
    required_patterns = (_CUDA_TEXT,)

    @classmethod
    def may_fire_in_tree(cls, facts: CallFacts, source: str) -> bool:
        # What it reports is a call: `.cuda()`, or one passing a "cuda" literal where a device
        # goes (`.to("cuda")`, `torch.device("cuda")`, `device="cuda"`, an option's default).
        callees = facts.cuda_literal_callees
        return (
            "cuda" in facts.called_methods
            or facts.cuda_device_keyword
            or not callees.isdisjoint(("to", "device", *_OPTION_METHODS))
        )

    VALID = (
        # Tests over devices: the CUDA case alone, an early skip, a whole test needing CUDA.
        "import pytest, torch\n@pytest.mark.parametrize('device', ['cpu', 'cuda'])\n"
        "def test_move(device):\n    if device == 'cuda':\n        x = torch.zeros(2).cuda()",
        "import pytest, torch\n@pytest.mark.parametrize('device', ['cpu', 'cuda'])\n"
        "def test_move(device):\n    if device != 'cuda':\n        pytest.skip('gpu')\n"
        "    x = torch.zeros(2).cuda()",
        "import pytest, torch\n@pytest.mark.skipif(not torch.cuda.is_available(), reason='')\n"
        "@pytest.mark.parametrize('device', ['cpu', 'cuda'])\n"
        "def test_move(device):\n    x = torch.zeros(2).cuda()",
        "import pytest, torch\n@pytest.mark.parametrize('device', ['cpu', 'cuda'])\n"
        "def test_move(device):\n    if torch.cuda.is_available():\n        x = torch.zeros(2).cuda()",
        "import pytest, torch\n@pytest.mark.parametrize('device', ['cpu', 'cuda'])\n"
        "def test_move(device):\n    gpu = torch.cuda.is_available()\n    if gpu:\n"
        "        x = torch.zeros(2).cuda()",
        "import pytest, torch\n@pytest.mark.parametrize('device', ['cpu', 'cuda'])\n"
        "def test_move(device):\n    if device == 'cuda':\n        pass\n    else:\n"
        "        pytest.skip('gpu')\n    x = torch.zeros(2).cuda()",
        "import pytest, torch\n@pytest.mark.parametrize('device', ['cpu', 'cuda'])\n"
        "def test_move(device):\n    assert torch.cuda.is_available()\n    x = torch.zeros(2).cuda()",
        "import pytest, torch\n@pytest.mark.parametrize('device', ['cpu', 'cuda'])\n"
        "def test_move(device):\n    x = torch.zeros(2).cuda() if device == 'cuda' else None",
        "import pytest\nimport torch\ndef test_no_gpu():\n    with pytest.raises(RuntimeError):\n        torch.zeros(3).cuda()",
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
        "@RunIf(min_cuda_gpus=2)\ndef test_cuda_current_device():\n    model.cuda(1)",
        "import pytest, torch\n"
        "pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "def test_move():\n    torch.ones(1).cuda()",
        "def to_gpu(x):\n    return x.cuda()",
        # a validation listing no CPU value passes GPUs only; a request to offload is no place
        "import torch\ndef run(x, device):\n    if device not in ('cuda', 'cuda:0'):\n"
        "        raise ValueError(device)\n    return x.cuda()",
        "import torch\ndef restore(p, offload_to_cpu):\n    if offload_to_cpu:\n        p.cuda()",
        # ... while its other branch is the device's
        "import torch\ndef place(model, args):\n    if args.cpu:\n        return model\n"
        "    return model.cuda()",
        "import torch\ndef place(model, args):\n    if not args.use_cpu:\n        model.cuda()",
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
        "import pytest, torch\n"
        "@pytest.mark.parametrize('device', ['cpu', pytest.param(torch.device('cuda'), "
        "marks=pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu'))])\n"
        "def test_move(device):\n    pass",
        "import pytest, torch\n"
        "CASES = [pytest.param(torch.device('cuda'), marks=[pytest.mark.slow, "
        "pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')])]",
        "import pytest, torch\n"
        "needs_hw = pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "CASES = [pytest.param(torch.device('cuda'), marks=needs_hw)]\n"
        "@needs_hw\ndef test_move():\n    torch.ones(1).cuda()",
        "import pytest, torch\n"
        "@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "class TestMoves:\n    def test_move(self):\n        torch.ones(1).cuda()",
        "import unittest, torch\n"
        "@unittest.skipUnless(torch.cuda.is_available(), 'needs a GPU')\n"
        "class TestMoves(unittest.TestCase):\n    def test_move(self):\n        torch.ones(1).cuda()",
        "import pytest, torch\n"
        "@pytest.fixture\ndef hardware():\n"
        "    if not torch.cuda.is_available():\n        pytest.skip('no GPU')\n    return 0\n"
        "def test_move(hardware):\n    torch.ones(1).cuda()",
        "import pytest, torch\n"
        "@pytest.fixture(name='hw')\ndef hardware_fixture():\n"
        "    if torch.cuda.device_count() == 0:\n        pytest.skip('no GPU')\n"
        "@pytest.mark.usefixtures('hw')\ndef test_move():\n    torch.ones(1).cuda()",
        "import argparse, torch\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')",
        "import argparse, torch\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--device', default='cuda')\nargs = parser.parse_args()\n"
        "device = torch.device(args.device if torch.cuda.is_available() else 'cpu')",
        "import argparse\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--backend', default='cuda')",
        "import argparse\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--device', default='cpu')",
        "x = torch.zeros(3, device=device)",
        "x = x.to(args.device)",
        "x = x.to('cpu')",
        "# model.cuda()",
        "s = 'model.cuda()'",
    )
    INVALID = (
        Invalid(
            "import torch\nmodel = Net().cuda()",
            2,
            9,
            "`Net().cuda()`",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "model = Net().to(device)",
        ),
        # the module's `device = "cuda"` is the cause: guarded where it is defined, then reused
        Invalid(
            'import torch\ndevice = "cuda:0"\nmodel = Net().cuda()',
            3,
            9,
            fixed='import torch\ndevice = "cuda:0" if torch.cuda.is_available() else "cpu"\n'
            "model = Net().to(device)",
        ),
        Invalid(
            'import torch\ndevice = "cuda"\ndef f(x):\n    return x.cuda()',
            4,
            12,
            fixed='import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
            "def f(x):\n    return x.to(device)",
        ),
        # `device = 3` is no device to reuse
        Invalid(
            "import torch\n\ndevice = 3\nx = x.cuda()",
            4,
            5,
            fixed="import torch\n\ntorch_device = torch.device("
            '"cuda" if torch.cuda.is_available() else "cpu")\n\n'
            "device = 3\nx = x.to(torch_device)",
        ),
        Invalid(
            "import torch\ndef train(model, device):\n    model.cuda()",
            3,
            5,
            fixed="import torch\ndef train(model, device):\n    model.to(device)",
        ),
        Invalid("x = x.to('cuda')", 1, 5, "`.to('cuda')`"),
        Invalid(
            "import torch\ndevice = torch.device(args.device)\nx = x.to('cuda', non_blocking=True)",
            3,
            5,
            fixed="import torch\ndevice = torch.device(args.device)\nx = x.to(device, non_blocking=True)",
        ),
        Invalid('x = x.to("cuda:0")', 1, 5),
        Invalid(
            "import torch\ndevice = torch.device('cuda')",
            2,
            10,
            "torch.device",
            fixed="import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
        ),
        Invalid("import torch\nx = torch.zeros(3, device='cuda')", 2, 20, "device='cuda'"),
        Invalid("import torch\nif torch.cuda.is_available():\n    pass\nelse:\n    x.cuda()", 5, 5),
        Invalid("import torch\nif torch.cuda.is_available():\n    pass\nx = x.cuda(0)", 4, 5),
        Invalid("def f(x):\n    return x.cuda()\nif args.cuda:\n    pass", 2, 12),
        Invalid("try:\n    x = x.cuda()\nexcept KeyboardInterrupt:\n    pass", 2, 9),
        Invalid(
            "import torch as t\ndev = t.device('cuda', 0)",
            2,
            7,
            fixed="import torch as t\ndev = (t.device('cuda', 0) if t.cuda.is_available() else t.device(\"cpu\"))",
        ),
        Invalid(
            "import torch as t\ny = x.cuda(1, non_blocking=True)",
            2,
            5,
            fixed='import torch as t\ny = x.to(t.device("cuda", 1) if t.cuda.is_available() else "cpu", non_blocking=True)',
        ),
        Invalid(
            "from torch import nn\nnet = nn.Linear(2, 2).cuda()",
            2,
            7,
            fixed="import torch\nfrom torch import nn\n\n"
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "net = nn.Linear(2, 2).to(device)",
        ),
        Invalid("xs = map(lambda t: t.cuda(), xs)", 1, 20),
        Invalid("import torch\ndef get_device():\n    return torch.device('cuda')", 3, 12),
        # A test's name is no guard: this is what fails on a CPU-only CI runner.
        Invalid("import torch\ndef test_forward_cuda():\n    torch.zeros(2).cuda()", 3, 5),
        Invalid("import torch\ndef test_gpu_step(model):\n    model.cuda()", 3, 5),
        # a flag named for the CPU is true on the CPU's path, which a machine without CUDA takes
        Invalid(
            "import torch\ndef dequantize(module):\n    weight_on_cpu = not module.weight.is_cuda\n"
            "    return module.weight.cuda() if weight_on_cpu else module.weight",
            4,
            12,
        ),
        # an option's validation is no device guard: what passes it may be "cpu"
        Invalid(
            "import torch\ndef run(x, device):\n    if device not in ('cpu', 'cuda'):\n"
            "        raise ValueError(device)\n    return x.cuda()",
            5,
            12,
        ),
        # ... nor is one naming the CPU or an accelerator: only a GPU's name says GPU-only code
        Invalid("import torch\ndef prepare_accelerator(model):\n    return model.cuda()", 3, 12),
        Invalid(
            "import pytest, torch\nCASES = [pytest.param(torch.device('cuda'), id='gpu')]", 2, 23
        ),
        Invalid(
            "import pytest, torch\n"
            "CASES = [pytest.param(torch.device('cuda'), marks=pytest.mark.slow)]",
            2,
            23,
        ),
        Invalid(
            "import pytest, torch\n@pytest.fixture\ndef hardware():\n    return 0\n"
            "def test_move(hardware):\n    torch.ones(1).cuda()",
            6,
            5,
        ),
        Invalid(
            "import pytest, torch\n"
            "@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
            "class TestMoves:\n    pass\n"
            "def test_move():\n    torch.ones(1).cuda()",
            6,
            5,
        ),
        Invalid(
            "import argparse, torch\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--device', default='cuda', help='where to train')",
            3,
            41,
            "default `'cuda'` of a device option",
            fixed="import argparse, torch\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--device', default='cuda' if torch.cuda.is_available() "
            "else 'cpu', help='where to train')",
        ),
        Invalid(
            "import argparse\nparser = argparse.ArgumentParser()\n"
            'parser.add_argument("-d", "--eval-device", type=str, default="cuda:0")',
            3,
            62,
            '`"cuda:0"`',
        ),
        Invalid(
            'import click\n@click.option("--device", default="cuda")\ndef main(device):\n    pass',
            2,
            35,
        ),
        # The NPU case runs the `.cuda()` too; its skip marker is about NPUs.
        Invalid(
            _NPU_CASE_TEST + "    idx = torch.tensor([0, 1]).cuda()\n",
            10,
            11,
            "`device='npu'` case",
            fixed=_NPU_CASE_TEST + "    idx = torch.tensor([0, 1]).to(device)\n",
        ),
        Invalid(
            "import pytest, torch\n"
            "@pytest.mark.parametrize('dtype, device', [(torch.float, 'cpu'), (torch.half, 'cuda')])\n"
            "def test_pair(dtype, device):\n"
            "    if device == 'cuda':\n"
            "        pass\n"
            "    else:\n"
            "        x = torch.zeros(2, dtype=dtype).cuda()\n",
            7,
            13,
            "`device='cpu'` case",
        ),
        # Fewer than two GPUs includes none.
        Invalid("import torch\nif torch.cuda.device_count() < 2:\n    x = x.cuda()", 3, 9),
    )

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        self._chooser = DeviceChooser(context)
        self._checks_availability: Optional[bool] = None

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.guards.guarded:
            self._check_device_cases(node)
            return
        if self._unguarded_option_default(node):
            return
        construct = self._cuda_construct(node)
        if construct is not None:
            self.report(
                node,
                f"{construct} fails on a machine without CUDA and no availability check guards it; "
                f"move to a chosen device instead: {self._chooser.advice}",
                fix=self._construct_fix(node),
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
                        f"chosen at run time: {self._chooser.advice}",
                        fix=self._literal_fix(arg.value),
                    )

    def _check_device_cases(self, node: cst.Call) -> None:
        """A test parametrized over devices runs its body for each: a `.cuda()` there runs for
        the CPU (or NPU, MPS) case too, and fails on a machine without CUDA, whatever skip
        marks the CUDA case carries."""
        construct = self._cuda_construct(node)
        test = self.context.scopes.current_function()
        if construct is None or test is None or not test.name.value.startswith("test"):
            return
        if self.context.scopes.current_class() is not None or self._marks_module():
            return  # a class's or the module's markers may skip every case without CUDA
        markers = self.context.guards.markers
        cases = device_cases(
            test, lambda case: isinstance(case, cst.Call) and markers.param_cover(case) is not None
        )
        if not cases or self._skipped_without_cuda(test):
            return
        statement = self.context.current_statement()
        if not isinstance(statement, cst.CSTNode) or _chooses_within(statement):
            return
        classifier = self.context.guards.classifier

        def about_devices(condition: cst.CSTNode) -> bool:
            # an availability check (a guard variable, an imported `is_available`) or a
            # device choice
            if not isinstance(condition, cst.BaseExpression):
                return False
            return classifier.classify(condition) is not None

        for case in cases:
            if runs_in_case(test.body.body, statement, case, about_devices):
                self.report(
                    node,
                    f"{construct} also runs in the `{case.parameter}={case.device!r}` case of "
                    f"`{test.name.value}`, which fails on a machine without CUDA: move to "
                    f"`{case.parameter}`, as the other cases expect",
                    fix=self._construct_fix(node),
                )
                return

    def _skipped_without_cuda(self, test: cst.FunctionDef) -> bool:
        """A skip marker on the test (other than its parametrization) or a skipping fixture."""
        markers = self.context.guards.markers
        for decorator in test.decorators:
            marker = decorator.decorator
            if isinstance(marker, cst.Call) and is_parametrize(marker):
                continue
            if markers.marker_cover(marker) is not None:
                return True
        parameters = self.context.scopes.current_parameters()
        return any(name in markers.skipping_fixtures for name in parameters)

    def _marks_module(self) -> bool:
        return any(
            isinstance(statement, cst.SimpleStatementLine)
            and any(
                isinstance(small, cst.Assign)
                and any(dotted_name(t.target) == "pytestmark" for t in small.targets)
                for small in statement.body
            )
            for statement in self.context.module.body
        )

    def _unguarded_option_default(self, node: cst.Call) -> bool:
        """`parser.add_argument("--device", default="cuda")` in a file that never checks whether
        CUDA is there: run with no options on a CPU-only machine, the script fails. Reported at
        the default, once per option."""
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _OPTION_METHODS:
            return False
        default = argument(node, -1, "default")
        if default is None or string_value(default.value) is None:
            return False
        if cuda_literal(default.value) is None or not self._names_device_option(node):
            return False
        if self._checks_availability is None:
            # A check anywhere (`args.device if torch.cuda.is_available() else "cpu"`) may be
            # what makes the default safe: precision first.
            self._checks_availability = checks_availability(self.context.module, self.context.names)
        if self._checks_availability:
            return False
        torch = self._torch()
        fix = None if torch is None else self._guarded_literal_fix(default.value, torch)
        self.report(
            default.value,
            f"the default `{self.context.source_of(default.value)}` of a device option fails on "
            "a machine without CUDA and nothing checks that CUDA is there; default to "
            f"`{self.context.source_of(default.value)} if torch.cuda.is_available() else "
            '"cpu"`',
            fix=fix,
        )
        return True

    @staticmethod
    def _names_device_option(node: cst.Call) -> bool:
        """An option whose flags (`--device`, `--train-device`) or `dest=` name a device."""
        names = [
            string_value(arg.value)
            for arg in node.args
            if arg.keyword is None or arg.keyword.value == "dest"
        ]
        return any(name is not None and "device" in name.lower() for name in names)

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

    # -- fixes ------------------------------------------------------------------------

    def _choice(self) -> Optional[DeviceChoice]:
        return self._chooser.choose()

    def _torch(self) -> Optional[str]:
        return self.context.names.local_name_for("torch")

    def _construct_fix(self, node: cst.Call) -> Optional[RawFix]:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            return self._cuda_method_fix(node, func)
        target = argument(node, 0, "device" if isinstance(func, cst.Attribute) else "type")
        if target is None:
            return None
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            return self._literal_fix(target.value)
        # torch.device("cuda"...): guard the literal, or the whole call when it has an index.
        torch = self._torch()
        if torch is None:
            return None
        prefix = self._definition_prefix(node)
        if prefix is not None:
            # A module-level definition: the device the project's torch floor allows.
            edit = self._chooser.guard_definition(node, torch, prefix)
            if edit is not None:
                return _fix(Applicability.SAFE, "Fall back to the CPU without an accelerator", edit)
        if argument(node, 1, "index") is None:
            return self._guarded_literal_fix(target.value, torch)
        code = self.context.module.code_for_node(node)
        guarded = f'({code} if {torch}.cuda.is_available() else {torch}.device("cpu"))'
        return _fix(
            Applicability.SAFE, "Fall back to the CPU without CUDA", NodeEdit.replace(node, guarded)
        )

    def _cuda_method_fix(self, node: cst.Call, func: cst.Attribute) -> Optional[RawFix]:
        """`x.cuda()` becomes `x.to(device)`; `x.cuda(i)` keeps its index under the guard."""
        index = argument(node, 0, "device")
        others = [self._arg_text(arg) for arg in node.args if arg is not index]
        if index is not None:
            torch = self._torch()
            if torch is None:
                return None
            target = (
                f'{torch}.device("cuda", {self.context.module.code_for_node(index.value)}) '
                f'if {torch}.cuda.is_available() else "cpu"'
            )
            edits: tuple[NodeEdit, ...] = ()
            applicability = Applicability.SAFE
        else:
            choice = self._choice()
            if choice is None:
                return None
            target, edits = choice.expression, choice.inserted
            applicability = Applicability.SAFE if choice.safe else Applicability.UNSAFE
        call = f".to({', '.join([target, *others])})"
        tail = NodeEdit.between_ends(func.value, node, call)
        return _fix(applicability, f"Replace with `{call}`", tail, *edits)

    def _literal_fix(self, literal: cst.BaseExpression) -> Optional[RawFix]:
        """`"cuda"` becomes the device in scope; `"cuda:N"` keeps its index under the guard."""
        if string_value(literal) is None:
            return None  # an f-string such as f"cuda:{rank}" is the caller's choice
        if string_value(literal) != "cuda":
            torch = self._torch()
            return None if torch is None else self._guarded_literal_fix(literal, torch)
        choice = self._choice()
        if choice is None:
            return None
        applicability = Applicability.SAFE if choice.safe else Applicability.UNSAFE
        edit = NodeEdit.replace(literal, choice.expression)
        return _fix(applicability, f"Use `{choice.expression}`", edit, *choice.inserted)

    def _guarded_literal_fix(self, literal: cst.BaseExpression, torch: str) -> RawFix:
        code = self.context.module.code_for_node(literal)
        quote = code[-1]
        guarded = f"{code} if {torch}.cuda.is_available() else {quote}cpu{quote}"
        return _fix(
            Applicability.SAFE,
            "Fall back to the CPU without CUDA",
            NodeEdit.replace(literal, guarded),
        )

    def _definition_prefix(self, node: cst.Call) -> Optional[str]:
        """`name = ` where ``node`` is the whole value of a module-level `name = ...`."""
        statement = self.context.current_statement()
        if self.context.scopes.in_function() or not any(
            statement is line for line in self.context.module.body
        ):
            return None
        assert isinstance(statement, cst.SimpleStatementLine)
        small = statement.body[0]
        if len(statement.body) != 1 or not isinstance(small, cst.Assign) or small.value is not node:
            return None
        if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
            return None
        return f"{small.targets[0].target.value} = "

    def _arg_text(self, arg: cst.Arg) -> str:
        bare = arg.with_changes(
            comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace("")
        )
        return self.context.module.code_for_node(bare).strip()


def _chooses_within(statement: cst.CSTNode) -> bool:
    """Whether a statement chooses between values itself: a ternary, `and`/`or`, a
    comprehension's `if`."""
    return any(
        isinstance(node, (cst.IfExp, cst.BooleanOperation, cst.CompIf))
        for node in descendants(statement)
    )


def _fix(applicability: Applicability, message: str, *edits: NodeEdit) -> RawFix:
    return RawFix(applicability, message, tuple(edits))
