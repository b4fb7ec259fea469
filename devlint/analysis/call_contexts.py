"""Calls carry placements: the interpreter's side that analyses a helper of the file, or a method
of the class, with the values its call passes (see `contexts` for the data and the bounds).

A mixin of :class:`~devlint.analysis.flow.DeviceFlow`, which runs the statements.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Optional

from devlint.analysis.calls import CallEvaluator
from devlint.analysis.contexts import (
    CONTEXTS_PER_FUNCTION,
    CallFinding,
    Context,
    Frame,
    InnerFinding,
    argument_node,
    bind_arguments,
    defaults_of,
    none_defaulted,
)
from devlint.analysis.syntax import (
    CLASS_LEVEL_DECORATORS,
    call_arguments,
    dotted_name,
    parameters_of,
)
from devlint.analysis.units import ClassFacts, Env, FunctionNode, ModuleMembers, Unit
from devlint.analysis.values import (
    NONE,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    Where,
    cannot_meet,
    join_all,
)


class CallContexts(CallEvaluator):
    """Helpers and methods analysed per calling context, and what they report to their callers."""

    classes: dict[str, ClassFacts]
    call_findings: dict[ast.Call, list[CallFinding]]
    _summaries: dict[FunctionNode, Value]
    _contexts: dict[
        tuple[FunctionNode, Context, frozenset[str], bool, bool],
        tuple[Value, tuple[InnerFinding, ...]],
    ]
    _context_counts: dict[FunctionNode, int]
    _constructions: dict[str, list[Optional[dict[str, Value]]]]
    _call_sites: dict[FunctionNode, list[Optional[dict[str, Value]]]]
    _in_progress: set[FunctionNode]
    # The module's names as the script has bound them so far (all of them once it has run).
    script_env: Env

    def global_devices(self) -> Env:
        """The module's device variables and losses, as bound where a helper is analysed: a
        helper reads `device` where the script set it (`device = torch.device("cpu")` is the CPU
        there too, as in the script), and `criterion(out, target)` compares its arguments."""
        return {
            name: value
            for name, value in self.script_env.items()
            if (value.kind is Kind.DEVICE_OBJECT or value.is_loss) and "." not in name
        }

    def exec_block(self, statements: Sequence[ast.stmt], env: Env, unit: Unit) -> Optional[Env]:
        raise NotImplementedError

    def _bind_parameters(self, function: FunctionNode, unit: Unit, env: Env) -> None:
        raise NotImplementedError

    def _calls_written(self) -> Counter[str]:
        raise NotImplementedError

    def summary(self, function: FunctionNode) -> Value:
        """What a helper of this file returns, analysed with unknown arguments."""
        known = self._summaries.get(function)
        if known is not None:
            return known
        if function in self._in_progress:
            return UNKNOWN
        self._in_progress.add(function)
        recording, statement, frames = self.recording, self.statement, self.frames
        self.recording, self.frames = False, []  # no caller's context: its values are unknown
        unit = Unit(function)
        env = self.global_devices()
        self._bind_parameters(function, unit, env)
        self.exec_block(function.body, env, unit)
        self.recording, self.statement, self.frames = recording, statement, frames
        self._in_progress.discard(function)
        # `.to(device)` with the callee's own `device`: the caller's choice
        result = _unplaced_by_parameters(returned(unit), function)
        self._summaries[function] = result
        return result

    def call_summary(
        self, function: FunctionNode, call: ast.Call, arguments: list[Value], caller: Unit
    ) -> Value:
        """What a helper of this file returns for this call's arguments (see `contexts`)."""
        bound = bind_arguments(function, call, arguments)
        if self.recording:
            self._call_sites.setdefault(function, []).append(bound)
        if bound is None or function in self._in_progress:
            return self.summary(function)
        unit = Unit(function, default_device_changed=caller.default_device_changed)
        result = self._in_context(function, call, bound, unit)
        first = self._first_iteration(function, call, arguments, skip_first=False)
        if first is not None:
            self._in_context(function, call, first, unit, first_iteration=True)
        if result is None:
            return self.summary(function)
        return self._left_without_device(function, call, result)

    def _first_iteration(
        self, function: FunctionNode, call: ast.Call, arguments: list[Value], skip_first: bool
    ) -> Optional[dict[str, Value]]:
        """What a loop's first iteration passes, where it differs: what a name held before the
        loop, where later iterations pass what the loop left in it (`drop = torch.zeros(...)`,
        then `drop = convolve(drop, kernel)` in the loop). The helper is analysed with those
        values too, for its findings about them (its result stays the loop head's), on its
        straight path only: a helper may treat the first iteration apart (`if t == 0: return
        cur`), which its analysis cannot tell from its arguments."""
        if not (self.recording and self.loop_frames) or function in self._in_progress:
            return None
        firsts = [self.first_values.get(node) for node in call_arguments(call)]
        if not any(firsts):
            return None
        first_arguments = [first or value for first, value in zip(firsts, arguments)]
        return bind_arguments(function, call, first_arguments, skip_first=skip_first)

    def _left_without_device(self, function: FunctionNode, call: ast.Call, result: Value) -> Value:
        """A CPU tensor made because ``call`` left the helper's `device` at None: the finding
        belongs to the call, where `device=` goes."""
        if result.placement.origin not in self.defaulted_devices or result.where is not Where.CPU:
            return result
        evidence = (
            f"created on the CPU by `{function.name}(...)`, whose `device` this call leaves at None"
        )
        return result.placed(Placement(Where.CPU, evidence=evidence, origin=call))

    def method_call(
        self,
        call: ast.Call,
        method: FunctionNode,
        receiver: Value,
        arguments: list[Value],
        caller: Unit,
        members: Optional[ModuleMembers] = None,
    ) -> Value:
        """`self.helper(inputs, mask)` in a method of the class: the helper analysed with the
        values passed, `self` included; UNKNOWN where it cannot be. ``members``: those of the
        module whose method it is, where that is not the caller's (`self.encoder(x)` running
        the `forward` of the file's `Encoder`)."""
        if _decorated(method):
            return UNKNOWN  # a property, a cached or wrapped method: not the code called here
        decorators = {dotted_name(decorator) for decorator in method.decorator_list}
        static = "staticmethod" in decorators
        bound = bind_arguments(method, call, arguments, skip_first=not static)
        if self.recording:
            self._call_sites.setdefault(method, []).append(bound)
        positional = [*method.args.posonlyargs, *method.args.args]
        if bound is None or not (positional or static) or method in self._in_progress:
            return UNKNOWN
        if receiver is not UNKNOWN and not static and "classmethod" not in decorators:
            bound[positional[0].arg] = receiver
        unit = Unit(
            method,
            caller.module_class,
            members=caller.members if members is None else members,
            default_device_changed=caller.default_device_changed,
        )
        result = self._in_context(method, call, bound, unit, is_method=not static)
        first = self._first_iteration(method, call, arguments, skip_first=not static)
        if first is not None:
            if positional and not static and positional[0].arg in bound:
                first[positional[0].arg] = bound[positional[0].arg]
            self._in_context(method, call, first, unit, not static, first_iteration=True)
        return UNKNOWN if result is None else self._left_without_device(method, call, result)

    def _in_context(
        self,
        function: FunctionNode,
        call: ast.Call,
        bound: dict[str, Value],
        unit: Unit,
        is_method: bool = False,
        first_iteration: bool = False,
    ) -> Optional[Value]:
        """What ``function`` returns for the values ``call`` passes, memoised per distinct
        context; its findings about those values are passed on to ``call``. None past the
        bound on contexts. ``first_iteration``: only the findings on the helper's straight
        path count (see `_first_iteration`)."""
        known = {name: value for name, value in bound.items() if value is not UNKNOWN}
        passed = tuple(sorted(known.items(), key=lambda pair: pair[0]))
        # (a parameter passed a value the analysis does not know is not one left at its default)
        unknown = frozenset(bound) - frozenset(known)
        key = (function, passed, unknown, unit.default_device_changed > 0, first_iteration)
        memo = self._contexts.get(key)
        if memo is None:
            count = self._context_counts.get(function, 0)
            if count >= CONTEXTS_PER_FUNCTION:
                return None
            self._context_counts[function] = count + 1
            memo = self._analyze_in_context(function, known, unknown, unit, first_iteration)
            self._contexts[key] = memo
        result, findings = memo
        for inner in findings:
            if inner.parameter in bound:  # (not a default's value: the caller passed nothing)
                self._pass_on(call, function, inner, bound[inner.parameter], is_method)
        return result

    def _analyze_in_context(
        self,
        function: FunctionNode,
        bound: dict[str, Value],
        unknown: frozenset[str],
        unit: Unit,
        first_iteration: bool,
    ) -> tuple[Value, tuple[InnerFinding, ...]]:
        self._in_progress.add(function)
        recording, statement = self.recording, self.statement
        self.recording = False
        env = self.global_devices()
        self._bind_parameters(function, unit, env)
        if function.name != "forward":
            # A tensor parameter lives on its caller's device by contract only where no
            # caller is known: this one passed a value it does not know, which may be a CPU
            # tensor (the helper meeting a CPU tensor of the caller's with it proves nothing).
            for name in unknown & frozenset(env):
                if env[name].kind is Kind.TENSOR and env[name].where is Where.INPUT:
                    env[name] = UNKNOWN
        passed = dict(bound)
        # (a decorator may fill in what the call leaves out: `kw.setdefault("device", ...)`)
        left_none = set() if _decorated(function) else none_defaulted(function)
        for name, default in defaults_of(function).items():
            if name not in bound and name not in unknown:  # left out: the default holds
                value = NONE if name in left_none else self.eval(default, {}, unit)
                if value is not UNKNOWN:
                    passed[name] = value
        env.update(passed)
        straight_from = self.paths if first_iteration else None
        frame = Frame(passed, self._shown_name(function), straight_from=straight_from)
        self.frames.append(frame)
        try:
            self.exec_block(function.body, env, unit)
        finally:
            self.frames.pop()
            self.recording, self.statement = recording, statement
            self._in_progress.discard(function)
        result = _unplaced_by_parameters(returned(unit), function, exempt=passed.keys())
        return result, tuple(frame.findings)

    def _shown_name(self, function: FunctionNode) -> str:
        """How findings name ``function``: a module's `forward` with its class
        (`StepEmbedding.forward`), which the call site writes as `self.steps(...)`."""
        if function.name == "forward":
            for name, facts in self.classes.items():
                if facts.methods.get("forward") is function:
                    return f"{name}.forward"
        return function.name

    def _pass_on(
        self,
        call: ast.Call,
        function: FunctionNode,
        inner: InnerFinding,
        value: Value,
        is_method: bool,
    ) -> None:
        """A helper handed the CPU value of ``call``'s argument to a module on a device, or
        combined it with a tensor on one: report it at ``call`` (or, inside another helper, at
        that helper's own call sites)."""
        if self.recording:
            argument = argument_node(call, function, inner.parameter, skip_first=is_method)
            if argument is not None and not self.silenced:
                found = self.call_findings.setdefault(call, [])
                finding = CallFinding(argument, value, inner)
                if finding not in found:
                    found.append(finding)
        elif self.frames:
            parameter = self.frames[-1].parameter_of(value)
            if parameter is not None:
                self.frames[-1].findings.append(replace(inner, parameter=parameter))

    def note_module_input(self, call: ast.Call, module: Value, arguments: list[Value]) -> None:
        """Inside a helper analysed in a context: a CPU value of the caller's handed to a module
        on a device."""
        frame = self.frames[-1]
        if not self._on_straight_path(frame):
            return
        for value in arguments:
            if value.is_cpu_tensor():
                parameter = frame.parameter_of(value)
                if parameter is not None:
                    frame.findings.append(InnerFinding(parameter, call, module, frame.function))
                return

    def note_operation(self, node: ast.AST, operands: Sequence[Value]) -> None:
        """Inside a helper analysed in a context: a CPU tensor of the caller's combined with a
        tensor on a device, or on the device the helper's own inputs are on."""
        frame = self.frames[-1]
        if not self._on_straight_path(frame):
            return
        passed = next((value for value in operands if value.is_cpu_tensor()), None)
        parameter = frame.parameter_of(passed) if passed is not None else None
        if passed is None or parameter is None:
            return
        for partner in operands:
            if cannot_meet(passed, partner):
                finding = InnerFinding(parameter, node, partner, frame.function, combined=True)
                if finding not in frame.findings:
                    frame.findings.append(finding)
                return

    def _on_straight_path(self, frame: Frame) -> bool:
        return frame.straight_from is None or self.paths == frame.straight_from

    def methods_of(self, class_name: str) -> Mapping[str, FunctionNode]:
        """The methods the file's class ``class_name`` defines itself."""
        facts = self.classes.get(class_name)
        return facts.methods if facts is not None else {}

    def construct(self, call: ast.Call, name: str, arguments: list[Value]) -> None:
        """A plain class of this file constructed: what its `__init__` is passed here."""
        facts = self.classes.get(name)
        init = facts.methods.get("__init__") if facts is not None else None
        if init is None or not self.recording:
            return  # a helper's summary runs its code again: each site is counted once
        bound = bind_arguments(init, call, arguments, skip_first=True)
        self._constructions.setdefault(name, []).append(bound)

    def _construction_context(self, name: str, init: FunctionNode) -> dict[str, Value]:
        """What every construction site of class ``name`` passes to its `__init__`, joined;
        nothing unless each site in the file was seen, and the class has no subclass here."""
        sites = self._constructions.get(name, [])
        written = self._calls_written()[name]
        subclassed = any(name in facts.bases for facts in self.classes.values())
        if not sites or len(sites) != written or subclassed or any(s is None for s in sites):
            return {}
        context: dict[str, Value] = {}
        parameters = {p.arg for p in parameters_of(init)}
        for parameter in parameters:
            held = [site.get(parameter) for site in sites if site is not None]
            if held and all(value is not None for value in held):
                joined = join_all(value for value in held if value is not None)
                if joined is not UNKNOWN:
                    context[parameter] = joined
        return context


