from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.devices import argument, string_value
from devlint.rules.base import Invalid, Rule

_ORDINAL_STRING = re.compile(r"cuda:(\d+)\Z")
_INDEX_CALLS = frozenset({"torch.cuda.set_device", "torch.cuda.device"})


def _ordinal(node: cst.BaseExpression) -> Optional[int]:
    """The GPU index a literal names: `"cuda:1"` or `1`."""
    value = string_value(node)
    if value is not None:
        match = _ORDINAL_STRING.match(value)
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
    device check. A `torch.device("cuda", 1)` object on its own (compared in a
    test, passed to a mock) allocates nothing and is not flagged.

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
    )
    INVALID = (
        Invalid("x = x.to('cuda:1')", 1, 10, '`"cuda:1"`'),
        Invalid("x = x.cuda(1)", 1, 12),
        Invalid("import torch\nx = x.to(torch.device('cuda', 1))", 2, 31),
        Invalid("import torch\nx = torch.ones(2, device=torch.device('cuda:2'))", 2, 39),
        Invalid("import torch\nx = torch.zeros(3, device='cuda:3')", 2, 27),
        Invalid("import torch\ntorch.cuda.set_device(1)", 2, 23),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.guards.guarded:
            return
        for literal in self._ordinal_literals(node):
            ordinal = _ordinal(literal)
            if ordinal is not None and ordinal >= 1:
                self.report(
                    literal,
                    f'`"cuda:{ordinal}"` hard-codes GPU {ordinal}: on a machine with fewer GPUs '
                    'this fails with "invalid device ordinal"; take the device from the caller '
                    "(an argument, `LOCAL_RANK`, or `CUDA_VISIBLE_DEVICES`)",
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
