from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.call_screen import CallFacts
from devlint.analysis.devices import ORDINAL_STRING, argument, string_value
from devlint.analysis.prefilter import Confirmed, literal_led
from devlint.context import FileContext, Node
from devlint.rules.base import Invalid, Rule

# "cuda:N" with N > 0, or a non-zero integer literal where a device goes (`.cuda(1)`,
# `device=1`, `set_device(1)`, `torch.device("cuda", 1)`, `index=1`).
_ORDINAL_TAIL = r"\s*(?:0[xXoObB])?\d*[1-9]"
_ORDINAL_TEXT = Confirmed(
    literal_led(
        r"cuda\s*:\s*\d*[1-9]",
        *(
            start + _ORDINAL_TAIL
            for start in (r"device\s*[=(]", r"to\s*\(", r"cuda\s*\(", r"index\s*=", r"""["']\s*,""")
        ),
    ),
    re.compile(
        r"cuda\s*:\s*\d*[1-9]"
        r"""|(?:device\s*=|device\s*\(|\.\s*(?:to|cuda)\s*\(|\bindex\s*=|["']\s*,)"""
        + _ORDINAL_TAIL
    ),
)
_INDEX_CALLS = frozenset({"torch.cuda.set_device", "torch.cuda.device"})


def _ordinal(node: cst.BaseExpression) -> Optional[int]:
    """The GPU index a literal names: `"cuda:1"` or `1`."""
    value = string_value(node)
    if value is not None:
        match = ORDINAL_STRING.match(value)
        return int(match.group(1)) if match else None
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return None


