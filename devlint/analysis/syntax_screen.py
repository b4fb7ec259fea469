"""Structural facts, read off CPython's syntax tree, that prove a device-flow rule cannot fire.

The text tests of `prefilter` admit nearly every file of model code: "device" and `torch.zeros`
occur everywhere. What the interpreter needs to report is stricter: a place where a value is put
on a device, and a tensor it places on the CPU. Both show in the tree the flow rules read anyway,
and one walk of it finds them: where no flow rule can fire, the interpreter does not run.

The same walk keeps the facts of each function apart (its own code, nested functions aside), so
that the interpreter can also skip the functions of a file that cannot report (see
`DeviceFlow`): a function sees only its own code, the module's globals, the helpers it calls,
and, in a plain class, what `__init__` set.

Each fact is a necessary condition read off `calls.py`: where the interpreter creates a device
or CPU placement, a fact here is set. The facts are deliberately loose (a factory call counts
whatever it is assigned to): they must never reject code a rule would report on.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from devlint.analysis.contexts import none_defaulted
from devlint.analysis.parameters import (
    TENSOR_ONLY_ATTRIBUTES,
    FunctionNode,
    size_called,
    tensor_parameters,
)
from devlint.analysis.placers import PLACER_CLASSES, places_off_the_cpu
from devlint.analysis.prefilter import LOADER_NAME
from devlint.analysis.syntax import (
    CHILD_FIELDS,
    child_fields,
    has_arguments,
    last_name,
    nodes_below,
)
from devlint.analysis.torch_api import (
    DEVICE_MOVES,
    DTYPE_NAMES,
    FACTORY_NAMES,
    LIGHTNING_STEP_HOOKS,
)


@dataclass
class UnitFacts:
    """What the code of one function (or of the module script) holds, nested functions aside."""

    # `.cuda(...)`, `.to(target)`, `device=` something other than None or "cpu", a "cuda" string.
    device_source: bool = False
    # A factory call without `device=` (or `**kwargs`, which may hold one), `.cpu()`, a "cpu"
    # string.
    cpu_tensor_source: bool = False
    # `.numpy()`, a numpy function, `pack_padded_sequence`: a call that needs host memory
    host_call: bool = False
    discarded_move: bool = False  # a statement that is only `x.to(...)`, `x.cuda()` or `x.cpu()`
    # The names it calls: `helper(...)`, and `self.helper` for a method of its class.
    called: set[str] = field(default_factory=set)
    # Names used the way only a tensor is used (`x.device`, `x.unsqueeze(...)`): with a
    # parameter's annotation, what places a parameter on the caller's device (`parameters`).
    tensor_names: set[str] = field(default_factory=set)
    # Names passed as `device=`: a parameter left at its default None makes a CPU tensor.
    device_names: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class SyntaxFacts:
    device_source: bool = False
    # A CPU source in any function, a factory imported under another name, a loader's name.
    cpu_tensor_source: bool = False
    forward_method: bool = False  # `def forward`: its inputs are on the module's device
    # A function with a tensor parameter, which lives on the caller's device (`parameters`).
    tensor_parameter: bool = False
    discarded_move: bool = False
    # The facts of each function by its node, and of the module script under the module's.
    units: Mapping[ast.AST, UnitFacts] = field(default_factory=dict, compare=False)
    # Something every function may see on the CPU: a factory imported under another name
    # (`zeros as z`, or `range`) makes calls no name test recognises; a loader's batches.
    cpu_everywhere: bool = field(default=False, compare=False)


def syntax_facts(tree: ast.Module, source: str) -> SyntaxFacts:
    units: dict[ast.AST, UnitFacts] = {}
    forward = imports_factory = False
    pending: list[tuple[ast.AST, list[ast.stmt]]] = [(tree, tree.body)]
    known = CHILD_FIELDS
    while pending:
        owner, body = pending.pop()
        units[owner] = facts = UnitFacts()
        stack: list[object] = list(body)
        # One loop, no generator or helper per node: the screen's walk is its whole cost.
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                continue  # the commonest node, and a leaf
            fields = known[kind] if kind in known else child_fields(kind)
            if fields is None:
                continue
            if kind is ast.Call:
                _read_call(cast(ast.Call, node), facts)
            elif kind is ast.Constant:
                value = cast(ast.Constant, node).value
                if type(value) is str:
                    facts.device_source = facts.device_source or value.startswith("cuda")
                    facts.cpu_tensor_source = facts.cpu_tensor_source or value == "cpu"
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                definition = cast(ast.FunctionDef, node)
                forward = forward or definition.name in _RUN_ON_THE_INPUTS_DEVICE
                pending.append((definition, definition.body))  # a unit of its own
                fields = _DEFINITION_HEADER
            elif kind is ast.Attribute:
                attribute = cast(ast.Attribute, node)
                if attribute.attr in TENSOR_ONLY_ATTRIBUTES and type(attribute.value) is ast.Name:
                    facts.tensor_names.add(attribute.value.id)
            elif kind is ast.Expr:
                moved = _is_move(cast(ast.Expr, node).value)
                facts.discarded_move = facts.discarded_move or moved
            elif kind is ast.ImportFrom:
                imports_factory = imports_factory or _imports_factory(cast(ast.ImportFrom, node))
            elif kind is ast.Import:
                # Every unit may then call numpy unseen: as for an aliased factory, assume so.
                imports_factory = imports_factory or _imports_numpy_elsewise(cast(ast.Import, node))
            for name in fields:
                child = getattr(node, name)
                if type(child) is list:
                    stack.extend(child)
                elif child is not None:
                    stack.append(child)
        if facts.device_names and not facts.cpu_tensor_source and owner is not tree:
            # `torch.zeros(n, device=device)` with `device=None` by default: on the CPU
            left_none = none_defaulted(cast(FunctionNode, owner))
            facts.cpu_tensor_source = not facts.device_names.isdisjoint(left_none)
    everywhere = imports_factory or bool(LOADER_NAME.search(source))
    return SyntaxFacts(
        device_source=any(facts.device_source for facts in units.values()),
        cpu_tensor_source=everywhere or any(facts.cpu_tensor_source for facts in units.values()),
        forward_method=forward,
        tensor_parameter=any(
            tensor_parameters(cast(FunctionNode, owner), facts.tensor_names)
            for owner, facts in units.items()
            if owner is not tree
        ),
        discarded_move=any(facts.discarded_move for facts in units.values()),
        units=units,
        cpu_everywhere=everywhere,
    )


# `forward`, and the steps of a LightningModule, which its Trainer calls with the batch moved.
_RUN_ON_THE_INPUTS_DEVICE = frozenset({"forward"}) | LIGHTNING_STEP_HOOKS


def _read_call(call: ast.Call, facts: UnitFacts) -> None:
    if not facts.device_source:
        facts.device_source = _places_on_device(call)
    if not facts.cpu_tensor_source:
        facts.cpu_tensor_source = _creates_on_cpu(call)
    for keyword in call.keywords:
        if keyword.arg == "device" and type(keyword.value) is ast.Name:
            facts.device_names.add(keyword.value.id)
    func = call.func
    if isinstance(func, ast.Name):
        facts.called.add(func.id)
    elif (
        isinstance(func, ast.Attribute) and type(func.value) is ast.Name and func.value.id == "self"
    ):
        facts.called.add("self." + func.attr)
    sized = size_called(call)
    if sized is not None:
        facts.tensor_names.add(sized)
    if isinstance(func, ast.Attribute) and (
        func.attr == "numpy" or _root_name(func) in _NUMPY_NAMES
    ):
        facts.host_call = True  # `.numpy()`, or a numpy function such as `np.mean(t)`
    elif last_name(func) in _HOST_FUNCTIONS:
        facts.host_call = True


_NUMPY_NAMES = frozenset({"np", "numpy"})
# Functions that want some of their tensors in host memory (their lengths), or all of them
# (what matplotlib plots or shows).
PLOTTING_FUNCTIONS = frozenset(
    (
        "plot scatter imshow matshow hist hist2d bar barh errorbar fill_between stem "
        "semilogx semilogy loglog pcolormesh pcolor contour contourf boxplot violinplot"
    ).split()
)
_HOST_FUNCTIONS = frozenset({"pack_padded_sequence"}) | PLOTTING_FUNCTIONS


def _root_name(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _imports_numpy_elsewise(node: ast.Import) -> bool:
    """`import numpy as onp`: numpy calls under a name `_read_call` does not know."""
    return any(alias.name == "numpy" and alias.asname not in (None, "np") for alias in node.names)


# What of a nested function belongs to the code around it: all but its body.
_DEFINITION_HEADER = ("decorator_list", "args", "returns")


def _method(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def _is_move(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _method(node) in DEVICE_MOVES


def _places_on_device(call: ast.Call) -> bool:
    method = _method(call)
    if method == "cuda" or (method == "to" and has_arguments(call)):
        return True
    if last_name(call.func) in PLACER_CLASSES:
        return places_off_the_cpu(call)  # `Accelerator()`: what it prepares goes to its device
    if method in _PARAMETER_METHODS:
        return True  # a module's parameters: on its device
    return _given_a_device(call)


def _given_a_device(call: ast.Call) -> bool:
    """`device=d`, other than None or `"cpu"`."""
    return any(
        keyword.arg == "device" and not _is_none_or_cpu(keyword.value) for keyword in call.keywords
    )


def places_on_a_device(tree: ast.AST) -> bool:
    """Whether code puts something on a device itself: `.cuda()`, `.to(device)`, `device=d`
    (not `.to("cpu")` nor `.to(torch.float64)`), an `Accelerator()`, or names CUDA. Unlike
    the screen's `device_source`, `.parameters()` is no evidence: every script has an
    optimizer."""
    for node in nodes_below(tree):
        if isinstance(node, ast.Call) and _puts_on_a_device(node):
            return True
        if type(node) is ast.Constant and type(node.value) is str and node.value.startswith("cuda"):
            return True
    return False


def keeps_modules_on_a_device(tree: ast.AST) -> bool:
    """Whether code moves something to a device itself (`.cuda()`, `.to(device)`, `device=d`,
    an `Accelerator()`; not `.to("cpu")` or `.to(torch.float64)`) and never moves a module back
    in place (`model.cpu()` or `model.to("cpu")` as a statement of its own): then a module's
    methods run where it was moved."""
    moved = False
    for node in nodes_below(tree):
        if isinstance(node, ast.Expr) and _moves_back(node.value):
            return False
        if isinstance(node, ast.Call) and not moved:
            moved = _puts_on_a_device(node)
    return moved


def _puts_on_a_device(call: ast.Call) -> bool:
    """A move off the CPU, or an `Accelerator()` or `Fabric()`, which places what it prepares
    (unless asked for the CPU)."""
    if last_name(call.func) in PLACER_CLASSES:
        return places_off_the_cpu(call)
    return _moves_off_the_cpu(call)


def moves_a_module_back(tree: ast.AST) -> bool:
    """Whether code moves a module back in place (`model.cpu()` as a statement of its own)."""
    return any(isinstance(node, ast.Expr) and _moves_back(node.value) for node in nodes_below(tree))


def _moves_off_the_cpu(call: ast.Call) -> bool:
    method = _method(call)
    if method == "cuda":
        return True
    if method == "to" and call.args:
        return not (_is_none_or_cpu(call.args[0]) or _is_dtype(call.args[0]))
    return _given_a_device(call)


def _moves_back(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    method = _method(value)
    return method == "cpu" or (
        method == "to" and bool(value.args) and _is_none_or_cpu(value.args[0])
    )


def _is_dtype(node: ast.expr) -> bool:
    """`torch.float64`, `torch.half`: a dtype, not a device (by its last name: the screen
    resolves no imports)."""
    return isinstance(node, ast.Attribute) and node.attr in DTYPE_NAMES


_PARAMETER_METHODS = frozenset({"parameters", "buffers", "named_parameters", "named_buffers"})


def _is_none_or_cpu(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in (None, "cpu")


def _creates_on_cpu(call: ast.Call) -> bool:
    if _method(call) == "cpu":
        return True
    func = call.func
    name = func.id if isinstance(func, ast.Name) and func.id != "range" else _method(call)
    if name not in FACTORY_NAMES:
        return False
    return not any(keyword.arg in ("device", None) for keyword in call.keywords)


def _imports_factory(node: ast.ImportFrom) -> bool:
    """`from torch import range`, `from torch import zeros as z`: calls no name test can spot."""
    return any(
        alias.name in FACTORY_NAMES and (alias.asname is not None or alias.name == "range")
        for alias in node.names
    )
