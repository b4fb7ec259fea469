from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.call_screen import CallFacts
from devlint.analysis.names import dotted_name
from devlint.analysis.prefilter import MOVE_CALL
from devlint.analysis.scopes import Binding
from devlint.analysis.torch_api import DEVICE_MOVES
from devlint.rules.base import Invalid, Rule

_OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})
# `optimizer`, `d_optimizer`, `optimizer_G`, `optim2`; not `optimizer_state` or `optim_cfg`.
_CONVENTIONAL_NAME = re.compile(
    r"(?:[a-z0-9]+_)*(?:optimizer|optim)(?:_?[a-z]|_?\d+|_gen|_disc|_generator|_discriminator)?",
    re.IGNORECASE,
)
_OPTIMIZER_CLASS = re.compile(
    r"adam|sgd|rmsprop|adagrad|adadelta|adamax|lbfgs|lamb|lars|lion|adafactor|optimizer\Z",
    re.IGNORECASE,
)


class OptimizerDeviceMove(Rule):
    """
    ## What it does
    Flags `.to()`, `.cuda()` and `.cpu()` called on a `torch.optim` optimizer.

    ## Why is this bad?
    Optimizers have no such methods: the call raises `AttributeError`. An
    optimizer's state follows its parameters, so what needs moving is the
    model, before the optimizer is built.

    The receiver counts as an optimizer when it is bound to a `torch.optim`
    constructor or an `Optimizer` subclass in the visible scope, or carries the
    conventional name (`optimizer`, `optim`, `d_optimizer`, ...) with no
    contrary evidence. An object whose class is visibly something else (a
    wrapper class with its own `.to`) is left alone.

    ## Example
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer = optimizer.to(device)
    ```

    ## Use instead
    ```python
    model = model.to(device)  # before building the optimizer
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    # After loading a checkpoint, move the state tensors instead:
    for state in optimizer.state.values():
        for key, value in state.items():
            if torch.is_tensor(value):
                state[key] = value.to(device)
    ```

    ## Fix safety
    No automatic fix: the right change depends on where the model is moved.
    """

    code = "DEV003"
    name = "optimizer-device-move"
    summary = "device move called on an optimizer"
    trigger_tokens = ("optim",)
    required_patterns = (MOVE_CALL,)

    @classmethod
    def may_fire_in_tree(cls, facts: CallFacts, source: str) -> bool:
        """A move of a dotted name, and a way to know it is an optimizer (see `_evidence`): its
        name, an annotation or base class naming `Optim...`, `torch.optim`, or a class whose
        name says so."""
        if not facts.moved_receivers:
            return False
        if any(_CONVENTIONAL_NAME.fullmatch(name) for name in facts.moved_receivers):
            return True
        if "Optim" in source or "optim" in facts.attribute_names:
            return True
        called = facts.called_functions | facts.called_methods
        return any(name[:1].isupper() and _OPTIMIZER_CLASS.search(name) for name in called)

    VALID = (
        "model = model.to(device)",
        "# optimizer = optimizer.to(device)",
        "class OptimizerWrapper:\n    def to(self, d): return self\n"
        "optimizer = OptimizerWrapper()\noptimizer.to(device)",
        "optimizer = MyScheduleHelper(cfg)\noptimizer.to(device)",
        "def f(optimizer: StateHolder):\n    optimizer.cpu()",
        "for state in optimizer.state.values():\n    state['step'] = state['step'].to(device)",
        "optimizer_state = optimizer_state.cpu()",
        "optim_cfg.to(device)",
        "import torch\nsched = torch.optim.lr_scheduler.StepLR(opt, 1)\nsched.to(device)",
    )
    INVALID = (
        Invalid(
            "import torch\noptimizer = torch.optim.SGD(params, lr=0.1)\n"
            "optimizer = optimizer.to(device)",
            3,
            13,
            "`optimizer` is a torch.optim optimizer",
        ),
        Invalid("from torch import optim\nopt = optim.Adam(params)\nopt.cuda()", 3, 1),
        Invalid("optimizer.to(device)", 1, 1),
        Invalid("self.optimizer.cuda()", 1, 1),
        Invalid("def train(model, d_optimizer):\n    d_optimizer.to('cpu')", 2, 5),
        Invalid(
            "import torch\nclass MyOpt(torch.optim.Optimizer):\n    pass\n"
            "o = MyOpt(params)\no.to(device)",
            5,
            1,
        ),
        Invalid(
            "from transformers import AdamW\noptimizer = AdamW(params)\noptimizer.cuda()", 3, 1
        ),
        Invalid("def f(optimizer: torch.optim.Optimizer):\n    optimizer.cpu()", 2, 5),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in DEVICE_MOVES:
            return
        receiver = dotted_name(func.value)
        if receiver is None or not self._is_optimizer(func.value, receiver):
            return
        self.report(
            node,
            f"`{receiver}` is a torch.optim optimizer, which has no `.{func.attr.value}()`: "
            "move the model before building the optimizer, and after loading a checkpoint "
            "move the tensors in `optimizer.state` instead",
        )

    def _is_optimizer(self, receiver: cst.BaseExpression, name: str) -> bool:
        evidence = self._evidence(self.context.scopes.lookup(receiver))
        if evidence is not None:
            return evidence
        return bool(_CONVENTIONAL_NAME.fullmatch(name.rsplit(".", 1)[-1]))

    def _evidence(self, binding: Optional[Binding]) -> Optional[bool]:
        """True or False when the binding shows what the receiver is; None when it does not."""
        if binding is None:
            return None
        if binding.annotation is not None:
            return "Optim" in self.context.module.code_for_node(binding.annotation)
        if not isinstance(binding.value, cst.Call):
            return None
        callee = self.context.names.qualified_name(binding.value.func) or dotted_name(
            binding.value.func
        )
        if callee is None:
            return None
        class_name = callee.rsplit(".", 1)[-1]
        if callee.startswith("torch.optim.") and not callee.startswith("torch.optim.lr_scheduler"):
            return class_name[:1].isupper()
        if class_name in self.context.scopes.classes_by_name:
            return self.context.scopes.is_subclass_of(class_name, _OPTIMIZER_BASES)
        if class_name[:1].isupper():
            return bool(_OPTIMIZER_CLASS.search(class_name))
        return None
