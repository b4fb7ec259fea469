from __future__ import annotations

from typing import Optional

import libcst as cst

from devlint.analysis.devices import argument
from devlint.analysis.names import dotted_name
from devlint.analysis.prefilter import FORWARD_METHOD, SELF_FACTORY_ASSIGNMENT
from devlint.analysis.torch_api import FACTORIES, SCALAR_CAPABLE_FACTORIES, derives_from_module
from devlint.rules.base import Invalid, Rule
from devlint.traversal import visit

# Methods that show the class moves its own tensors, or reads of an attribute that adapt it.
_SELF_MOVING_METHODS = frozenset({"to", "cuda", "_apply"})
_ADAPTING_METHODS = frozenset({"to", "cuda", "type_as", "cpu"})


class TensorAttributeNotBuffer(Rule):
    """
    ## What it does
    Flags a plain tensor stored on `self` in an `nn.Module`'s `__init__`
    (`self.mask = torch.ones(...)`) and used in `forward`.

    ## Why is this bad?
    `model.to(device)` moves parameters and buffers, not plain attributes: the
    tensor stays on the CPU while everything else moves, and `forward` fails on
    the GPU with "Expected all tensors to be on the same device". It is also
    missing from `state_dict()`.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(16)

        def forward(self, x):
            return x * self.scale
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.ones(16))  # or nn.Parameter(...)
    ```

    ## Fix safety
    No automatic fix yet.
    """

    code = "DEV009"
    name = "tensor-attribute-not-buffer"
    summary = "plain tensor attribute of an nn.Module used in forward"
    trigger_tokens = ("forward",)
    required_patterns = (FORWARD_METHOD, SELF_FACTORY_ASSIGNMENT)

    VALID = (
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('scale', torch.ones(4))\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.scale = nn.Parameter(torch.ones(4))\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.scale = torch.tensor(2.0)\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(4)\n"
        "    def forward(self, x):\n        return x * self.scale.to(x.device)",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(4)\n"
        "    def _apply(self, fn):\n        self.scale = fn(self.scale)\n        return super()._apply(fn)\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nclass Plain:\n    def __init__(self):\n        self.scale = torch.ones(4)\n"
        "    def forward(self, x):\n        return x * self.scale",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(4)\n"
        "    def forward(self, x):\n        return x",
        # `forward` reads none of its inputs: the tensor meets nothing on the module's device.
        "import torch\nfrom torch import nn\nclass Empty(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.p = torch.rand(3, 3)\n"
        "    def forward(self, *args, **kwargs):\n        return {'loss': self.p.sum()}",
    )
    INVALID = (
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(16)\n"
            "    def forward(self, x):\n        return x * self.scale",
            6,
            9,
            "`self.scale` is a plain tensor",
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\nclass Base(nn.Module):\n    pass\n"
            "class Net(Base):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.pos = torch.arange(n)\n"
            "    def forward(self, x):\n        return x + self.pos[: x.size(1)]",
            8,
            9,
        ),
    )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not derives_from_module(node.name.value, self._bases_of_classes()):
            return
        methods = {
            statement.name.value: statement
            for statement in node.body.body
            if isinstance(statement, cst.FunctionDef)
        }
        init, forward = methods.get("__init__"), methods.get("forward")
        if init is None or forward is None or _SELF_MOVING_METHODS & methods.keys():
            return
        if not _reads_its_inputs(forward):
            return  # nothing on the module's device reaches the tensor: moving it is harmless
        reassigned = {
            name
            for method_name, method in methods.items()
            if method_name != "__init__"
            for name in _self_assignments(method)
        }
        for assignment, attribute in self._plain_tensor_attributes(init):
            if attribute in reassigned:
                continue
            use = _first_plain_use(forward, attribute)
            if use is not None:
                self.report(
                    assignment,
                    f"`self.{attribute}` is a plain tensor: `model.to(device)` does not move it, "
                    f"yet `forward` uses it (line {{line0}}); register it with "
                    f'`self.register_buffer("{attribute}", ...)` or wrap it in `nn.Parameter`',
                    (use,),
                )

    def _bases_of_classes(self) -> dict[str, tuple[str, ...]]:
        """The module-level classes of the file, with their bases' qualified names."""
        names = self.context.names
        return {
            statement.name.value: tuple(
                names.qualified_name(base.value) or dotted_name(base.value) or ""
                for base in statement.bases
            )
            for statement in self.context.module.body
            if isinstance(statement, cst.ClassDef)
        }

    def _plain_tensor_attributes(self, init: cst.FunctionDef) -> list[tuple[cst.CSTNode, str]]:
        found: list[tuple[cst.CSTNode, str]] = []
        for statement in init.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                    continue
                target = dotted_name(small.targets[0].target)
                on_self = target and target.startswith("self.") and target.count(".") == 1
                if on_self and target and self._is_plain_tensor(small.value):
                    found.append((small, target[len("self.") :]))
        return found

    def _is_plain_tensor(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        qualified = self.context.names.qualified_name(value.func)
        if qualified not in FACTORIES or argument(value, -1, "device") is not None:
            return False
        if qualified in SCALAR_CAPABLE_FACTORIES:
            first = value.args[0].value if value.args else None
            return isinstance(first, (cst.List, cst.Tuple, cst.ListComp))
        return True


class _SelfAttributes(cst.CSTVisitor):
    """Assignments to ``self.x`` and reads of ``self.<name>`` in one method."""

    def __init__(self, name: Optional[str] = None) -> None:
        self.assigned: set[str] = set()
        self.name = name
        self.first_use: Optional[cst.CSTNode] = None
        self._adapted: set[int] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = dotted_name(node.target)
        if target and target.startswith("self."):
            self.assigned.add(target[len("self.") :])

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _ADAPTING_METHODS:
            self._adapted.add(id(func.value))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.first_use is not None or id(node) in self._adapted:
            return
        if dotted_name(node) == f"self.{self.name}":
            self.first_use = node


def _self_assignments(method: cst.FunctionDef) -> set[str]:
    visitor = _SelfAttributes()
    visit(method.body, visitor)
    return visitor.assigned


def _reads_its_inputs(forward: cst.FunctionDef) -> bool:
    params = forward.params
    inputs = {param.name.value for param in (*params.posonly_params, *params.params)[1:]}
    inputs |= {param.name.value for param in params.kwonly_params}
    inputs |= {
        star.name.value
        for star in (params.star_arg, params.star_kwarg)
        if isinstance(star, cst.Param)
    }
    reads = _NameReads(inputs)
    visit(forward.body, reads)
    return reads.found


class _NameReads(cst.CSTVisitor):
    """Whether any of ``names`` is read in a function body."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        self.found = self.found or node.value in self.names
        return False


def _first_plain_use(forward: cst.FunctionDef, attribute: str) -> Optional[cst.CSTNode]:
    visitor = _SelfAttributes(attribute)
    visit(forward.body, visitor)
    return visitor.first_use
