from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from devlint.analysis.operations import Citations, Mismatch, cpu_factory, find_mismatch, operands
from devlint.analysis.prefilter import CPU_TENSOR_SOURCE, DEVICE_SOURCE
from devlint.analysis.syntax_screen import SyntaxFacts
from devlint.analysis.values import Kind
from devlint.rules.base import FlowRule, Invalid

if TYPE_CHECKING:
    from devlint.flow_context import FlowContext


_ELEMENTWISE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


class CrossDeviceOp(FlowRule):
    """
    ## What it does
    Flags an operation whose tensor operands are definitely on different
    devices: `y + x.cpu()` with `y` on CUDA, `torch.cat([a_cuda, b_cpu])`,
    `a_cuda @ b_cpu`, `total += out` with `total` on the CPU, `preds ==
    labels_cpu`. A collective of ignite or accelerate (`idist.all_reduce(t)`,
    `accelerate.utils.gather(t)`) returns its tensor where it was, and
    `split_between_processes(data)` shares `data` where it is. A CPU operand that
    a torch factory made (`total = torch.zeros(3)`, or a table indexed with
    indices on a device) is reported at the factory, where `device=` goes, once,
    citing the first operation it meets. In a loop,
    a sum kept on a device but reset on the CPU in a branch (`total =
    torch.zeros(1)` after logging it) is reported at the reset: the next
    iteration adds to a CPU tensor.

    ## Why is this bad?
    PyTorch refuses to mix devices: "Expected all tensors to be on the same
    device, but found at least two devices, cuda:0 and cpu!". The error only
    appears on a machine with a GPU.

    Python numbers and 0-dim CPU tensors (`torch.tensor(2.0)`, `x.sum()`) may
    legally mix with tensors on any device and are not flagged, except where a
    GPU refuses them (as recorded on one): the bounds of `clamp`/`clip`, the
    mask of `masked_fill`, `torch.equal`, `isin`, `bucketize`,
    `searchsorted` and `dot`. An operand whose device is not known is never
    flagged. Arithmetic with a CPU tensor of elements
    (`torch.zeros(3) * rate`) stays on the CPU whatever the other operand is:
    a tensor on a device there, even a 0-dim one, fails at that line.

    ## Example
    ```python
    x = x.cuda(0)
    y = x ** 2
    z = y + x.cpu()
    ```

    ## Use instead
    ```python
    z = y + x  # or move both to the same device first
    ```

    ## Fix safety
    No automatic fix: which side should move depends on the program.
    """

    code = "DEV006"
    name = "cross-device-op"
    summary = "operation mixing tensors on different devices"
    trigger_tokens = ("torch",)
    required_patterns = (DEVICE_SOURCE, CPU_TENSOR_SOURCE)

    VALID = (
        # a helper's `device` left at None takes the default's branch, and only that one
        "import torch\ndef basis(k: int, device=None) -> torch.Tensor:\n"
        "    q = torch.zeros(2 * k + 1, 2 * k + 1)\n    if device is None:\n"
        "        device = torch.empty(0).device\n    return q.to(device=device)\n"
        "def generators(k: int) -> torch.Tensor:\n    x = torch.arange(-k, k)\n"
        "    return basis(k).T @ torch.diag(x, diagonal=-1)",
        # a conversion to what a function returns as the dtype keeps the device
        "import torch\nx = torch.rand(3).to(torch.get_default_dtype())\ny = x + torch.ones(3)\n"
        "z = torch.rand(3).to(torch.promote_types(x.dtype, torch.half)) * torch.ones(3)",
        # the caller passes its own `device` on, whatever it holds: not the helper's None
        "import torch\ndef draw(shape, device=None):\n    return torch.rand(shape, device=device)\n"
        "def sample(shape, low, device='cpu'):\n"
        "    low = torch.as_tensor(low, device=device)\n"
        "    return draw(shape, device=device) * low.log()",
        # told not to compare devices
        "import torch\nx = torch.ones(2).cuda()\n"
        "torch.testing.assert_close(x.sum(), torch.tensor(2.0), check_device=False)",
        # a 0-dim CPU tensor mixes with tensors on any device in arithmetic
        "import torch\nx = torch.ones(2).cuda()\ny = x.sum() == torch.tensor(2.0)",
        # a helper's CPU path (`device` left at None) is not a path the caller's loop repeats
        "import torch\ndef init_state(n, device=None):\n    if device is None:\n"
        "        return torch.zeros(n, 8)\n    return torch.zeros(n, 8, device=device)\n"
        "def run(loader, n):\n    device = torch.device('cuda:0')\n"
        "    state = torch.zeros(n, 8, device=device)\n    for inputs in loader:\n"
        "        state = state + inputs.to(device)\n        state = init_state(n, device)",
        # a read in a branch of the body may not run after the reset (left silent)
        "import torch\ndevice = 'cuda:0'\ntotal = torch.zeros(1, device=device)\n"
        "for step in range(9):\n    if step > 2:\n        total += torch.ones(1, device=device)\n"
        "    if step % 3 == 0:\n        total = torch.zeros(1)",
        # a helper reads the module's `device` where the script set it: the CPU, as `w` is
        "import torch\ndevice = torch.device('cpu')\ndef fake_data(n):\n"
        "    return torch.rand(n, 1, device=device)\n"
        "w = torch.rand(1, 1).to(device)\nfor step in range(3):\n"
        "    y = fake_data(4).mm(w)",
        # a reset that leaves the loop reaches no later iteration; one in a branch before the
        # loop is a path that may never run (paths that merely meet prove nothing)
        "import torch\ndevice = 'cuda:0'\ntotal = torch.zeros(1, device=device)\n"
        "for step in range(9):\n    total += torch.ones(1, device=device)\n"
        "    if step > 3:\n        total = torch.zeros(1)\n        break",
        "import torch\ndevice = 'cuda:0'\ntotal = torch.zeros(1, device=device)\n"
        "if verbose:\n    total = torch.zeros(1)\n"
        "for step in range(9):\n    total += torch.ones(1, device=device)",
        # reset where the sum was made
        "import torch\ndevice = 'cuda:0'\ntotal = torch.zeros(1, device=device)\n"
        "for step in range(9):\n    total += torch.ones(1, device=device)\n"
        "    if step % 3 == 0:\n        total = torch.zeros(1, device=device)",
        # A metric of an output and a target may return a Python number: no tensor proven.
        "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = model.to(device)\ntotals = torch.zeros(2)\nfor data, target in loader:\n"
        "    output, target = model(data.to(device)), target.to(device)\n"
        "    for i, metric in enumerate(metric_fns):\n"
        "        totals[i] += metric(output, target) * 4",
        # a call taking a CPU tensor beside one of unknown place: its result's place is unknown
        # (`torch.index_put` takes CPU indices for a tensor on a device)
        "import torch\ndef f(values, rows):\n    idx = torch.arange(3)\n"
        "    out = torch.index_put(values, (idx,), rows)\n"
        "    return out + torch.ones(3).to('cuda')",
        "import torch\nx = torch.zeros(3).cuda()\ny = x + 1",
        "import torch\nx = torch.zeros(3).cuda()\ny = x * torch.tensor(2.0)",
        # `masked_fill`'s value, unlike its mask, may be a 0-dim CPU tensor; so may `where`'s
        "import torch\nx = torch.zeros(3).cuda()\ny = x.masked_fill(x > 0, torch.tensor(2.0))",
        "import torch\nx = torch.zeros(3).cuda()\ny = torch.where(x > 0, x, torch.tensor(0.0))",
        "import torch\nx = torch.zeros(3).cuda()\ny = x * torch.full((), 2.0)",
        "import torch\nx = torch.zeros(3).cuda()\ny = x + torch.zeros(3).cuda()",
        "import torch\nx = torch.zeros(3).to(device)\ny = x + torch.ones(3, device=device)",
        "import torch\nx = torch.zeros(3).cuda()\ny = x.cpu() + torch.ones(3)",
        "import torch\nx = torch.zeros(3).cuda()\nt = x.sum()\ny = torch.ones(3) * t.cpu()",
        "import torch\nx = torch.zeros(3).cuda()\ny = x + torch.zeros_like(x)",
        "import torch\nx = torch.zeros(3).cuda()\ny = x + w",
        "import torch\nx = torch.zeros(3).cuda()\nn = torch.ones(3)\ny = x + n[0]",
        # `...` may stand for no dimension: `n[..., 0]` of a vector is 0-dim
        "import torch\nx = torch.zeros(3).cuda()\nn = torch.ones(3)\ny = x + n[..., 0]",
        "import torch\nx = torch.ones(3)\nif cond:\n    x = x.cuda()\ny = x + torch.ones(3)",
        "import torch\ntotal = torch.zeros(3)\ntotal += torch.ones(3)",
        "import torch\nids = torch.randn(4, 8).cuda().argmax(-1)\ntable = torch.randn(8, 3)\n"
        "rows = table[ids.cpu()]",
        "import torch\ntable = torch.randn(8, 3).cuda()\nrows = table[torch.tensor([0, 1])]",
        # the argument the call passes, not the helper's default
        "import torch\ndef noise(n, device='cuda'):\n    return torch.randn(n, device=device)\n"
        "x = torch.zeros(3) + noise(3, device='cpu')",
        # a join of the CPU and a device is unknown
        "import torch\nx = torch.zeros(3)\nfor _ in range(2):\n    x = x.cuda()\ny = x + torch.zeros(3)",
        # the accumulator is assigned again in the body before it is read; a CPU scalar sum
        "import torch\ntotal = torch.zeros(3)\nfor step in range(4):\n"
        "    total = torch.zeros(3, device='cuda')\n    total = total + torch.ones(3).cuda()",
        "import torch\ntotal = torch.zeros(())\nfor step in range(4):\n"
        "    total = total + torch.ones(3).cuda()",
        # the first iteration may not reach the read: it is in a branch, or after one that leaves
        "import torch\ntotal = torch.zeros(3)\nfor i in range(4):\n    if i:\n"
        "        total = total + torch.ones(3).cuda()",
        "import torch\ntotal = torch.zeros(3)\nfor i in range(4):\n    if i == 0:\n"
        "        total = torch.ones(3).cuda()\n        continue\n"
        "    total = total + torch.ones(3).cuda()",
        # a name first bound in the body: the first iteration cannot read it
        "import torch\nfor i in range(3):\n    if i:\n        y = z + torch.ones(3).cuda()\n"
        "    z = torch.ones(3).cuda()",
        # a helper's `.to(device)` with its own parameter says nothing where it is called
        "import torch\ndef reference(x, device):\n    return (x * 2).to(device)\n"
        "def test():\n    device = 'cpu'\n    out = reference(torch.ones(2), device)\n"
        "    return out - torch.ones(2)",
        # `.to()` of a dtype variable, and a factory writing into `out=`
        "import torch\nx = torch.rand(3).to(ori_dt)\ny = x - torch.rand(3)",
        "import torch\nx = torch.zeros(3).cuda()\ny = torch.arange(3, out=x.new(3))\nz = x + y",
        # a comparison with a 0-dim CPU tensor, or with a number; a device with a device;
        # identity, which compares no elements
        "import torch\nx = torch.ones(3).cuda()\nok = (x == torch.tensor(1.0)).all() and x.sum() > 2",
        "import torch\nx = torch.ones(3).cuda()\nsame = x is torch.ones(3) or x is not x.cpu()",
        "import torch\nx = torch.ones(3).cuda()\nsame = x.device == torch.device('cuda')",
        # given a number, ignite's collective returns a number
        "import torch\nimport ignite.distributed as idist\n"
        "total = idist.all_reduce(3.0)\nassert total == torch.tensor([3.0])",
    )
    INVALID = (
        # the caller passes the helper its device: the default's branch does not run
        Invalid(
            "import torch\ndef basis(k: int, device=None) -> torch.Tensor:\n"
            "    q = torch.zeros(2 * k + 1, 2 * k + 1)\n    if device is None:\n"
            "        device = torch.empty(0).device\n    return q.to(device=device)\n"
            "def generators(k: int) -> torch.Tensor:\n    x = torch.arange(-k, k)\n"
            "    return basis(k, 'cuda').T @ torch.diag(x, diagonal=-1)",
            8,
            9,
            "`torch.arange(-k, k)` creates a tensor on the CPU that line 9 mixes with",
        ),
        # an elementwise comparison; a collective returns its tensor where it was
        Invalid(
            "import torch\nimport ignite.distributed as idist\n"
            "def check_all_reduce(device):\n    t = torch.tensor([1], device=device)\n"
            "    res = idist.all_reduce(t)\n    assert res == torch.tensor([2])",
            6,
            12,
            "`res` is on `device` (created on `device` at line 4)",
        ),
        # accelerate's share of the data, where the data is
        Invalid(
            "import torch\nfrom accelerate import PartialState\nstate = PartialState()\n"
            "data = torch.tensor([[0, 1], [2, 3]]).to(state.device)\n"
            "with state.split_between_processes(data) as mine:\n"
            "    assert torch.equal(mine, torch.tensor([0, 1]))",
            6,
            12,
            "`mine` is on `state.device` (moved to `state.device` at line 4)",
        ),
        # `assert_close` compares devices first: a 0-dim CPU tensor fails it too
        Invalid(
            "import torch\nx = torch.ones(2).cuda()\n"
            "torch.testing.assert_close(x.sum(), torch.tensor(2.0))",
            3,
            1,
            "`torch.tensor(2.0)` is on the CPU",
        ),
        # a GPU refuses a 0-dim CPU tensor as a clamp's bound, or as `masked_fill`'s mask
        Invalid(
            "import torch\nx = torch.ones(3).cuda()\nlow = torch.tensor(0.0)\n"
            "y = x.clamp(low, 1.0)",
            3,
            7,
            "`torch.tensor(0.0)` creates a tensor on the CPU that line 4 mixes with `x`",
        ),
        Invalid(
            "import torch\nx = torch.ones(3).cuda()\ny = torch.clamp(x, min=torch.tensor(0.0))",
            3,
            5,
        ),
        Invalid(
            "import torch\nx = torch.ones(3).cuda()\nkeep = torch.tensor(True)\n"
            "y = x.masked_fill(keep, 0.0)",
            3,
            8,
        ),
        # a CPU table indexed with indices on a device: reported where `device=` goes
        Invalid(
            "import torch\nids = torch.randn(4, 8).cuda().argmax(-1)\ntable = torch.randn(8, 3)\n"
            "rows = table[ids]",
            3,
            9,
            "`torch.randn(8, 3)` creates a tensor on the CPU that line 4 indexes with `ids`",
        ),
        # or where it is indexed, if no factory made it
        Invalid(
            "import torch\nids = torch.randn(4, 8).cuda().argmax(-1)\ntable = ids.float().cpu()\n"
            "rows = table[ids]",
            4,
            8,
            "`table` is on the CPU",
        ),
        # arithmetic beside a CPU tensor with elements is on the CPU, whatever `rate` is (on a
        # device, line 3 fails already)
        Invalid(
            "import torch\ndef f(rate):\n    t = torch.zeros(3) * rate\n"
            "    return t + torch.ones(3).to('cuda')",
            3,
            9,
            "line 4 mixes",
        ),
        # cited: the first operation of the factory's own function (the helper's runs later)
        Invalid(
            "import torch\ndevice = 'cuda:0'\ndef helper(t):\n"
            "    return t + torch.ones(3, device=device)\ndef main():\n"
            "    t = torch.zeros(3)\n    u = t * torch.ones(3, device=device)\n"
            "    return helper(t), u",
            6,
            9,
            "line 7 mixes",
        ),
        # a sum on the device, reset on the CPU in a logging branch: the next iteration adds
        Invalid(
            "import torch\ndevice = 'cuda:0'\ntotal = torch.zeros(1, device=device)\n"
            "for step in range(9):\n    total += torch.ones(1, device=device)\n"
            "    if step % 3 == 0:\n        print(total)\n        total = torch.zeros(1)",
            8,
            17,
            "line 5 on the loop's next iteration mixes",
        ),
        # ... an error raised before the sum ends the run, not the iteration alone
        Invalid(
            "import torch\ndevice = 'cuda:0'\ntotal = torch.zeros(1, device=device)\n"
            "for step in range(9):\n    if step < 0:\n        raise ValueError(step)\n"
            "    total += torch.ones(1, device=device)\n"
            "    if step % 3 == 0:\n        print(total)\n        total = torch.zeros(1)",
            10,
            17,
            "line 7 on the loop's next iteration mixes",
        ),
        # what one iteration leaves is seen at the next
        Invalid(
            "import torch\nfor step in range(3):\n    if step:\n"
            "        d = last - torch.zeros(3)\n    last = torch.ones(3).cuda()",
            4,
            13,
        ),
        # the first iteration reads the CPU accumulator, whatever later ones read
        Invalid(
            "import torch\ntotal = torch.zeros(3)\nfor step in range(4):\n"
            "    total = total + torch.ones(3).cuda()",
            2,
            9,
            "line 4 mixes with `torch.ones(3).cuda()`",
        ),
        Invalid(
            "import torch\nacc = torch.zeros(3)\nfor a in range(2):\n    for b in range(2):\n"
            "        acc = acc * torch.ones(3).to(device)",
            2,
            7,
        ),
        # a helper's default device, where the call leaves the argument out
        Invalid(
            "import torch\ndef noise(n, device='cuda'):\n    return torch.randn(n, device=device)\n"
            "x = torch.zeros(3) + noise(3)",
            4,
            5,
        ),
        Invalid(
            "import torch\nx = torch.ones(3)\nx = x.cuda(0)\ny = x**2\nz = y + x.cpu()",
            5,
            5,
            "`y` is on `cuda:0`",
        ),
        # beside an operand of unknown kind (`rate`), a tensor on a device keeps its place:
        # if the product exists at all, it is there
        Invalid(
            "import torch\ndef window(n, device, rate):\n"
            "    t = torch.arange(0.0, n, device=device)\n    first = torch.ceil(t * rate)\n"
            "    j = torch.arange(5)\n    return first.unsqueeze(1) + j",
            5,
            9,
            "line 6 mixes with `first.unsqueeze(1)` on `device`",
        ),
        # reported at the factory, where `device=` goes, citing the operation
        Invalid(
            "import torch\na = torch.ones(2).cuda()\nb = torch.ones(2)\nc = torch.cat([a, b])",
            3,
            5,
            "`torch.ones(2)` creates a tensor on the CPU that line 4 mixes with `a` on `cuda`",
        ),
        Invalid("import torch\na = torch.ones(2, 2).to(device)\nb = torch.eye(2)\nc = a @ b", 3, 5),
        # a slice beside a number keeps a dimension: `n[:, 0]` is no 0-dim tensor
        Invalid(
            "import torch\nx = torch.zeros(3).cuda()\nn = torch.ones(3, 3)\ny = x + n[:, 0]", 3, 5
        ),
        Invalid(
            "import torch\nx = torch.zeros(3).cuda()\nn = torch.ones(3)\ny = x + n[None, 0]", 3, 5
        ),
        Invalid(
            "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 3).to(device)\n"
            "total = torch.zeros(3)\nout = model(torch.ones(3).to(device))\ntotal += out",
            4,
            9,
            "`torch.zeros(3)` creates a tensor on the CPU that line 6 mixes with `out`",
        ),
    )

    @classmethod
    def may_fire_in(cls, facts: SyntaxFacts) -> bool:
        return facts.device_source and facts.cpu_tensor_source

    def begin_analysis(self, analysis: FlowContext) -> None:
        super().begin_analysis(analysis)
        # Per factory, one report: citing the first operation of the factory's own function
        # its tensor meets a device (callers are analysed before their helpers, so a caller's
        # line may come first where the helper's own line fails first), or else the first met.
        self._factory_reports: dict[ast.Call, _FactoryReport] = {}
        self._function_spans: Optional[list[tuple[int, int, ast.AST]]] = None

    def end_file(self) -> None:
        if self._analysis is not None:  # (a file the flow did not run on has no reports)
            for factory, pending in self._factory_reports.items():
                self.report(factory, pending.message, pending.cited, statement=pending.statement)
            self._factory_reports = {}
        super().end_file()

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._check(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        # an elementwise comparison (`preds == labels`); not `is`, nor a chain's far operands
        if len(node.ops) == 1 and isinstance(node.ops[0], _ELEMENTWISE):
            self._check(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        """`table[ids]`: a CPU tensor indexed with indices on a device."""
        flow = self.analysis.flow
        table = flow.value_of(node.value)
        if not table.is_cpu_tensor():
            return
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for index in parts:
            value = flow.value_of(index)
            proven = value.kind is Kind.TENSOR and not value.unproven
            if proven and value.is_on_device() and not value.scalar:
                factory = cpu_factory(table, node.value)
                if factory is not None:
                    found = Mismatch(index, value, node.value, table)
                    self._report_factory(factory, found, node, "indexes with")
                    return
                citations = Citations()
                cpu_evidence = citations.of(table.placement)
                device_evidence = citations.of(value.placement)
                self.report(
                    node,
                    f"mixes devices: `{self.analysis.source_of(node.value)}` is on the CPU "
                    f"({cpu_evidence}) but indexed with `{self.analysis.source_of(index)}` on "
                    f"`{value.placement.device}` ({device_evidence})",
                    citations.cited(),
                )
                return

    def _check(self, node: ast.AST) -> None:
        found = find_mismatch(operands(node, self.analysis.flow))
        if found is None:
            return
        factory = cpu_factory(found.cpu_value, found.cpu_node)
        if factory is not None:
            self._report_factory(factory, found, node)
            return
        citations = Citations()
        device_evidence = citations.of(found.device_value.placement)
        cpu_evidence = citations.of(found.cpu_value.placement)
        self.report(
            node,
            f"mixes devices: `{self.analysis.source_of(found.device_node)}` is on "
            f"`{found.device_value.placement.device}` ({device_evidence}) but "
            f"`{self.analysis.source_of(found.cpu_node)}` is on the CPU ({cpu_evidence})",
            citations.cited(),
        )

    def _report_factory(
        self, factory: ast.Call, found: Mismatch, node: ast.AST, meets: str = "mixes with"
    ) -> None:
        """Where `device=` goes, once for all the operations the tensor meets."""
        if self.analysis.expects_failure():  # (inside `pytest.raises` it is meant)
            return
        line = getattr(node, "lineno", 0)
        own = self._function_at(line) is self._function_at(factory.lineno)
        known = self._factory_reports.get(factory)
        if known is not None and not (own and (not known.own or line < known.line)):
            return
        citations = Citations()
        operation_line = citations.line_of(node)
        device_evidence = citations.of(found.device_value.placement)
        reset = self.analysis.flow.later_values.get(found.cpu_node)
        later = reset is not None and reset.placement.origin is found.cpu_value.placement.origin
        when = " on the loop's next iteration" if later else ""
        device_operand = self.analysis.source_of(found.device_node)
        message = (
            f"mixes devices: `{self.analysis.source_of(factory)}` creates a tensor on the CPU "
            f"that line {operation_line}{when} {meets} `{device_operand}` on "
            f"`{found.device_value.placement.device}` ({device_evidence}): create it there "
            "with `device=`"
        )
        statement = self.analysis.statement_of(factory) or factory
        self._factory_reports[factory] = _FactoryReport(
            line, own, message, citations.cited(), statement
        )

    def _function_at(self, line: int) -> Optional[ast.AST]:
        """The innermost function whose code spans ``line`` (None: the module's script)."""
        if self._function_spans is None:
            self._function_spans = sorted(
                (node.lineno, node.end_lineno or node.lineno, node)
                for node in ast.walk(self.analysis.tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
        found: Optional[ast.AST] = None
        for start, end, function in self._function_spans:
            if start > line:
                break
            if line <= end:
                found = function  # (sorted by start: a nested one comes later)
        return found


@dataclass(frozen=True)
class _FactoryReport:
    line: int  # of the operation the message cites
    own: bool  # the operation is in the factory's own function
    message: str
    cited: tuple[ast.AST, ...]
    statement: ast.AST
