from __future__ import annotations

import libcst as cst

from devlint.analysis.devices import argument, has_star_kwargs
from devlint.context import NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import Invalid, Rule


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load(...)` called without `map_location` (or with
    `map_location=None`), outside code guarded by a CUDA availability check.

    ## Why is this bad?
    `torch.load` restores each tensor on the device it was saved from. A
    checkpoint saved on a GPU then fails to load on a machine without one
    ("Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False"), and on a multi-GPU machine every
    process piles its copy onto `cuda:0`.

    ## Example
    ```python
    state = torch.load("checkpoint.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("checkpoint.pt", map_location="cpu")  # or map_location=device
    ```

    ## Fix safety
    `map_location="cpu"` is added (or replaces `map_location=None`): an
    **unsafe** fix, because it changes where the loaded tensors land: code that
    expected them on the GPU must now move them.
    """

    code = "DEV008"
    name = "load-without-map-location"
    summary = "torch.load without map_location"
    fixable = True
    trigger_tokens = ("load(",)

    VALID = (
        "import torch\nstate = torch.load('ckpt.pt', map_location='cpu')",
        "import torch\nstate = torch.load('ckpt.pt', map_location=device)",
        "import torch\nstate = torch.load('ckpt.pt', 'cpu')",
        "import torch\nstate = torch.load(path, **load_kwargs)",
        "import json\nstate = json.load(f)",
        "import torch\nif torch.cuda.is_available():\n    state = torch.load('ckpt.pt')",
        "import torch\nstate = torch.jit.load('model.pt', map_location='cpu')",
    )
    INVALID = (
        Invalid("import torch\nstate = torch.load('ckpt.pt')", 2, 9, "map_location"),
        Invalid(
            "import torch\nstate = torch.load('ckpt.pt', map_location=None)",
            2,
            9,
            fixed="import torch\nstate = torch.load('ckpt.pt', map_location=\"cpu\")",
        ),
        Invalid(
            "from torch import load\nstate = load(f)",
            2,
            9,
            fixed='from torch import load\nstate = load(f, map_location="cpu")',
        ),
        Invalid("import torch as th\nm.load_state_dict(th.load(p, weights_only=True))", 2, 19),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.names.qualified_name(node.func) != "torch.load":
            return
        if self.context.guards.guarded:
            return
        location = argument(node, 1, "map_location")
        if location is None and has_star_kwargs(node):
            return
        if location is not None and not (
            isinstance(location.value, cst.Name) and location.value.value == "None"
        ):
            return
        if location is not None:
            edit = NodeEdit.replace(location.value, '"cpu"')
        elif node.args:
            edit = NodeEdit.insert_after(node.args[-1].value, ', map_location="cpu"')
        else:
            edit = None
        fix = None
        if edit is not None:
            message = 'Add `map_location="cpu"`: tensors then load on the CPU'
            fix = RawFix(Applicability.UNSAFE, message, (edit,))
        self.report(
            node,
            f"`{self.context.source_of(node)}` has no `map_location`: a checkpoint saved on a GPU "
            'fails to load on a machine without one; pass `map_location="cpu"` or the target '
            "device",
            fix=fix,
        )
