"""What the device flow learns from the summaries of imported project files.

A call of an imported project class or function evaluates to what its summary says (a module
or a tensor made on the CPU, or the value of the argument whose device its result stays on); a
call of an imported function that hands one of its arguments to another (`score(net, x)` where
`score` calls `net(x)`), or combines it with another in one operation (`blend(x, noise)` where
`blend` adds them), pairs those arguments, so that a rule can check them as if the call were
written in the caller's file.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Optional

from devlint.analysis.project import Found, ProjectView
from devlint.analysis.syntax import dotted_name
from devlint.analysis.syntax_screen import SyntaxFacts
from devlint.analysis.values import Kind, Placement, Value, Where


def _shown(found: Found) -> str:
    return f"`{found.name}` of {os.path.basename(found.path)}"


def imported_value(view: ProjectView, node: ast.Call) -> Optional[Value]:
    """The value of a call of an imported project class or function, where its summary says."""
    found = view.lookup(dotted_name(node.func))
    if found is None:
        return None
    if found.kind == "class":
        if not view.is_module_class(found):
            return None
        evidence = f"created on the CPU ({_shown(found)} is an nn.Module)"
        return Value(Kind.MODULE, Placement(Where.CPU, evidence=evidence, origin=node))
    returns = found.facts.get("returns")
    if returns == "cpu_tensor":
        evidence = f"created on the CPU by {_shown(found)}"
        return Value(Kind.TENSOR, Placement(Where.CPU, evidence=evidence, origin=node))
    if returns == "cpu_module":
        evidence = f"a module returned on the CPU by {_shown(found)}"
        return Value(Kind.MODULE, Placement(Where.CPU, evidence=evidence, origin=node))
    device = found.facts.get("cpu_unless")
    if device is not None and not _passes(found, node, device):
        evidence = (
            f"created on the CPU by {_shown(found)}, whose `{device}` this call leaves at None"
        )
        return Value(Kind.TENSOR, Placement(Where.CPU, evidence=evidence, origin=node))
    return None


def with_imported_cpu_sources(view: Optional[ProjectView], facts: SyntaxFacts) -> SyntaxFacts:
    """The screen's facts, with a CPU source in every function where the file calls an imported
    project function that makes a tensor on the CPU (which the file's own syntax does not show)."""
    device_side = facts.device_source or facts.tensor_parameter or facts.forward_method
    if view is None or facts.cpu_everywhere or not device_side:
        return facts
    called = {name for unit in facts.units.values() for name in unit.called}
    if not calls_cpu_maker(view, called):
        return facts
    return replace(facts, cpu_tensor_source=True, cpu_everywhere=True)


def calls_cpu_maker(view: ProjectView, called: Iterable[str]) -> bool:
    """Whether one of the ``called`` names is an imported project function that makes a tensor
    on the CPU (always, or unless given a device): a CPU source the file's own syntax hides."""
    for name in called:
        if name not in view.imports:
            continue
        found = view.lookup(name)
        facts = found.facts if found is not None and found.kind == "function" else {}
        if facts.get("returns") == "cpu_tensor" or facts.get("cpu_unless"):
            return True
    return False


def _passes(found: Found, node: ast.Call, parameter: str) -> bool:
    """Whether ``node`` passes ``parameter`` of the imported function (or may: `**kwargs`)."""
    if any(keyword.arg in (parameter, None) for keyword in node.keywords):
        return True
    if any(isinstance(argument, ast.Starred) for argument in node.args):
        return True
    positional = found.facts.get("parameters", [])
    return parameter in positional[: len(node.args)]


def followed_argument(view: ProjectView, node: ast.Call) -> Optional[ast.expr]:
    """The argument whose device a call of an imported function returns its result on
    (`db_to_amplitude(snr)`, where the function computes `10 ** (x / 20)`)."""
    bound = _bound_arguments(view, node, "follows")
    if bound is None:
        return None
    found, passed = bound
    return passed.get(found.facts["follows"])


@dataclass(frozen=True)
class Feed:
    """`score(net, x)`: the imported function calls its parameter `module` with `given`."""

    given: ast.expr
    module: ast.expr
    given_parameter: str
    module_parameter: str
    function: str  # as shown in messages: "`score` of utils.py"


def fed_modules(view: ProjectView, node: ast.Call) -> list[Feed]:
    """The argument pairs of a call of an imported function that calls one with the other."""
    bound = _bound_arguments(view, node, "feeds")
    if bound is None:
        return []
    found, passed = bound
    feeds = []
    for given, module in found.facts["feeds"]:
        if given in passed and module in passed:
            feeds.append(Feed(passed[given], passed[module], given, module, _shown(found)))
    return feeds


@dataclass(frozen=True)
class Mix:
    """`blend(x, noise)`: the imported function combines its parameters `first` and `second`
    in one operation, at ``line`` of its file."""

    first: ast.expr
    second: ast.expr
    function: str  # as shown in messages: "`blend` of utils.py"
    line: int
    file: str  # the function's file name, "utils.py"


def mixed_arguments(view: ProjectView, node: ast.Call) -> list[Mix]:
    """The argument pairs of a call of an imported function that combines one with the other."""
    bound = _bound_arguments(view, node, "mixes")
    if bound is None:
        return []
    found, passed = bound
    return [
        Mix(passed[first], passed[second], _shown(found), line, os.path.basename(found.path))
        for first, second, line in found.facts["mixes"]
        if first in passed and second in passed
    ]


def _bound_arguments(
    view: ProjectView, node: ast.Call, fact: str
) -> Optional[tuple[Found, dict[str, ast.expr]]]:
    """The imported function a call names, where its summary holds ``fact``, and what the call
    passes for each parameter (nothing where a `*args` hides the positions)."""
    if not isinstance(node.func, (ast.Name, ast.Attribute)):
        return None
    found = view.lookup(dotted_name(node.func))
    if found is None or found.kind != "function" or not found.facts.get(fact):
        return None
    if any(isinstance(argument, ast.Starred) for argument in node.args):
        return None
    parameters: list[str] = found.facts["parameters"]
    passed: dict[str, ast.expr] = dict(zip(parameters, node.args))
    for keyword in node.keywords:
        if keyword.arg is not None:
            passed[keyword.arg] = keyword.value
    return found, passed


def imported_attribute(view: ProjectView, node: ast.Attribute) -> Optional[Value]:
    """`net.mask` where `net = Net()` of another project file, whose `__init__` makes `mask` a
    plain CPU tensor and which defines no `to()`: after `net.to(device)` it is still on the CPU."""
    if not isinstance(node.value, ast.Name):
        return None
    found = view.instances().get(node.value.id)
    if found is None or node.attr not in found.facts["cpu_attributes"]:
        return None
    evidence = (
        f"a plain tensor attribute that `{found.name}.__init__` makes on the CPU "
        f"({os.path.basename(found.path)}), which `.to()` does not move"
    )
    return Value(Kind.TENSOR, Placement(Where.CPU, evidence=evidence))
