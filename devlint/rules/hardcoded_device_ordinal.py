from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.call_screen import CallFacts
from devlint.analysis.devices import ORDINAL_STRING, argument, string_value
from devlint.analysis.prefilter import Confirmed, literal_led
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
    (compared in a test, passed to a mock) allocates nothing and is not flagged.

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
    )
    INVALID = (
        Invalid("x = x.to('cuda:1')", 1, 10, '`"cuda:1"`'),
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

    def visit_Call(self, node: cst.Call) -> None:
        # `is_available()` promises one GPU: only a check for several covers an index of 1 or more.
        if self.context.guards.guarded_for_several_gpus:
            return
        # Under `if torch.cuda.is_available():` the index still needs more GPUs than that promises.
        guarded = self.context.guards.guarded
        for literal in self._ordinal_literals(node):
            ordinal = _ordinal(literal)
            if ordinal is not None and ordinal >= 1:
                promise = " (the availability check around it promises one GPU)" if guarded else ""
                self.report(
                    literal,
                    f'`"cuda:{ordinal}"` hard-codes GPU {ordinal}: on a machine with fewer GPUs'
                    f'{promise} this fails with "invalid device ordinal"; take the device from '
                    "the caller (an argument, `LOCAL_RANK`, or `CUDA_VISIBLE_DEVICES`)",
                )

    def _ordinal_literals(self, node: cst.Call) -> list[cst.BaseExpression]:
        """Literals naming the device a call moves to or allocates on."""
        func = node.func
        qualified = self.context.names.qualified_name(func)
        targets: list[cst.BaseExpression] = []
        is_move = (
            isinstance(func, cst.Attribute)
            and qualified is None
            and func.attr.value in ("to", "cuda")
        )
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
        return [literal for target in targets for literal in self._device_literals(target)]

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
