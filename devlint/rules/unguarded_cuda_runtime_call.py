from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from devlint.analysis.call_screen import CallFacts
from devlint.analysis.cuda_runtime import raising_calls, raising_function_names
from devlint.analysis.prefilter import Confirmed, literal_led
from devlint.analysis.statements import IndentTracker, own_statement
from devlint.context import FileContext, NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import Invalid, Rule

# `.cuda()` is DEV001's; the table's other raising tensor methods are this rule's.
_DEV001_METHODS = frozenset({"cuda"})
# A file that falls back to the CPU: it checks availability and names the CPU somewhere.
_CHECKS_AVAILABILITY = Confirmed(
    literal_led(r"is_available\s*\(", r"device_count\s*\("),
    re.compile(r"\b(is_available|device_count)\s*\("),
)
_PINNING = re.compile(r"pin|offload", re.IGNORECASE)
_NAMES_CPU = Confirmed(literal_led(r"""cpu["']"""), re.compile(r"""["']cpu["']"""))


def _fallback_in(code: str) -> bool:
    return bool(_CHECKS_AVAILABILITY.search(code) and _NAMES_CPU.search(code))


_FALLBACK = "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"


class UnguardedCudaRuntimeCall(Rule):
    """
    ## What it does
    Flags a `torch.cuda` runtime call that raises on a machine without CUDA,
    with no availability check around it: `torch.cuda.synchronize()`,
    `current_device()`, `get_device_name()`, `set_device(0)`,
    `Event(enable_timing=True)`, `reset_peak_memory_stats()`... and the tensor
    method `pin_memory()`. The calls that stay harmless without CUDA
    (`manual_seed_all`, `empty_cache`, `memory_allocated`, `device_count`,
    `is_available`) are never flagged.

    Which calls raise is not a hand list: `devlint/data/cuda_raising.json` records
    what every public `torch.cuda` callable does when called on the CPU-only
    torch (`python -m devlint.data.generate_cuda_raising`, torch version
    recorded in the table). The guards are DEV001's. A `pin_memory()` under a
    condition that names pinning or offloading (`if args.pin_memory:`,
    `if args.offload_ema:`), or in a function named
    for it, is the user's choice and not flagged.

    Only code meant to run without CUDA is checked: code whose device falls back
    to the CPU, that is, which checks availability (`is_available()`,
    `device_count()`) and names the CPU (`"cpu"`), either in the function around
    the call or in the file's top-level code (a script's
    `device = "cuda" if torch.cuda.is_available() else "cpu"`). Code written for
    CUDA alone (a CUDA benchmark, a library's CUDA backend, a helper of GPU-only
    tests) is left alone: its `.cuda()` calls are DEV001's. A loop over
    `range(torch.cuda.device_count())` runs nothing without CUDA and guards its body.

    This is a rule of its own rather than part of DEV001 (unguarded-cuda): DEV001
    reports a *placement* on CUDA and fixes it by choosing a device; these calls
    place nothing, and their fix is a guard.

    ## Why is this bad?
    Code whose device falls back to the CPU still dies on a CPU-only machine at
    the first such call, with "Torch not compiled with CUDA enabled" or
    "Cannot access accelerator device when none is available".

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.cuda.reset_peak_memory_stats()
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    ```

    ## Fix safety
    A call that is a statement of its own, its result unused, is put under
    `if torch.cuda.is_available():`: a **safe** fix, which changes nothing where
    CUDA is there and skips a call that would raise where it is not. A call whose
    result is used (`name = torch.cuda.get_device_name()`) is left to the author.
    """

    code = "DEV014"
    name = "unguarded-cuda-runtime-call"
    summary = "torch.cuda call that raises without CUDA, unguarded"
    fixable = True
    trigger_tokens = ("cuda", "pin_memory")
    # Only code that falls back to the CPU is checked, and the file holds that code.
    required_patterns = (_CHECKS_AVAILABILITY, _NAMES_CPU)

    @classmethod
    def may_fire_in_tree(cls, facts: CallFacts, source: str) -> bool:
        if not facts.cuda_calls.isdisjoint(raising_function_names()):
            return True  # `torch.cuda.synchronize()`, under any import
        methods = facts.called_methods - _DEV001_METHODS
        return not methods.isdisjoint(raising_calls().tensor_methods)

    VALID = (
        _FALLBACK + "torch.cuda.manual_seed_all(0)\ntorch.cuda.empty_cache()",
        _FALLBACK + "print(torch.cuda.memory_allocated(), torch.cuda.device_count())",
        _FALLBACK + "if torch.cuda.is_available():\n    torch.cuda.synchronize()",
        _FALLBACK + "name = torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'",
        _FALLBACK + "def f():\n    if not torch.cuda.is_available():\n        return\n"
        "    torch.cuda.set_device(0)",
        _FALLBACK + "if device.type == 'cuda':\n    torch.cuda.synchronize()",
        _FALLBACK + "def sync_gpu():\n    torch.cuda.synchronize()",
        _FALLBACK + "if args.pin_memory:\n    x = x.pin_memory()",
        _FALLBACK + "if args.offload_ema:\n    ema.pin_memory()\nelse:\n    ema.to(device)",
        _FALLBACK + "def pin_memory(self):\n    self.inp = self.inp.pin_memory()\n    return self",
        _FALLBACK + "import mylib\nmylib.cuda.synchronize()",
        _FALLBACK + "x = torch.cuda.FloatTensor",
        _FALLBACK + "s = 'torch.cuda.synchronize()'",
        "import torch\ntorch.cuda.synchronize()  # a file written for CUDA alone",
        "import torch\ndef pick():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def bench():\n    torch.cuda.synchronize()  # another function's fallback",
        _FALLBACK + "for i in range(torch.cuda.device_count()):\n"
        "    print(torch.cuda.get_device_name(i))",
    )
    INVALID = (
        Invalid(
            _FALLBACK + "torch.cuda.synchronize()",
            3,
            1,
            "`torch.cuda.synchronize()` raises without CUDA",
            fixed=_FALLBACK + "if torch.cuda.is_available():\n    torch.cuda.synchronize()",
        ),
        Invalid(
            "import torch as t\ndef step(x, device='cpu'):\n"
            "    t.cuda.reset_peak_memory_stats()  # stats\n    return x.to(device)\n"
            "step(x, 'cuda' if t.cuda.is_available() else 'cpu')",
            3,
            5,
            fixed="import torch as t\ndef step(x, device='cpu'):\n    if t.cuda.is_available():\n"
            "        t.cuda.reset_peak_memory_stats()  # stats\n    return x.to(device)\n"
            "step(x, 'cuda' if t.cuda.is_available() else 'cpu')",
        ),
        Invalid(_FALLBACK + "name = torch.cuda.get_device_name(0)", 3, 8, "get_device_name"),
        Invalid(_FALLBACK + "start = torch.cuda.Event(enable_timing=True)", 3, 9, "Event"),
        Invalid(_FALLBACK + "from torch import cuda\ncuda.set_device(0)", 4, 1, "set_device"),
        Invalid(_FALLBACK + "print(torch.cuda.current_device())", 3, 7),
        Invalid(_FALLBACK + "batch = batch.pin_memory()", 3, 9, "`batch.pin_memory()`"),
        Invalid(_FALLBACK + "with torch.cuda.device(0):\n    pass", 3, 6),
        Invalid(
            "import torch\ndef run(x):\n"
            "    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "    torch.cuda.synchronize()\n    return x.to(device)",
            4,
            5,
        ),
    )

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        self._table = raising_calls()
        self._indents = IndentTracker(context.module)
        # The conditions around the node, read only where a finding is possible (laying their
        # code out is costly), and the functions around it whose name is about pinning.
        self._enclosing_tests: list[cst.BaseExpression] = []
        self._pinning_functions = 0
        # Whether the top-level code (key 0) or a function (its id) falls back to the CPU.
        self._falls_back: dict[int, bool] = {}
        self._device_count_loops = 0

    def _falls_back_to_cpu(self) -> bool:
        """Whether the function around the node, or the file's top-level code, falls back."""
        if 0 not in self._falls_back:
            top_level = [
                statement
                for statement in self.context.module.body
                if not isinstance(statement, (cst.FunctionDef, cst.ClassDef))
            ]
            code = "".join(self.context.module.code_for_node(s) for s in top_level)
            self._falls_back[0] = _fallback_in(code)
        if self._falls_back[0]:
            return True
        function = self.context.scopes.current_function()
        if function is None:
            return False
        if id(function) not in self._falls_back:
            code = self.context.module.code_for_node(function)
            self._falls_back[id(function)] = _fallback_in(code)
        return self._falls_back[id(function)]

    def visit_For(self, node: cst.For) -> None:
        self._device_count_loops += self._over_device_count(node)

    def leave_For(self, original_node: cst.For) -> None:
        self._device_count_loops -= self._over_device_count(original_node)

    def _over_device_count(self, node: cst.For) -> bool:
        """`for i in range(torch.cuda.device_count()):` runs nothing without CUDA."""
        iterable = node.iter
        if not (isinstance(iterable, cst.Call) and iterable.args):
            return False
        counted = iterable.args[-1].value
        return isinstance(counted, cst.Call) and self.context.names.qualified_name(
            counted.func
        ) in ("torch.cuda.device_count", "torch.accelerator.device_count")

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._indents.enter(node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._indents.leave()

    def visit_If(self, node: cst.If) -> None:
        self._enclosing_tests.append(node.test)

    def leave_If(self, original_node: cst.If) -> None:
        self._enclosing_tests.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pinning_functions += bool(_PINNING.search(node.name.value))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pinning_functions -= bool(_PINNING.search(original_node.name.value))

    def _chooses_pinning(self) -> bool:
        """Whether a function or a condition around the node is about pinning memory."""
        code_of = self.context.module.code_for_node
        return bool(self._pinning_functions) or any(
            _PINNING.search(code_of(test)) for test in self._enclosing_tests
        )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.guards.guarded or self._device_count_loops:
            return
        func = node.func
        qualified = self.context.names.qualified_name(func)
        if qualified is not None and qualified in self._table.functions:
            if not self._falls_back_to_cpu():
                return
            shown = qualified.rsplit(".", 1)[-1]
            self.report(
                node,
                f"`torch.cuda.{shown}()` raises without CUDA "
                f'("{self._table.functions[qualified]}" on torch {self._table.torch_version}) '
                "and no availability check guards it",
                fix=self._guard_fix(node),
            )
            return
        if (
            qualified is None
            and isinstance(func, cst.Attribute)
            and func.attr.value in self._table.tensor_methods
            and func.attr.value not in _DEV001_METHODS
            and self._falls_back_to_cpu()
            and not self._chooses_pinning()
        ):
            self.report(
                node,
                f"`{self.context.source_of(node)}` raises without an accelerator "
                f'("{self._table.tensor_methods[func.attr.value]}") '
                "and no availability check guards it",
            )

    def _guard_fix(self, node: cst.Call) -> Optional[RawFix]:
        """A statement of its own goes under `if torch.cuda.is_available():`."""
        torch = self.context.names.local_name_for("torch")
        if torch is None or not own_statement(self.context.current_statement(), node):
            return None
        indent = self._indents.nested
        code = self.context.module.code_for_node(node)
        guarded = f"if {torch}.cuda.is_available():\n{indent}{code}"
        return RawFix(
            Applicability.SAFE,
            "Call it only where CUDA is available",
            (NodeEdit.replace(node, guarded),),
        )