class HardcodedDeviceOrdinal(Rule):
    """
    ## What it does
    Flags a GPU index of 1 or more written into a move or an allocation:
    `.to("cuda:1")`, `.cuda(1)`, `.to(torch.device("cuda", 1))`,
    `device="cuda:2"`, `torch.cuda.set_device(1)`, outside code guarded by a
    check for several GPUs. A `torch.device("cuda", 1)` object on its own
    (compared in a test, passed to a mock) allocates nothing and is not flagged;
    a name assigned one (`device = torch.device("cuda:1")`, `dev = "cuda:1"`) is
    flagged at the assignment once a move or an allocation uses the name.

    `if torch.cuda.is_available():` promises one GPU, not two: an index of 1 or
    more under it (or under `@skipIf(not torch.cuda.is_available())`) is still
    flagged. A `device_count()` check covers it: `if torch.cuda.device_count() > 1:`
    (or `>= 2`), an early exit `if torch.cuda.device_count() < 2: return`, an
    `assert`, a `skipIf(torch.cuda.device_count() < 2)` marker on the test or its
    class, or a flag computed from such a check. A device flag the user controls
    (`if args.n_gpu > 1:`) or an unknown GPU-only marker (`@RunIf(min_cuda_gpus=2)`)
    counts as the user's deliberate choice.

    ## Why is this bad?
    On a machine with fewer GPUs (a laptop, a single-GPU CI runner) the code
    fails with "CUDA error: invalid device ordinal". Which GPU to use belongs to
    the caller: a command-line argument, `LOCAL_RANK`, or `CUDA_VISIBLE_DEVICES`.

    ## Example
    ```python
    model = model.to("cuda:1")
    ```

    ## Use instead
    ```python
    device = torch.device(args.device)  # e.g. --device cuda:1
    model = model.to(device)
    ```

    ## Fix safety
    No automatic fix: only the author knows which GPU was meant.
    """

    code = "DEV010"
    name = "hardcoded-device-ordinal"
    summary = "hard-coded GPU index 1 or higher"
    trigger_tokens = ("cuda",)
    required_patterns = (_ORDINAL_TEXT,)

    @classmethod
    def may_fire_in_tree(cls, facts: CallFacts, source: str) -> bool:
        return facts.ordinal_argument

    VALID = (
        # a context manager shown, never entered: it selects nothing
        'import torch\ntorch.cuda.device("cuda:1")',
        'import torch\ntorch.device("cpu"), torch.cuda.device("cuda:1")',
        "x = x.to('cuda:0')",
        "x = x.cuda()",
        "x = x.cuda(0)",
        "x = x.to(f'cuda:{rank}')",
        "x = x.cuda(args.gpu)",
        "import torch\nif torch.cuda.device_count() > 1:\n    x = x.to('cuda:1')",
        "name = 'cuda:1'",
        "import torch\ntorch.cuda.set_device(local_rank)",
        "import torch\nassert strategy.root_device == torch.device('cuda', 2)",
        "import torch\nexpected = [torch.device('cuda:1')]",
        "import torch\nif torch.cuda.device_count() >= 2:\n    y = y.cuda(1)",
        "import torch\nmulti_gpu = torch.cuda.device_count() > 1\nif multi_gpu:\n    y = y.cuda(1)",
        "import torch\ndef f(x):\n    if torch.cuda.device_count() < 2:\n        return x\n"
        "    return x.to('cuda:1')",
        "import torch\nassert torch.cuda.device_count() > 1\nx = x.to('cuda:1')",
        "import pytest, torch\n"
        "@pytest.mark.skipif(torch.cuda.device_count() < 2, reason='needs 2 GPUs')\n"
        "def test_peer():\n    torch.zeros(2, device='cuda:1')",
        "import unittest, torch\n"
        "@unittest.skipUnless(torch.cuda.device_count() > 1, 'needs 2 GPUs')\n"
        "class TestPeer(unittest.TestCase):\n"
        "    def test_copy(self):\n        torch.ones(1).cuda(1)",
        "import torch\nif args.n_gpu > 1:\n    x = x.cuda(1)",
        "@RunIf(min_cuda_gpus=2)\ndef test_peer():\n    x = x.cuda(1)",
        "import torch\nif torch.cuda.is_available():\n    x = x.to('cuda:0')",
        "import torch\ndef test_device():\n    device = torch.device('cuda:1')\n"
        "    assert str(device) == 'cuda:1'",
        "import torch\nif torch.cuda.device_count() > 1:\n    dev = 'cuda:1'\nx = x.to(dev)",
        "import torch\ndev = 'cuda:1'\ndev = 'cpu'\nx = x.to(dev)",
        "def loop(x, devices):\n    dev = 'cuda:1'\n    for dev in devices:\n        x = x.to(dev)",
        "def f(x, args):\n    device = 'cuda:1'\n    device, n = prepare(args)\n    return x.to(device)",
        "def f(xs, devs):\n    dev = 'cuda:1'\n    return [x.to(dev) for x, dev in zip(xs, devs)]",
        "DEVICE = 'cuda:1'\ndef setup(args):\n    global DEVICE\n    DEVICE = args.device\n"
        "def run(x):\n    return x.to(DEVICE)",
    )
    INVALID = (
        Invalid("x = x.to('cuda:1')", 1, 10, '`"cuda:1"`'),
        Invalid(
            "import torch\ndef test_gm(model):\n    device = torch.device('cuda:1')\n"
            "    model.to(device)\n    x = torch.zeros(2, device=device)",
            3,
            27,
        ),
        Invalid("dev = 'cuda:2'\ny = y.to(dev)", 1, 7, '`"cuda:2"`'),
        Invalid("x = x.cuda(1)", 1, 12),
        Invalid("import torch\nx = x.to(torch.device('cuda', 1))", 2, 31),
        Invalid("import torch\nx = torch.ones(2, device=torch.device('cuda:2'))", 2, 39),
        Invalid("import torch\nx = torch.zeros(3, device='cuda:3')", 2, 27),
        Invalid("import torch\ntorch.cuda.set_device(1)", 2, 23),
        Invalid(
            "import torch\nif torch.cuda.is_available():\n    x = x.to('cuda:1')",
            3,
            14,
            "promises one GPU",
        ),
        Invalid("import torch\nif torch.cuda.device_count() > 0:\n    x = x.cuda(1)", 3, 16),
        Invalid("import torch\nassert torch.cuda.is_available()\nx = x.cuda(2)", 3, 12),
        Invalid(
            "import pytest, torch\n"
            "@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
            "def test_peer():\n    torch.zeros(2, device='cuda:1')",
            4,
            27,
        ),
        Invalid(
            "import torch\ndef f(x):\n    if not torch.cuda.is_available():\n        return x\n"
            "    return x.to('cuda:1')",
            5,
            17,
        ),
    )

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        # Values of assignments outside any check for several GPUs, with their statements:
        # `device = torch.device("cuda:1")` allocates nothing until a move uses the name.
        self._unguarded_bindings: dict[cst.BaseExpression, Optional[Node]] = {}
        self._reported: set[cst.BaseExpression] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.context.guards.guarded_for_several_gpus:
            self._unguarded_bindings[node.value] = self.context.current_statement()

    def visit_Call(self, node: cst.Call) -> None:
        # `is_available()` promises one GPU: only a check for several covers an index of 1 or more.
        if self.context.guards.guarded_for_several_gpus:
            return
        # Under `if torch.cuda.is_available():` the index still needs more GPUs than that promises.
        guarded = self.context.guards.guarded
        for literal, statement in self._ordinal_literals(node):
            ordinal = _ordinal(literal)
            if ordinal is not None and ordinal >= 1 and literal not in self._reported:
                self._reported.add(literal)
                promise = " (the availability check around it promises one GPU)" if guarded else ""
                self.report(
                    literal,
                    f'`"cuda:{ordinal}"` hard-codes GPU {ordinal}: on a machine with fewer GPUs'
                    f'{promise} this fails with "invalid device ordinal"; take the device from '
                    "the caller (an argument, `LOCAL_RANK`, or `CUDA_VISIBLE_DEVICES`)",
                    statement=statement,
                )

    def _ordinal_literals(self, node: cst.Call) -> list[tuple[cst.BaseExpression, Optional[Node]]]:
        """Literals naming the device a call moves to or allocates on, each with the statement
        holding it where that is not the call's (`device = "cuda:1"` above `x.to(device)`)."""
        func = node.func
        qualified = self.context.names.qualified_name(func)
        targets: list[cst.BaseExpression] = []
        is_move = (
            isinstance(func, cst.Attribute)
            and qualified is None
            and func.attr.value in ("to", "cuda")
        )
        if qualified == "torch.cuda.device" and self._discarded(node):
            return []  # a context manager never entered selects nothing
        if is_move or qualified in _INDEX_CALLS:
            target = argument(node, 0, "device")
            if target is not None:
                targets.append(target.value)
        if qualified != "torch.device":
            targets.extend(
                arg.value
                for arg in node.args
                if arg.keyword is not None and arg.keyword.value == "device"
            )
        found: list[tuple[cst.BaseExpression, Optional[Node]]] = []
        for written in targets:
            value, statement = written, None
            if isinstance(written, cst.Name):
                bound = self._unguarded_binding(written)
                if bound is None:
                    continue
                value, statement = bound
            found.extend((literal, statement) for literal in self._device_literals(value))
        return found

    def _discarded(self, node: cst.Call) -> bool:
        """Whether ``node`` is a statement by itself, or an item of a tuple that is
        (`torch.device("cpu"), torch.cuda.device("cuda:1")` shown in a notebook's cell), its
        value thrown away."""
        statement = self.context.current_statement()
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Expr):
                shown = small.value
                items = shown.elements if isinstance(shown, cst.Tuple) else ()
                if shown is node or any(item.value is node for item in items):
                    return True
        return False

    def _unguarded_binding(
        self, name: cst.Name
    ) -> Optional[tuple[cst.BaseExpression, Optional[Node]]]:
        """The value the name was last assigned, outside any check for several GPUs."""
        scopes = self.context.scopes
        if scopes.rebinds(name.value):
            return None  # `for dev in devices:`, `dev, n = ...`: maybe no longer the literal
        binding = scopes.lookup(name)
        value = binding.value if binding is not None else None
        if value is None or value not in self._unguarded_bindings:
            return None
        return value, self._unguarded_bindings[value]

    def _device_literals(self, target: cst.BaseExpression) -> list[cst.BaseExpression]:
        """`"cuda:1"`, `1`, or the index inside `torch.device("cuda", 1)` / `torch.device("cuda:1")`."""
        if (
            isinstance(target, cst.Call)
            and self.context.names.qualified_name(target.func) == "torch.device"
        ):
            index = argument(target, 1, "index")
            first = argument(target, 0, "type")
            chosen = index if index is not None else first
            return [chosen.value] if chosen is not None else []
        return [target]
