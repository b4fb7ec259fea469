"""Calls carry placements: a call binds its arguments' placements to the callee's parameters.

A helper of the file is analysed once per distinct context (the values its call passes, keyed by
parameter), with a bound per helper past which its context-free summary is used. Parameters the
call leaves out take their default's value (`device="cpu"`), never a default where the call
passes an argument. What the helper does with a CPU tensor its caller passed, such as handing it
to a module the caller moved (`score(net, features)` calling `net(features)`) or combining it
with a tensor on a device (`self._likelihood(inputs, mask)` adding `mask` to `inputs`), is
recorded as a :class:`CallFinding` at the call site that supplied the value. Methods of the
class being analysed (`self.helper(...)`) are called the same way, with `self` bound to the
caller's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional, Union

from devlint.analysis.loops import PathCounts
from devlint.analysis.values import Value

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Context = tuple[tuple[str, Value], ...]

# Distinct contexts analysed per helper; past it, the context-free summary answers.
CONTEXTS_PER_FUNCTION = 8


@dataclass(frozen=True)
class InnerFinding:
    """In a callee: the parameter whose CPU value met a module on a device, or a tensor on one
    in an operation, and where."""

    parameter: str
    node: ast.AST  # the module call or the operation inside the callee (or deeper)
    partner: Value  # the module, or the operand on a device
    function: str  # the helper the node is in
    combined: bool = False  # an operation, not a module call


@dataclass(frozen=True)
class CallFinding:
    """At a call site: the argument whose CPU value a helper hands to a module on a device."""

    argument: ast.expr
    value: Value
    inner: InnerFinding


@dataclass
class Frame:
    """A helper being analysed in a context: which values its parameters hold."""

    bound: dict[str, Value]
    function: str
    findings: list[InnerFinding] = field(default_factory=list)
    # For a loop's first iteration (see `call_contexts`): where the helper's straight path
    # starts; findings off that path are not recorded (`if t == 0: return cur` may cover them).
    straight_from: Optional[PathCounts] = None

    def parameter_of(self, value: Value) -> Optional[str]:
        """The parameter holding ``value`` itself, or else the only one placed where it is."""
        for name, held in self.bound.items():
            if held is value:
                return name
        placed = [name for name, held in self.bound.items() if held.placement is value.placement]
        return placed[0] if len(placed) == 1 else None


def bind_arguments(
    function: FunctionNode, call: ast.Call, arguments: list[Value], skip_first: bool = False
) -> Optional[dict[str, Value]]:
    """The parameters ``call`` passes, with their values (in `call_arguments` order); None
    where the call cannot be matched (`*args`, `**kwargs`, too many arguments)."""
    if any(type(arg) is ast.Starred for arg in call.args):
        return None
    if any(keyword.arg is None for keyword in call.keywords):
        return None
    parameters = function.args
    positional = [p.arg for p in (*parameters.posonlyargs, *parameters.args)]
    if skip_first:
        positional = positional[1:]
    if len(call.args) > len(positional):
        return None
    bound = dict(zip(positional, arguments[: len(call.args)]))
    accepted = set(positional) | {p.arg for p in parameters.kwonlyargs}
    for index, keyword in enumerate(call.keywords, len(call.args)):
        if keyword.arg not in accepted or keyword.arg in bound:
            return None  # a name the helper has no parameter for: into `**kwargs`
        bound[keyword.arg] = arguments[index]
    return bound


def defaults_of(function: FunctionNode) -> dict[str, ast.expr]:
    """Each parameter's default expression."""
    parameters = function.args
    positional = [*parameters.posonlyargs, *parameters.args]
    defaults = {p.arg: d for p, d in zip(reversed(positional), reversed(parameters.defaults))}
    defaults.update(
        (p.arg, d) for p, d in zip(parameters.kwonlyargs, parameters.kw_defaults) if d is not None
    )
    return defaults


def none_defaulted(function: FunctionNode) -> set[str]:
    """The parameters whose default is `None`."""
    return {
        name
        for name, default in defaults_of(function).items()
        if isinstance(default, ast.Constant) and default.value is None
    }


def argument_node(
    call: ast.Call, function: FunctionNode, parameter: str, skip_first: bool = False
) -> Optional[ast.expr]:
    """The expression ``call`` passes for ``parameter`` (past `self` for a method call)."""
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    parameters = function.args
    positional = [p.arg for p in (*parameters.posonlyargs, *parameters.args)]
    if skip_first:
        positional = positional[1:]
    if parameter in positional:
        index = positional.index(parameter)
        # (past a `*args`, which parameter a position binds is unknown)
        passed = call.args[: index + 1]
        if len(passed) > index and not any(isinstance(arg, ast.Starred) for arg in passed):
            return call.args[index]
    return None