def returned(unit: Unit) -> Value:
    """What a function returns, its return statements joined. A path's CPU tensor (`reset`)
    is the function's business only: a caller's loop does not repeat the function's paths."""
    result = join_all(unit.returns)
    return replace(result, reset=None) if result.reset is not None else result


def _unplaced_by_parameters(
    value: Value, function: FunctionNode, exempt: Collection[str] = ()
) -> Value:
    """``value``, with what ``function`` placed on a device its own parameter names made
    unknown, items of a returned tuple included (`return cos, sin`, each made with
    `device=device`; a CPU item beside them stays)."""
    if value.kind is Kind.SEQUENCE and (value.elements or value.item is not None):
        elements = tuple(_unplaced_by_parameters(item, function, exempt) for item in value.elements)
        item = value.item and _unplaced_by_parameters(value.item, function, exempt)
        return replace(value, elements=elements, item=item)
    return UNKNOWN if _placed_by_parameter(value, function, exempt) else value


def _placed_by_parameter(
    value: Value, function: FunctionNode, exempt: Collection[str] = ()
) -> bool:
    """Whether ``value`` was placed on a device named by a parameter of ``function``, which
    means nothing where the caller reads the summary (unless the call passed that parameter:
    ``exempt``, then the placement is the caller's value)."""
    if value.where is not Where.DEVICE:
        return False
    root = value.placement.device.split(".", 1)[0].split("[", 1)[0]
    return any(p.arg == root and root not in exempt for p in parameters_of(function))


def _decorated(function: FunctionNode) -> bool:
    """Decorated by something other than `staticmethod` or `classmethod`."""
    names = {dotted_name(decorator) for decorator in function.decorator_list}
    return bool(names - CLASS_LEVEL_DECORATORS)
