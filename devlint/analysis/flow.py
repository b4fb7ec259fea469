"""Where every tensor lives: an abstract interpretation of each function and of the module script.

Statements run in order over an environment that maps names and ``self.x``
attributes to abstract :class:`Value` s; ``if``/``else`` branches run on copies
that are joined afterwards (a branch that always exits does not reach the
join); loop bodies run once, and what they change becomes unknown after the
loop unless it agrees with the value before it. Every expression's value is
recorded, so rules read the placement of any operand at its program point.

Functions start from the module's final environment (the state their globals
have when a script calls them). Methods of a plain class start from what its
``__init__`` assigned to ``self`` attributes no other method reassigns.
Helpers defined in the file are summarised by what they return.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import libcst as cst

from devlint.analysis.calls import CallEvaluator
from devlint.analysis.names import ImportMap, dotted_name
from devlint.analysis.torch_api import MODULE_BASES, is_torch_nn_class, looks_like_loader
from devlint.analysis.values import (
    UNKNOWN,
    Kind,
    Placement,
    Value,
    Where,
    combine,
    cpu_loader,
    join,
)
from devlint.traversal import visit

Env = dict[str, Value]
FunctionNode = cst.FunctionDef


@dataclass
class Unit:
    """One function (or the module script) being interpreted."""

    function: Optional[FunctionNode]
    module_class: bool = False  # a method of an nn.Module subclass
    forward: bool = False
    returns: list[Value] = field(default_factory=list)
    default_device_changed: int = 0  # inside `with torch.device(...)`


@dataclass(frozen=True)
class ClassFacts:
    node: cst.ClassDef
    bases: tuple[str, ...]
    methods: dict[str, FunctionNode]


def statements_of(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    return suite.body


def merge(first: Optional[Env], second: Optional[Env]) -> Optional[Env]:
    """Two environments meeting; None stands for a path that never arrives."""
    if first is None:
        return second
    if second is None:
        return first
    merged: Env = {}
    for key in first.keys() | second.keys():
        if key in first and key in second:
            merged[key] = join(first[key], second[key])
        else:
            merged[key] = UNKNOWN
    return merged


class DeviceFlow(CallEvaluator):
    """The device-flow facts of one file, computed once and read by every flow rule."""

    def __init__(self, module: cst.Module, names: ImportMap, source: str) -> None:
        self.names = names
        self.values: dict[cst.CSTNode, Value] = {}
        self.recording = True
        self.globals: Env = {}
        self.default_device_changed = "set_default_device" in source or (
            "set_default_tensor_type" in source
        )
        self.classes: dict[str, ClassFacts] = {}
        self.functions: dict[str, FunctionNode] = {}
        self._summaries: dict[FunctionNode, Value] = {}
        self._in_progress: set[FunctionNode] = set()
        # What each plain class's `__init__` leaves in `self` attributes no other method changes.
        self._class_attributes: dict[str, Env] = {}
        self._collect_definitions(module.body)
        self._run(module)

    def value_of(self, node: cst.CSTNode) -> Value:
        return self.values.get(node, UNKNOWN)

    # -- definitions ---------------------------------------------------------------

    def _collect_definitions(self, body: Sequence[cst.CSTNode]) -> None:
        for statement in body:
            if isinstance(statement, cst.ClassDef):
                methods = {
                    inner.name.value: inner
                    for inner in statements_of(statement.body)
                    if isinstance(inner, cst.FunctionDef)
                }
                bases = tuple(
                    self.names.qualified_name(base.value) or dotted_name(base.value) or ""
                    for base in statement.bases
                )
                self.classes.setdefault(statement.name.value, ClassFacts(statement, bases, methods))
            elif isinstance(statement, cst.FunctionDef):
                self.functions.setdefault(statement.name.value, statement)

    def is_module_class(self, name: str, seen: Optional[set[str]] = None) -> bool:
        """A class of this file deriving (here or through torch) from nn.Module."""
        facts = self.classes.get(name)
        if facts is None:
            return False
        seen = seen or set()
        seen.add(name)
        for base in facts.bases:
            if base in MODULE_BASES or is_torch_nn_class(base):
                return True
            if base not in seen and self.is_module_class(base, seen):
                return True
        return False

    # -- units -----------------------------------------------------------------------

    def _run(self, module: cst.Module) -> None:
        script_env: Env = {}
        self.exec_block(module.body, script_env, Unit(None))
        self.globals = script_env
        for function, owner in _functions_in(module.body, None):
            if owner is None or owner.name.value not in self.classes:
                self._analyze(function, Unit(function), {})
        for name, facts in self.classes.items():
            self._analyze_class(name, facts)

    def _analyze_class(self, name: str, facts: ClassFacts) -> None:
        module_class = self.is_module_class(name)
        attributes: Env = {}
        for base in facts.bases:
            attributes.update(self._class_attributes.get(base, {}))
        init = facts.methods.get("__init__")
        if init is not None:
            init_env = self._analyze(init, Unit(init, module_class), attributes)
            attributes = {key: value for key, value in init_env.items() if key.startswith("self.")}
        if module_class:
            attributes = {}  # a module's attributes move with it: unknown here, DEV009's concern
        reassigned = set().union(
            *(_assigned_names(m) for n, m in facts.methods.items() if n != "__init__")
        )
        attributes = {key: value for key, value in attributes.items() if key not in reassigned}
        self._class_attributes[name] = attributes
        for method_name, method in facts.methods.items():
            if method_name != "__init__":
                unit = Unit(method, module_class, forward=module_class and method_name == "forward")
                self._analyze(method, unit, attributes)

    def _analyze(self, function: FunctionNode, unit: Unit, attributes: Env) -> Env:
        env = dict(self.globals)
        env.update(attributes)
        self._bind_parameters(function, unit, env)
        self.exec_block(statements_of(function.body), env, unit)
        return env

    def _bind_parameters(self, function: FunctionNode, unit: Unit, env: Env) -> None:
        params = function.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for index, param in enumerate(every):
            name = param.name.value
            if index == 0 and name in ("self", "cls") and unit.module_class:
                where = Where.INPUT if unit.forward else Where.UNKNOWN
                env[name] = Value(Kind.MODULE, Placement(where))
            elif unit.forward and index > 0:
                env[name] = Value(Kind.UNKNOWN, Placement(Where.INPUT, evidence=f"input `{name}`"))
            elif looks_like_loader(name):
                env[name] = cpu_loader(f"from the data loader `{name}`", param)
            else:
                env[name] = UNKNOWN
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                env[star.name.value] = UNKNOWN

    def summary(self, function: FunctionNode) -> Value:
        """What a helper of this file returns, analysed with unknown arguments."""
        known = self._summaries.get(function)
        if known is not None:
            return known
        if function in self._in_progress:
            return UNKNOWN
        self._in_progress.add(function)
        recording, self.recording = self.recording, False
        unit = Unit(function)
        env: Env = {}
        self._bind_parameters(function, unit, env)
        self.exec_block(statements_of(function.body), env, unit)
        self.recording = recording
        self._in_progress.discard(function)
        result = unit.returns[0] if unit.returns else UNKNOWN
        for other in unit.returns[1:]:
            result = join(result, other)
        self._summaries[function] = result
        return result

    # -- statements --------------------------------------------------------------------

    def exec_block(self, statements: Sequence[cst.CSTNode], env: Env, unit: Unit) -> Optional[Env]:
        """Run statements in order; None when control never reaches the end."""
        for statement in statements:
            if not self._exec(statement, env, unit):
                return None
        return env

    def _exec(self, statement: cst.CSTNode, env: Env, unit: Unit) -> bool:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return all(self._exec_small(small, env, unit) for small in statement.body)
        handler = _COMPOUND.get(type(statement))
        if handler is not None:
            return handler(self, statement, env, unit)
        return True

    def _exec_small(self, statement: cst.BaseSmallStatement, env: Env, unit: Unit) -> bool:
        if isinstance(statement, cst.Expr):
            if isinstance(statement.value, cst.Call):
                self.eval_call(statement.value, env, unit, bare=True)
            else:
                self.eval(statement.value, env, unit)
        elif isinstance(statement, cst.Assign):
            value = self.eval(statement.value, env, unit)
            for target in statement.targets:
                self.bind(target.target, value, env, unit)
        elif isinstance(statement, cst.AnnAssign) and statement.value is not None:
            self.bind(statement.target, self.eval(statement.value, env, unit), env, unit)
        elif isinstance(statement, cst.AugAssign):
            current = self.eval(statement.target, env, unit)
            operand = self.eval(statement.value, env, unit)
            if current.kind is not Kind.UNKNOWN or current.where is not Where.UNKNOWN:
                self.bind(statement.target, combine([current, operand]), env, unit)
        elif isinstance(statement, cst.Return):
            value = self.eval(statement.value, env, unit) if statement.value else UNKNOWN
            unit.returns.append(value)
            return False
        elif isinstance(statement, cst.Raise):
            if statement.exc is not None:
                self.eval(statement.exc, env, unit)
            return False
        elif isinstance(statement, (cst.Continue, cst.Break)):
            return False
        elif isinstance(statement, cst.Assert):
            self.eval(statement.test, env, unit)
        return True

    def _exec_if(self, node: cst.If, env: Env, unit: Unit) -> bool:
        self.eval(node.test, env, unit)
        body = self.exec_block(statements_of(node.body), dict(env), unit)
        if isinstance(node.orelse, cst.If):
            other_env = dict(env)
            orelse: Optional[Env] = (
                other_env if self._exec_if(node.orelse, other_env, unit) else None
            )
        elif isinstance(node.orelse, cst.Else):
            orelse = self.exec_block(statements_of(node.orelse.body), dict(env), unit)
        else:
            orelse = dict(env)
        return _replace(env, merge(body, orelse))

    def _exec_for(self, node: cst.For, env: Env, unit: Unit) -> bool:
        iterable = self.eval(node.iter, env, unit)
        body_env = dict(env)
        self.bind(node.target, iterable.item or UNKNOWN, body_env, unit)
        self.exec_block(statements_of(node.body), body_env, unit)
        merged = merge(env, body_env)
        _replace(env, merged)
        if node.orelse is not None:
            return self.exec_block(statements_of(node.orelse.body), env, unit) is not None
        return True

    def _exec_while(self, node: cst.While, env: Env, unit: Unit) -> bool:
        self.eval(node.test, env, unit)
        body_env = dict(env)
        self.exec_block(statements_of(node.body), body_env, unit)
        return _replace(env, merge(env, body_env))

    def _exec_with(self, node: cst.With, env: Env, unit: Unit) -> bool:
        moves_default = False
        for item in node.items:
            value = self.eval(item.item, env, unit)
            moves_default = moves_default or value.kind is Kind.DEVICE_OBJECT
            if item.asname is not None:
                self.bind(item.asname.name, UNKNOWN, env, unit)
        unit.default_device_changed += moves_default
        try:
            return self.exec_block(statements_of(node.body), env, unit) is not None
        finally:
            unit.default_device_changed -= moves_default

    def _exec_try(self, node: cst.Try, env: Env, unit: Unit) -> bool:
        body_env = dict(env)
        body = self.exec_block(statements_of(node.body), body_env, unit)
        if body is not None and node.orelse is not None:
            body = self.exec_block(statements_of(node.orelse.body), body, unit)
        # A handler may start anywhere in the body: from what holds both before and after it.
        start = merge(env, body_env) or env
        outcome = body
        for handler in node.handlers:
            handler_env = dict(start)
            if handler.name is not None:
                self.bind(handler.name.name, UNKNOWN, handler_env, unit)
            outcome = merge(
                outcome, self.exec_block(statements_of(handler.body), handler_env, unit)
            )
        if node.finalbody is not None:
            final_env = dict(outcome if outcome is not None else start)
            self.exec_block(statements_of(node.finalbody.body), final_env, unit)
        return _replace(env, outcome)

    def _exec_definition(
        self, node: Union[cst.FunctionDef, cst.ClassDef], env: Env, unit: Unit
    ) -> bool:
        env[node.name.value] = Value(Kind.CALLABLE)
        return True

    # -- binding -------------------------------------------------------------------------

    def bind(self, target: cst.BaseExpression, value: Value, env: Env, unit: Unit) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [element.value for element in target.elements]
            for index, element in enumerate(elements):
                if isinstance(element, cst.StarredElement):
                    self.bind(element.value, UNKNOWN, env, unit)
                else:
                    self.bind(element, _unpacked(value, index, len(elements)), env, unit)
            return
        if isinstance(target, cst.Subscript):
            container = dotted_name(target.value)
            if container is not None and container in env:
                held = env[container]
                env[container] = join(held, held.placed(value.placement))
            return
        dotted = dotted_name(target)
        if dotted is not None:
            env[dotted] = value
            if self.recording and value is not UNKNOWN:
                self.values[target] = value


def _replace(env: Env, merged: Optional[Env]) -> bool:
    if merged is None:
        return False
    env.clear()
    env.update(merged)
    return True


def _unpacked(value: Value, index: int, count: int) -> Value:
    if value.elements and len(value.elements) == count:
        return value.elements[index]
    if value.kind is Kind.BATCH:
        return Value(Kind.TENSOR, value.placement)
    return UNKNOWN if value.item is None else value.item


_StatementHandler = Callable[[DeviceFlow, Any, Env, Unit], bool]
_COMPOUND: dict[type, _StatementHandler] = {
    cst.If: DeviceFlow._exec_if,
    cst.For: DeviceFlow._exec_for,
    cst.While: DeviceFlow._exec_while,
    cst.With: DeviceFlow._exec_with,
    cst.Try: DeviceFlow._exec_try,
    cst.FunctionDef: DeviceFlow._exec_definition,
    cst.ClassDef: DeviceFlow._exec_definition,
}


def _functions_in(
    body: Sequence[cst.CSTNode], owner: Optional[cst.ClassDef]
) -> Iterator[tuple[FunctionNode, Optional[cst.ClassDef]]]:
    """Every function in a block, with the class it is a method of; nested ones too."""
    for statement in body:
        if isinstance(statement, cst.FunctionDef):
            yield statement, owner
            yield from _functions_in(statements_of(statement.body), None)
        elif isinstance(statement, cst.ClassDef):
            yield from _functions_in(statements_of(statement.body), statement)
        elif isinstance(statement, (cst.If, cst.For, cst.While, cst.With, cst.Try)):
            for block in _blocks(statement):
                yield from _functions_in(statements_of(block), owner)


def _blocks(statement: cst.BaseCompoundStatement) -> Iterator[cst.BaseSuite]:
    yield statement.body
    orelse = getattr(statement, "orelse", None)
    if isinstance(orelse, cst.If):
        yield from _blocks(orelse)
    elif orelse is not None:
        yield orelse.body
    if isinstance(statement, cst.Try):
        for handler in statement.handlers:
            yield handler.body
        if statement.finalbody is not None:
            yield statement.finalbody.body


class _AssignedNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def _add(self, target: cst.BaseExpression) -> None:
        dotted = dotted_name(target)
        if dotted is not None:
            self.names.add(dotted)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        # An in-place move (`self.model.to(device)`) changes the attribute too.
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("to", "cuda", "cpu"):
            self._add(node.func.value)


def _assigned_names(function: FunctionNode) -> set[str]:
    visitor = _AssignedNames()
    visit(function.body, visitor)
    return visitor.names
