"""Where every tensor lives: an abstract interpretation of each function and of the module script.

Statements run in order over an environment that maps names and ``self.x``
attributes to abstract :class:`Value` s; ``if``/``else`` branches run on copies
that are joined afterwards (a branch that always exits does not reach the
join); loops run to a fixpoint (see ``loops``), and a name a loop changes is
also read as the loop's first iteration reads it. Every expression's value is
recorded, so rules read the placement of any operand at its program point.

Functions start from the module's final environment (the state their globals
have when a script calls them). Methods of a plain class start from what its
``__init__`` assigned to ``self`` attributes no other method reassigns.
Helpers defined in the file are summarised by what they return.

The interpreter reads CPython's syntax tree (see :mod:`devlint.analysis.syntax`).
"""

from __future__ import annotations

import ast
import os
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Optional, TypeVar, Union, cast

from devlint.analysis.call_contexts import CallContexts
from devlint.analysis.callers import called_elsewhere, cpu_parameters
from devlint.analysis.contexts import (
    CallFinding,
    Context,
    Frame,
    InnerFinding,
    defaults_of,
)
from devlint.analysis.docstrings import documented_tensors
from devlint.analysis.flags import (
    Forgotten,
    flag_tested,
    flags_bound_once,
    forget_unmoved,
    give_back,
    remember_flag,
)
from devlint.analysis.guards import expects_error_in_syntax
from devlint.analysis.kinds import data_siblings, tensor_tested
from devlint.analysis.loops import LoopFrame, PathCounts, loop_head, run_to_fixpoint
from devlint.analysis.module_outputs import forward_returns_tensor
from devlint.analysis.moved_results import helper_key, helpers_moved_by_callers
from devlint.analysis.name_uses import NameUses, constructs, name_uses
from devlint.analysis.names import ImportMap
from devlint.analysis.narrowing import type_test
from devlint.analysis.numbers import list_attributes, number_attributes
from devlint.analysis.parameters import (
    annotated_as_list,
    annotated_as_tensors,
    enclosing_blocks,
    list_parameters,
    module_tensors_set_in,
    names_on_a_device,
    names_used_as_tensors,
    numeric_parameters,
    rebinding_positions,
    runs_on_cpu_by_design,
    tensor_parameters,
    unpacked_tensor_items,
)
from devlint.analysis.project import ProjectView
from devlint.analysis.syntax import (
    SourceText,
    dotted_name,
    handed_over,
    is_class_level,
    nodes_below,
    parameters_of,
    self_attribute,
    statement_blocks,
    string_value,
)
from devlint.analysis.syntax_screen import (
    SyntaxFacts,
    keeps_modules_on_a_device,
    moves_a_module_back,
    places_on_a_device,
    syntax_facts,
)
from devlint.analysis.torch_api import (
    LIGHTNING_HOST_HOOKS,
    LIGHTNING_STEP_HOOKS,
    SPLITTING_CONTEXTS,
    WRAPPER_MODULES,
    derives_from_lightning,
    derives_from_module,
    is_loss_class,
    is_parameterless_class,
    is_torch_nn_class,
    looks_like_loader,
)
from devlint.analysis.units import NO_MEMBERS, ClassFacts, Env, FunctionNode, ModuleMembers, Unit
from devlint.analysis.values import (
    NOT_A_TENSOR,
    SCALAR,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    Where,
    combine,
    cpu_loader,
    input_item,
    join,
    join_all,
    sequence_items,
)

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


def merge(first: Optional[Env], second: Optional[Env]) -> Optional[Env]:
    """Two environments meeting; None stands for a path that never arrives."""
    if first is None:
        return second
    if second is None:
        return first
    merged: Env = {}
    for key, value in first.items():
        other = second.get(key)
        merged[key] = value if value is other else UNKNOWN if other is None else join(value, other)
    for key in second.keys() - first.keys():
        merged[key] = UNKNOWN
    return merged


T = TypeVar("T")


class DeviceFlow(CallContexts):
    """The device-flow facts of one file, computed once and read by every flow rule."""

    def __init__(
        self,
        module: ast.Module,
        names: ImportMap,
        text: SourceText,
        watched: Collection[type] = (),
        facts: Optional[SyntaxFacts] = None,
        test_module: bool = False,
        project: Optional[ProjectView] = None,
        path: Optional[str] = None,
    ) -> None:
        self.names = names
        self.project = project
        self.path = path  # the linted file, where it is one: the project's callers call it
        self.test_module = test_module
        self.facts = facts
        self._reach: dict[ast.AST, tuple[bool, bool]] = {}
        self.text = text
        self.values: dict[ast.AST, Value] = {}
        self.recording = True
        self.watched = frozenset(watched)
        self.visits: list[tuple[ast.AST, Optional[ast.stmt]]] = []
        self.statement: Optional[ast.stmt] = None
        self.silenced = 0
        self.loop_depth = 0  # loops being run to a fixpoint around the statement
        self.loop_frames: list[LoopFrame] = []  # loops being run, recording, around it
        self.changed_parameters: dict[FunctionNode, frozenset[str]] = {}
        self.defaulted_devices: set[ast.AST] = set()
        self.first_values: dict[ast.AST, Value] = {}  # reads whose first iteration differs
        self.later_values: dict[ast.AST, Value] = {}  # reads after a reset on the CPU
        self.paths = PathCounts()
        self.globals: Env = {}
        self.script_env: Env = {}
        self.default_device_changed = "set_default_device" in text.source or (
            "set_default_tensor_type" in text.source
        )
        self.classes: dict[str, ClassFacts] = {}
        self.functions: dict[str, FunctionNode] = {}
        self._summaries: dict[FunctionNode, Value] = {}
        # Helpers analysed per calling context: their result and what they did with the
        # caller's CPU values (see `contexts`); the frames of those being analysed.
        self._contexts: dict[
            tuple[FunctionNode, Context, frozenset[str], bool, bool],
            tuple[Value, tuple[InnerFinding, ...]],
        ]
        self._contexts = {}
        self._context_counts: dict[FunctionNode, int] = {}
        self.frames: list[Frame] = []
        # Call sites whose CPU argument a helper hands to a module on a device.
        self.call_findings: dict[ast.Call, list[CallFinding]] = {}
        # What each plain class's construction sites pass to `__init__`, in the order seen.
        self._constructions: dict[str, list[Optional[dict[str, Value]]]] = {}
        # What each recorded call of a helper of the file bound to its parameters, in order.
        self._call_sites: dict[FunctionNode, list[Optional[dict[str, Value]]]] = {}
        self._feeding_methods: set[FunctionNode] = set()  # see `_called_by_methods_only`
        self._in_progress: set[FunctionNode] = set()
        # What each plain class's `__init__` leaves in `self` attributes no other method changes.
        self._class_attributes: dict[str, Env] = {}
        self._members: dict[str, ModuleMembers] = {}  # see `module_members`
        self._module_classes: dict[str, bool] = {}  # see `is_module_class`
        # Module classes defined in a function (a test's `class TestModel(BoringModel)`).
        self._nested_modules: list[ClassFacts] = []
        self._module = module
        self._device_source: Optional[bool] = None
        self._device_moves: Optional[bool] = None
        self._moved_back: Optional[bool] = None  # (see `_moves_a_module_back`)
        self._flags: Optional[frozenset[str]] = None
        self._uses: Optional[NameUses] = None
        self._returns_tensor: dict[str, bool] = {}  # see `class_returns_tensor`
        self._moved_helpers: Optional[frozenset[str]] = None
        self._device_reads: dict[FunctionNode, dict[str, ast.Attribute]] = {}
        self._rebindings: dict[FunctionNode, dict[str, list[tuple[tuple[int, int], int]]]] = {}
        self._numeric: dict[FunctionNode, frozenset[str]] = {}  # numbers among parameters
        # Each method's class's methods, which it calls as `self.name(...)`.
        self.sibling_methods: dict[ast.AST, Mapping[str, FunctionNode]] = {}
        self._collect_definitions(module.body)
        self._bases = {name: facts.bases for name, facts in self.classes.items()}
        self._collect_nested_modules(module.body)
        self._inherit_sibling_methods()
        self._run(module)

    def value_of(self, node: ast.AST) -> Value:
        return self.values.get(node, UNKNOWN)

    # -- definitions ---------------------------------------------------------------

    def _collect_definitions(self, body: Sequence[ast.stmt]) -> None:
        for statement in body:
            if isinstance(statement, ast.ClassDef):
                methods = {
                    inner.name: inner
                    for inner in statement.body
                    if isinstance(inner, _FUNCTION_TYPES)
                }
                bases = self._qualified_bases(statement)
                self.classes.setdefault(statement.name, ClassFacts(statement, bases, methods))
                for method in methods.values():
                    self.sibling_methods[method] = methods
            elif isinstance(statement, _FUNCTION_TYPES):
                self.functions.setdefault(statement.name, statement)

    def _collect_nested_modules(self, body: Sequence[ast.stmt]) -> None:
        """The module classes not defined directly in the module's body: in a function (each
        test its own `TestModel`, so names may repeat) or in a block (a `try:` fallback). They
        are no classes of the file: their methods run on the module's device, and nothing is
        known of their layers or of what constructs them. Their bases are read as the module
        imports them (not through a function's own imports, nor another such class)."""
        top_level = {id(facts.node) for facts in self.classes.values()}
        seen: set[int] = set()
        for _, owner in _functions_in(body, None):
            if owner is None or id(owner) in top_level or id(owner) in seen:
                continue
            seen.add(id(owner))
            if not any(self._base_is_module(base) for base in owner.bases):
                continue
            methods = {
                inner.name: inner for inner in owner.body if isinstance(inner, _FUNCTION_TYPES)
            }
            for method in methods.values():
                self.sibling_methods[method] = methods
            self._nested_modules.append(ClassFacts(owner, self._qualified_bases(owner), methods))

    def _inherit_sibling_methods(self) -> None:
        """A class's methods call, as `self.name(...)`, those it inherits from classes of the
        file too (`self.step(x)` in a test's `TestModel(BoringModel)`)."""
        for facts in [*self.classes.values(), *self._nested_modules]:
            merged = self.with_inherited_methods(facts.node, facts.methods)
            if len(merged) > len(facts.methods):
                for method in facts.methods.values():
                    self.sibling_methods[method] = merged

    def with_inherited_methods(
        self, node: ast.ClassDef, own: Mapping[str, FunctionNode]
    ) -> dict[str, FunctionNode]:
        """``own`` methods of the class ``node`` and those it inherits from classes of the
        file, through single inheritance, where the method resolution order is the chain of
        bases (a transform inheriting its base's `forward`, which calls the transform's own
        methods)."""
        merged = dict(own)
        bases, seen = node.bases, {node.name}
        while len(bases) == 1:
            base = self.classes.get(dotted_name(bases[0]) or "")
            if base is None or base.node.name in seen:
                break
            seen.add(base.node.name)
            for name, method in base.methods.items():
                merged.setdefault(name, method)
            bases = base.node.bases
        return merged

    def _qualified_bases(self, node: ast.ClassDef) -> tuple[str, ...]:
        """A class's bases as the module imports them (else as written)."""
        return tuple(
            self.names.qualified_syntax_name(base) or dotted_name(base) or "" for base in node.bases
        )

    def _base_is_module(self, base: ast.expr) -> bool:
        written = dotted_name(base) or ""
        if written in self.classes:
            return self.is_module_class(written)
        qualified = self.names.qualified_syntax_name(base) or written
        return derives_from_module("", {"": (qualified,)}) or self._project_module(written)

    def _project_module(self, written: str) -> bool:
        """Whether ``written`` names a module class of an imported project file."""
        if self.project is None:
            return False
        found = self.project.lookup(written)
        return found is not None and found.kind == "class" and self.project.is_module_class(found)

    def is_module_class(self, name: str) -> bool:
        """A class of this file deriving (here, through torch, or through a class of an
        imported project file: `class SequenceTagger(flair.nn.Model)`) from nn.Module."""
        known = self._module_classes.get(name)
        if known is None:
            known = derives_from_module(name, self._bases) or self._derives_from_project(name)
            self._module_classes[name] = known
        return known

    def _derives_from_project(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        facts = self.classes.get(name)
        if facts is None or self.project is None or name in seen:
            return False
        for base in facts.node.bases:
            written = dotted_name(base) or ""
            if written in self.classes:
                if self._derives_from_project(written, seen | {name}):
                    return True
                continue
            if self._project_module(written):
                return True
        return False

    def class_returns_tensor(self, name: str) -> bool:
        known = self._returns_tensor.get(name)
        if known is None:
            facts = self.classes.get(name)
            methods = facts.methods if facts is not None else {}
            forward = methods.get("forward")
            known = forward is not None and forward_returns_tensor(
                forward, methods.get("__init__"), self.names.qualified_syntax_name
            )
            self._returns_tensor[name] = known
        return known

    # -- units -----------------------------------------------------------------------

    def _run(self, module: ast.Module) -> None:
        script_env: Env = {}
        self.script_env = script_env
        self.exec_block(module.body, script_env, Unit(None))
        self.globals = script_env
        nested = {id(facts.node) for facts in self._nested_modules}
        functions = [
            function
            for function, owner in _functions_in(module.body, None)
            if owner is None or (owner.name not in self.classes and id(owner) not in nested)
        ]
        callees = _call_graph(functions)
        contracts = {function: self._tensor_parameters(function, ()) for function in functions}
        # A helper only the classes' methods call runs after them, to take their word.
        later = self._called_by_methods_only(functions, callees)
        for function in _callers_first(functions, callees):
            if function not in later:
                self._analyze_function(function, contracts, callees)
        for name, facts in self.classes.items():
            self._analyze_class(name, facts)
        for facts in self._nested_modules:
            self._analyze_nested_module(facts)
        for function in later:
            self._analyze_function(function, contracts, callees)

    def _analyze_function(
        self,
        function: FunctionNode,
        contracts: dict[FunctionNode, frozenset[str]],
        callees: dict[FunctionNode, set[FunctionNode]],
    ) -> None:
        placed = self._placed_by_callers(function)
        unit = Unit(
            function,
            tensor_parameters=contracts[function] - placed.keys(),
            tensor_items=self._tensor_items(function, ()),
        )
        # A caller of a helper taking tensors runs for its calls, the helper's evidence.
        feeds = any(contracts[callee] for callee in callees[function])
        self._analyze(function, unit, {}, feeds, context=placed)

    def _called_by_methods_only(
        self, functions: list[FunctionNode], callees: dict[FunctionNode, set[FunctionNode]]
    ) -> list[FunctionNode]:
        """The module's functions that call none of its functions or classes (a class's
        construction sites must be met before the class runs) and are called, each time the
        file names them, from a method of one of its classes."""
        uses = self._name_uses()
        later = [
            function
            for function in functions
            if not callees[function]
            and (in_methods := len(uses.method_callers.get(function.name, ())))
            # every mention a call (not `self.post = helper`, run on other data)
            and in_methods == uses.calls[function.name] == uses.loads[function.name]
            and not constructs(function, self.classes.keys())
        ]
        # Their callers run even where they could report nothing: their calls are the evidence.
        self._feeding_methods = {m for f in later for m in uses.method_callers[f.name]}
        return later

    def _analyze_class(self, name: str, facts: ClassFacts) -> None:
        module_class = self.is_module_class(name)
        attributes: Env = {}
        for base in facts.bases:
            attributes.update(self._class_attributes.get(base, {}))
        init = facts.methods.get("__init__")
        if init is not None:
            # A plain class's `__init__` runs for what it sets; a module's, only to report.
            unit = Unit(init, module_class)
            context = {} if module_class else self._construction_context(name, init)
            init_env = self._analyze(init, unit, attributes, not module_class, context)
            attributes = {key: value for key, value in init_env.items() if key.startswith("self.")}
        members = NO_MEMBERS
        if module_class:
            attributes = {}  # a module's attributes move with it: unknown here, DEV009's concern
            members = self.module_members(name)
        elif attributes:
            reassigned = _reassigned_in_methods(facts)
            attributes = {key: value for key, value in attributes.items() if key not in reassigned}
        self._class_attributes[name] = attributes
        self._analyze_methods(facts, module_class, attributes, members)

    def _analyze_nested_module(self, facts: ClassFacts) -> None:
        """A module class defined in a function, as a module class of the file is, knowing
        nothing of its layers: its `__init__` only to report, its other methods on the
        module's device."""
        init = facts.methods.get("__init__")
        if init is not None:
            self._analyze(init, Unit(init, True), {}, False, {})
        self._analyze_methods(facts, True, {}, NO_MEMBERS)

    def _analyze_methods(
        self, facts: ClassFacts, module_class: bool, attributes: Env, members: ModuleMembers
    ) -> None:
        """The methods of a class but `__init__`: a module's on its device, except those
        `__init__` runs (while the module is still on the CPU)."""
        construction = _run_by_init(facts.methods) if module_class else set()
        owners = (facts.node.name, *facts.bases)
        # A Trainer moves a LightningModule to its accelerator: no move need be written.
        lightning = module_class and derives_from_lightning(facts.node.name, self._bases)
        for method_name, method in facts.methods.items():
            if method_name == "__init__":
                continue
            forward = module_class and method_name == "forward" and not self._cpu_test_double()
            parameters = frozenset() if forward else self._tensor_parameters(method, owners)
            # A private method's callers are the class's own, a static one's the file's
            # (`Cls.name(...)`), and so are those of a method no other file of the project
            # calls: all in sight, earlier in it.
            private = method_name.startswith("_") and not method_name.endswith("__")
            callers_known = not forward and (
                private or is_class_level(method) or self._called_in_this_file_only(method_name)
            )
            placed = self._placed_by_callers(method, True) if callers_known else {}
            parameters = parameters - placed.keys()
            moved = (
                self._keeps_modules_on_a_device()
                if not lightning
                else method_name not in LIGHTNING_HOST_HOOKS
                and not method_name.startswith("configure_")
                and not method_name.endswith("_dataloader")
                and not self._moves_a_module_back()  # `model.cpu()`: inference there
            )
            unit = Unit(
                method,
                module_class,
                forward=forward,
                on_module_device=module_class and method_name not in construction and moved,
                tensor_parameters=parameters,
                tensor_items=self._tensor_items(method, owners),
                members=members,
                moved_batch=_lightning_batch(method) if lightning else "",
            )
            needed = method in self._feeding_methods
            self._analyze(method, unit, attributes, needed, context=placed)

    def module_members(self, name: str) -> ModuleMembers:
        """What the `__init__` of the file's module class ``name`` made of the attributes no
        other method of it sets again."""
        known = self._members.get(name)
        if known is not None:
            return known
        facts = self.classes[name]
        init = facts.methods.get("__init__")
        self._members[name] = NO_MEMBERS  # (while computing: a class holding itself)
        reassigned = {key[5:] for key in _reassigned_in_methods(facts) if key.startswith("self.")}
        # (a method of the same name shadows a layer: `self.name(...)` calls the method)
        shadowed = reassigned | facts.methods.keys()
        inherited = self._inherited_members(facts, init)
        if init is None:
            own, set_again = NO_MEMBERS, shadowed
        else:
            own = self._members_set_in(init, reassigned, shadowed)
            set_again = shadowed | {
                key[5:] for key in _assigned_names(init) if key.startswith("self.")
            }
        known = self._members[name] = _merged_members(inherited, own, set_again)
        return known

    def _inherited_members(self, facts: ClassFacts, init: Optional[FunctionNode]) -> ModuleMembers:
        """What the `__init__` of a class's one base, a module class of the file, sets: where
        the class has no `__init__`, or its own runs `super().__init__(...)`."""
        bases = facts.node.bases
        base = dotted_name(bases[0]) if len(bases) == 1 else None
        if base is None or base not in self.classes or not self.is_module_class(base):
            return NO_MEMBERS
        if init is not None and not _calls_super_init(init, facts.node.name):
            return NO_MEMBERS
        return self.module_members(base)

    def _members_set_in(
        self, init: FunctionNode, reassigned: Collection[str], shadowed: Collection[str]
    ) -> ModuleMembers:
        def kept(names: Iterable[str], out: Collection[str] = reassigned) -> frozenset[str]:
            return frozenset(name for name in names if name not in out)

        def kept_items(held: Mapping[str, T], out: Collection[str] = reassigned) -> dict[str, T]:
            return {key: value for key, value in held.items() if key not in out}

        return ModuleMembers(
            submodules=kept(self._layers_set_in(init), shadowed),
            numbers=kept(number_attributes(init, self._numbers_of(init))),
            lists=kept(list_attributes(init, list_parameters(init))),
            # (a buffer assigned a new tensor later holds that tensor, wherever it lives)
            tensors=kept_items(module_tensors_set_in(init, self.names.qualified_syntax_name)),
            modules=kept_items(self._modules_set_in(init), shadowed),
            member_tensors=kept_items(self._member_tensors_set_in(init)),
        )

    def _member_tensors_set_in(self, init: FunctionNode) -> dict[str, dict[str, str]]:
        """`self.crf = CRF(...)` in ``init``, a module class of this file or of an imported
        project file: the parameters and buffers its own `__init__` registers."""
        found: dict[str, dict[str, str]] = {}
        for target, call in _attributes_constructed_anywhere(init):
            name = dotted_name(call.func) or ""
            if name in self.classes:
                if self.is_module_class(name):
                    found[target] = dict(self.module_members(name).tensors)
                continue
            imported = self.project.lookup(name) if self.project is not None else None
            if imported is not None and imported.kind == "class" and imported.facts.get("tensors"):
                assert self.project is not None
                if self.project.is_module_class(imported):
                    found[target] = dict(imported.facts["tensors"])
        return {attribute: tensors for attribute, tensors in found.items() if tensors}

    def _modules_set_in(self, init: FunctionNode) -> dict[str, str]:
        """`self.name = Encoder(...)` in ``init``: modules of classes of this file with a
        `forward` of their own."""
        modules = {}
        for target, call in _attributes_constructed_anywhere(init):
            name = dotted_name(call.func) or ""
            facts = self.classes.get(name)
            if facts is not None and "forward" in facts.methods and self.is_module_class(name):
                modules[target] = name
        return modules

    def _analyze(
        self,
        function: FunctionNode,
        unit: Unit,
        attributes: Env,
        needed: bool = False,
        context: Optional[Env] = None,
    ) -> Env:
        if not (needed or attributes or self._may_report(function, unit)):
            return {}
        env = dict(self.globals)
        env.update(attributes)
        self._bind_parameters(function, unit, env)
        env.update(context or {})  # what every construction site passes to `__init__`
        self.exec_block(function.body, env, unit)
        return env

    def _may_report(self, function: FunctionNode, unit: Unit) -> bool:
        """Whether a flow rule could report in ``function``, from what its code, the module's
        globals and the helpers it calls can place (see `syntax_screen`); True where unknown."""
        if self.facts is None:
            return True
        facts = self.facts.units.get(function)
        if facts is None or facts.discarded_move:
            return True
        device, cpu = self._reachable(function)
        script = self._reachable(self._module)
        device = device or script[0] or unit.forward or bool(unit.tensor_parameters)
        device = device or bool(unit.moved_batch)
        members = unit.members
        placed = members.submodules or members.tensors or members.member_tensors or members.modules
        device = device or (unit.on_module_device and bool(placed))
        device = device or bool(unit.tensor_items)
        cpu = cpu or script[1] or self.facts.cpu_everywhere
        return device and (cpu or facts.host_call)

    def _reachable(self, owner: ast.AST) -> tuple[bool, bool]:
        """Whether the code of ``owner``, or of the helpers it calls (and they call), can put
        a value on a device, and a tensor on the CPU."""
        known = self._reach.get(owner)
        if known is not None:
            return known
        assert self.facts is not None
        device = cpu = False
        seen: set[ast.AST] = set()
        pending = [owner]
        while pending:
            caller = pending.pop()
            facts = self.facts.units.get(caller)
            if facts is None:
                device = cpu = True  # code the screen has not read: assume anything
                break
            device, cpu = device or facts.device_source, cpu or facts.cpu_tensor_source
            for name in facts.called:
                if name.startswith("self."):
                    helper = self.sibling_methods.get(caller, {}).get(name[5:])
                else:
                    helper = self.functions.get(name)
                if helper is not None and helper not in seen:
                    seen.add(helper)
                    pending.append(helper)
        self._reach[owner] = (device, cpu)
        return device, cpu

    def _layers_set_in(self, init: FunctionNode) -> frozenset[str]:
        """`self.name = nn.Linear(...)` in ``init``: torch layers that hold parameters."""
        layers = set()
        for target, call in _attributes_constructed(init):
            qualified = self.names.qualified_syntax_name(call.func) or ""
            if (
                is_torch_nn_class(qualified)
                and qualified.rpartition(".")[2] not in _TENSOR_CLASSES
                and not is_parameterless_class(qualified)
                and not is_loss_class(qualified)
                and qualified not in WRAPPER_MODULES
            ):
                layers.add(target)
        return frozenset(layers)

    def _tensor_parameters(self, function: FunctionNode, bases: Iterable[str]) -> frozenset[str]:
        """The tensor parameters of a function, which live on its caller's device. A parameter
        used as a tensor, or documented as one, counts only in a file that places something on
        a device: code that never does is CPU-side by design (an image resizer of a data
        pipeline), and there only an annotation saying `Tensor` (a typed API) makes a parameter
        the caller's."""
        if not self._callers_contract(function, bases):
            return frozenset()
        if not self._places_on_device():
            contract = frozenset(tensor_parameters(function, ()))
        else:
            documented = documented_tensors(function)
            facts = self.facts.units.get(function) if self.facts is not None else None
            if facts is not None and not tensor_parameters(
                function, {*facts.tensor_names, *documented}
            ):
                return frozenset()  # the screen's names are a superset: nothing to refine
            used = names_used_as_tensors(function)
            contract = frozenset(tensor_parameters(function, used | documented))
        if contract and not tuple(bases):
            return contract - self._moved_to_cpu_by_other_files(function)
        return contract

    def _called_in_this_file_only(self, name: str) -> bool:
        """Whether no other file of the project calls ``name`` (`.trainepoch(`), for a
        public method (not a dunder, which Python calls)."""
        if self.path is None or name.startswith("__") or not os.path.isfile(self.path):
            return False
        return not called_elsewhere(self.path, name)

    def _moved_to_cpu_by_other_files(self, function: FunctionNode) -> frozenset[str]:
        """The parameters every call of ``function`` in the project's other files passes moved
        to the CPU (`renorm(img.cpu())`, see `callers`): for a top-level function the file
        itself never calls, whose callers are all elsewhere."""
        if (
            self.path is None
            or function not in self._module.body
            or self._name_uses().loads[function.name]  # (called, or handed on: `map(f, xs)`)
            or not os.path.isfile(self.path)
        ):
            return frozenset()
        return cpu_parameters(self.path, function)

    def _callers_contract(self, function: FunctionNode, bases: Iterable[str]) -> bool:
        """Whether ``function``'s tensors may live on its caller's device: not in a test module's
        helpers or CPU-side code by design, nor in a function whose callers move what it
        returns (it works on CPU data)."""
        if self.test_module or runs_on_cpu_by_design(function, bases):
            return False
        return not self._results_moved(function, method=bool(tuple(bases)))

    def _tensor_items(
        self, function: FunctionNode, bases: Iterable[str]
    ) -> dict[str, tuple[bool, ...]]:
        """The parameters ``function`` unpacks into tensors (`features, lengths = batch`), which
        live where the caller's tensors do; only in a file that places something on a device,
        as for parameters used as tensors."""
        bases = tuple(bases)
        if not self._places_on_device() or not self._callers_contract(function, bases):
            return {}
        return unpacked_tensor_items(function)

    def _placed_by_callers(self, function: FunctionNode, method: bool = False) -> Env:
        """The parameters every call of the file passes only CPU values, with those values
        joined: a helper whose callers are all in sight (the module's script, functions
        analysed before it, since callers go first) takes their word (an unknown argument
        leaves the contract as it is). A call the analysis has not met yet (in a method, in a
        cycle) leaves it too. A ``method``'s calls are `self.name(...)`, and every mention of
        `.name` in the file must be one (not a bound method handed over)."""
        sites = self._call_sites.get(function, [])
        if method:
            uses = self._name_uses()
            written = uses.self_calls[function.name]
            if written != uses.attributes[function.name]:
                return {}
        else:
            written = self._calls_written()[function.name]
        if not sites or len(sites) != written:
            return {}
        bound = [site for site in sites if site is not None]
        if len(bound) != len(sites):
            return {}
        placed = {
            name: join_all(site[name] for site in bound)
            for name in bound[0]
            if all(name in site and _on_cpu(site[name]) for site in bound)
        }
        if placed:
            # Callers handing CPU tensors for some parameters speak for the others too: what
            # they pass unknown may be on the CPU as well, not on a device by contract.
            for name in bound[0]:
                if name not in placed and any(site.get(name) is UNKNOWN for site in bound):
                    placed[name] = UNKNOWN
        return placed

    def _results_moved(self, function: FunctionNode, method: bool) -> bool:
        if self._moved_helpers is None:
            self._moved_helpers = helpers_moved_by_callers(self._module)
        return helper_key(function.name, method) in self._moved_helpers

    def _calls_written(self) -> Counter[str]:
        return self._name_uses().calls

    def _name_uses(self) -> NameUses:
        if self._uses is None:
            self._uses = name_uses(self._module, self.classes.keys())
        return self._uses

    def device_read(self, unit: Unit, use: ast.Name) -> Optional[ast.Attribute]:
        """Where ``unit``'s function reads the device of the name ``use`` reads, a tensor it
        uses (see `parameters.names_on_a_device`), once per function whatever its contexts;
        None for the module script, or where the name takes a new value between the read and
        ``use`` (`x = x.cpu().numpy()`: an array now)."""
        function = unit.function
        if function is None:
            return None
        reads = self._device_reads.get(function)
        if reads is None:
            reads = self._device_reads[function] = names_on_a_device(function)
            self._rebindings[function] = rebinding_positions(function)
        read = reads.get(use.id)
        if read is None:
            return None
        low, high = sorted(((read.lineno, read.col_offset), (use.lineno, use.col_offset)))
        between = [
            block
            for where, block in self._rebindings[function].get(use.id, ())
            if low < where < high
        ]
        if between and set(between) & enclosing_blocks(function, use):
            return None  # (a rebinding on every path to the use; `if c: x = x.cpu()` is not)
        return read

    def _cpu_test_double(self) -> bool:
        """A module of a test module that places nothing on a device: a test double, run on
        the CPU tensors its tests make (no input on a device to meet)."""
        return self.test_module and not self._places_on_device()

    def _places_on_device(self) -> bool:
        """Whether the file places anything on a device (see `places_on_a_device`)."""
        if self._device_source is None:
            facts = self.facts or syntax_facts(self._module, self.text.source)
            self._device_source = facts.device_source and places_on_a_device(self._module)
        return self._device_source

    def _keeps_modules_on_a_device(self) -> bool:
        """Whether a module's methods other than `forward` run on its device: in a file that
        moves something to a device itself and never moves a module back (see
        `keeps_modules_on_a_device`); a script training on the CPU by design calls
        `self.fc1(torch.tensor(batch))` in its `train_net`."""
        if self._device_moves is None:
            self._device_moves = keeps_modules_on_a_device(self._module)
        return self._device_moves

    def _moves_a_module_back(self) -> bool:
        if self._moved_back is None:
            self._moved_back = moves_a_module_back(self._module)
        return self._moved_back

    def _numbers_of(self, function: FunctionNode) -> frozenset[str]:
        numbers = self._numeric.get(function)
        if numbers is None:
            numbers = self._numeric[function] = numeric_parameters(function, self.names)
        return numbers

    def _bind_parameters(self, function: FunctionNode, unit: Unit, env: Env) -> None:
        params = function.args
        for index, param in enumerate(parameters_of(function)):
            name = param.arg
            if index == 0 and name in ("self", "cls") and unit.module_class:
                where = Where.INPUT if unit.forward or unit.on_module_device else Where.UNKNOWN
                env[name] = Value(Kind.MODULE, Placement(where))
            elif name in self._numbers_of(function) and name not in unit.tensor_parameters:
                # `forward(self, x, seq_len)`: `torch.arange(seq_len)`; `freqs: List[float]`
                listed = annotated_as_list(param.annotation)
                env[name] = Value(Kind.SEQUENCE, item=SCALAR) if listed else SCALAR
            elif name in unit.tensor_items and name not in unit.tensor_parameters:
                env[name] = _tensor_tuple(unit.tensor_items[name], name, unit.forward)
            elif unit.forward and index > 0:
                env[name] = Value(Kind.UNKNOWN, Placement(Where.INPUT, evidence=f"input `{name}`"))
            elif name == unit.moved_batch:
                evidence = f"`{name}`, which the Trainer moved to the module's device"
                env[name] = Value(Kind.UNKNOWN, Placement(Where.INPUT, evidence=evidence))
            elif name in unit.tensor_parameters:
                listed = annotated_as_tensors(param.annotation)  # `List[Tensor]`: its items
                evidence = f"{'an item of ' if listed else ''}parameter `{name}`"
                tensor = Value(Kind.TENSOR, Placement(Where.INPUT, evidence=evidence))
                env[name] = Value(Kind.SEQUENCE, item=tensor) if listed else tensor
            elif annotated_as_list(param.annotation):
                env[name] = Value(Kind.SEQUENCE)  # `freqs: List[float]`
            elif looks_like_loader(name):
                env[name] = cpu_loader(f"from the data loader `{name}`", param)
            else:
                env[name] = UNKNOWN
        for star in (params.vararg, params.kwarg):
            if star is not None:
                env[star.arg] = UNKNOWN

    # -- statements --------------------------------------------------------------------

    def exec_block(self, statements: Sequence[ast.stmt], env: Env, unit: Unit) -> Optional[Env]:
        """Run statements in order; None when control never reaches the end."""
        silenced = 0  # after `if torch.cuda.is_available(): return ...`, the CPU alone runs
        try:
            for statement in statements:
                kind = type(statement)
                compound = kind in _COMPOUND
                self.statement = None if compound else statement
                handler = _STATEMENTS.get(kind)
                reached = handler is None or handler(self, statement, env, unit)
                if compound:
                    self.statement = None  # its blocks ran their own statements
                self.visited(statement)
                if not reached:
                    return None
                if kind is ast.If and _leaves_when_available(cast(ast.If, statement), self.names):
                    self.silenced += 1
                    silenced += 1
            return env
        finally:
            self.silenced -= silenced

    def _exec_expression(self, statement: ast.Expr, env: Env, unit: Unit) -> bool:
        if isinstance(statement.value, ast.Call):
            self.eval_call(statement.value, env, unit, bare=True)
        else:
            self.eval(statement.value, env, unit)
        return True

    def _exec_assign(self, statement: ast.Assign, env: Env, unit: Unit) -> bool:
        value = self.eval(statement.value, env, unit)
        moved = _moved_name(statement.value)
        for target in statement.targets:
            # `data = data.to(device)` keeps the attributes the move took along.
            self.bind(target, value, env, unit, keep_attributes=moved == dotted_name(target))
        return True

    def _exec_annotated(self, statement: ast.AnnAssign, env: Env, unit: Unit) -> bool:
        if statement.value is not None:
            self.bind(statement.target, self.eval(statement.value, env, unit), env, unit)
        return True

    def _exec_augmented(self, statement: ast.AugAssign, env: Env, unit: Unit) -> bool:
        current = self.eval(statement.target, env, unit)
        operand = self.eval(statement.value, env, unit)
        self._operation(statement, [current, operand])
        if current.kind is Kind.TENSOR and current.where is not Where.UNKNOWN:
            return True  # `t += u` works in place: `t` stays where it is (or the line fails)
        if current.kind is not Kind.UNKNOWN or current.where is not Where.UNKNOWN:
            self.bind(statement.target, combine([current, operand]), env, unit)
        return True

    def _exec_return(self, statement: ast.Return, env: Env, unit: Unit) -> bool:
        value = self.eval(statement.value, env, unit) if statement.value else UNKNOWN
        unit.returns.append(value)
        return False

    def _exec_raise(self, statement: ast.Raise, env: Env, unit: Unit) -> bool:
        if statement.exc is not None:
            self.eval(statement.exc, env, unit)
        return False

    def _exec_jump(self, statement: ast.stmt, env: Env, unit: Unit) -> bool:
        return False  # `continue`, `break`

    def _exec_assert(self, statement: ast.Assert, env: Env, unit: Unit) -> bool:
        self.eval(statement.test, env, unit)
        return True

    def _exec_import(
        self, statement: Union[ast.Import, ast.ImportFrom], env: Env, unit: Unit
    ) -> bool:
        self.names.add_syntax_import(statement)  # names bind in the order the code runs
        return True

    def _exec_if(self, node: ast.If, env: Env, unit: Unit) -> bool:
        self.eval(node.test, env, unit)
        body_env, orelse_env = dict(env), dict(env)
        tested = _device_tested_for_cpu(node.test, self.text)
        if tested is not None:
            device, equal = tested
            _place_on_cpu(body_env if equal else orelse_env, device)
        on_gpu = _tensor_tested_for_gpu(node.test)
        if on_gpu is not None:
            name, holds = on_gpu
            _off_the_gpu(orelse_env if holds else body_env, name)
        _narrow_types(node.test, self.names, body_env, orelse_env, unit.function)
        flag = flag_tested(node.test)
        forgotten: tuple[Forgotten, Forgotten] = ({}, {})
        if flag is not None:
            forgotten = forget_unmoved(flag, body_env, orelse_env, self._holds_one_truth)
        available = _accelerator_tested(node.test, self.names)
        dead_body = _dead_body(node.test, env)
        with self.branching():
            with self._silenced_if(available is False or dead_body is True):
                body = self.exec_block(node.body, body_env, unit)
            with self._silenced_if(available is True or dead_body is False):  # (`elif` too)
                orelse = self.exec_block(node.orelse, orelse_env, unit)
        self._note_exits(
            body if body is not None or not _raises(node.body) else {},
            orelse if orelse is not None or not _raises(node.orelse) else {},
        )  # (a branch ending in `raise` ends the run there: no iteration goes on past it)
        if dead_body is not None:  # the branch the call's `None` never takes leaves nothing
            body, orelse = (None, orelse) if dead_body else (body, None)
        if body is not None and orelse is not None:  # (else only one branch goes on: its word)
            give_back(body, forgotten[0])
            give_back(orelse, forgotten[1])
        omitted = _omitted_parameter(node.test, unit.function)
        given = env.get(omitted[0]) if omitted is not None else None
        if body is not None and orelse is not None:
            _give_siblings_back(env, body, orelse)
        merged = merge(body, orelse)
        if flag is not None and merged is not None:
            remember_flag(flag, body, orelse, merged)
        changed = _replace(env, merged)
        if omitted is not None:
            parameter, when_true = omitted
            branch = body if when_true else orelse
            made = branch.get(parameter, UNKNOWN) if branch is not None else UNKNOWN
            if made is not given and made.is_cpu_tensor():
                # `if mask is None: mask = torch.ones(...)`: callers that pass no mask take
                # this path, and on it the value is on the CPU (what the branch made: where it
                # leaves the parameter alone, it holds what a caller passed).
                env[parameter] = made
        return changed

    def _holds_one_truth(self, flag: str) -> bool:
        """Whether the file binds ``flag`` so that all its tests read one truth (see `flags`)."""
        if self._flags is None:
            self._flags = flags_bound_once(self._module)
        return flag in self._flags

    @contextmanager
    def _silenced_if(self, condition: bool) -> Iterator[None]:
        self.silenced += condition
        try:
            yield
        finally:
            self.silenced -= condition

    def _exec_for(self, node: Union[ast.For, ast.AsyncFor], env: Env, unit: Unit) -> bool:
        iterable = self.eval(node.iter, env, unit)
        item = iterable.item or (join_all(iterable.elements) if iterable.elements else UNKNOWN)
        if item is UNKNOWN:
            item = _rows(iterable)
        if item is UNKNOWN:
            item = input_item(iterable) or UNKNOWN

        data = data_siblings(node.target, node.body)

        def iteration(body_env: Env) -> Env:
            self.bind(node.target, item, body_env, unit)
            for name in data:
                if body_env.get(name, UNKNOWN).kind is Kind.UNKNOWN:
                    body_env[name] = Value(Kind.TENSOR, body_env[name].placement)
            self.exec_block(node.body, body_env, unit)
            return body_env

        head = run_to_fixpoint(self, env, iteration)
        with self._iterating(head, env):
            end = iteration(dict(head))
        _replace(env, loop_head(env, end))
        return self.exec_block(node.orelse, env, unit) is not None

    def _exec_while(self, node: ast.While, env: Env, unit: Unit) -> bool:
        def iteration(body_env: Env) -> Env:
            self.eval(node.test, body_env, unit)
            self.exec_block(node.body, body_env, unit)
            return body_env

        head = run_to_fixpoint(self, env, iteration)
        with self._iterating(head, env):
            final = iteration(dict(head))
        return _replace(env, loop_head(env, final))

    def _note_exits(self, *branches: Optional[Env]) -> None:
        """A branch that did not reach its end (None) may have left the loop's iteration."""
        if any(branch is None for branch in branches):
            self.paths = replace(self.paths, exits=self.paths.exits + 1)

    @contextmanager
    def _iterating(self, head: Env, entry: Env) -> Iterator[None]:
        """Around the recording run of a loop's body, from ``head``; ``entry``: the state before
        the loop, which the first iteration reads."""
        self.loop_frames.append(LoopFrame(head, dict(entry), self.paths))
        try:
            yield
        finally:
            self.loop_frames.pop()

    def _exec_with(self, node: Union[ast.With, ast.AsyncWith], env: Env, unit: Unit) -> bool:
        expects_error = expects_error_in_syntax(node, self.names)
        self.silenced += expects_error
        try:
            return self._exec_with_items(node, env, unit)
        finally:
            self.silenced -= expects_error

    def _exec_with_items(self, node: Union[ast.With, ast.AsyncWith], env: Env, unit: Unit) -> bool:
        moves_default = False
        for item in node.items:
            value = self.eval(item.context_expr, env, unit)
            moves_default = moves_default or value.kind is Kind.DEVICE_OBJECT
            if item.optional_vars is not None:
                share = self._share_of(item.context_expr, env, unit)
                self.bind(item.optional_vars, share, env, unit)
        unit.default_device_changed += moves_default
        try:
            return self.exec_block(node.body, env, unit) is not None
        finally:
            unit.default_device_changed -= moves_default

    def _share_of(self, context: ast.expr, env: Env, unit: Unit) -> Value:
        """What `with state.split_between_processes(data) as mine:` binds: a share of `data`,
        where `data` is (nothing known of other context managers)."""
        if not (
            isinstance(context, ast.Call)
            and isinstance(context.func, ast.Attribute)
            and context.func.attr in SPLITTING_CONTEXTS
            and context.args
            and isinstance(context.args[0], (ast.Name, ast.Attribute))
        ):
            return UNKNOWN
        shared = self.eval(context.args[0], env, unit)
        return replace(shared, scalar=False) if shared.kind is Kind.TENSOR else UNKNOWN

    def _exec_try(self, node: ast.Try, env: Env, unit: Unit) -> bool:
        body_env = dict(env)
        with self.branching():  # an exception may leave the body anywhere
            body = self.exec_block(node.body, body_env, unit)
            if body is not None:
                body = self.exec_block(node.orelse, body, unit)
            # A handler may start anywhere in the body: from what holds both before and after it.
            start = merge(env, body_env) or env
            outcome = body
            for handler in node.handlers:
                handler_env = dict(start)
                if handler.name is not None:
                    handler_env[handler.name] = UNKNOWN
                handled = self.exec_block(handler.body, handler_env, unit)
                self._note_exits(handled)
                outcome = merge(outcome, handled)
        self._note_exits(body)
        if node.finalbody:
            final_env = dict(outcome if outcome is not None else start)
            self.exec_block(node.finalbody, final_env, unit)
        return _replace(env, outcome)

    def _exec_definition(
        self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef], env: Env, unit: Unit
    ) -> bool:
        env[node.name] = Value(Kind.CALLABLE)
        if unit.function is None and node.name in self.functions and type(node) is not ast.ClassDef:
            # A script (a notebook, most often) that defines a helper again: calls from here
            # on run the new one.
            self.functions[node.name] = cast(FunctionNode, node)
        return True

    # -- binding -------------------------------------------------------------------------

    def bind(
        self, target: ast.expr, value: Value, env: Env, unit: Unit, keep_attributes: bool = False
    ) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            elements = target.elts
            for index, element in enumerate(elements):
                if isinstance(element, ast.Starred):
                    self.bind(element.value, UNKNOWN, env, unit)
                else:
                    self.bind(element, _unpacked(value, index, len(elements)), env, unit)
            return
        if isinstance(target, ast.Subscript):
            container = dotted_name(target.value)
            if container is not None and container in env:
                held = env[container]
                if held.kind is not Kind.TENSOR:  # a tensor copies what it is given, in place
                    env[container] = join(held, held.placed(value.placement))
            return
        dotted = dotted_name(target)
        if dotted is not None:
            if not keep_attributes:
                forget_attributes(env, dotted)  # they were another object's
            env[dotted] = value
            if self.recording and value is not UNKNOWN:
                self.values[target] = value


def _tensor_tuple(items: tuple[bool, ...], name: str, forward: bool) -> Value:
    """A parameter unpacked into tensors of the caller's device (see `Unit.tensor_items`)."""
    evidence = f"an item of {'input' if forward else 'parameter'} `{name}`"
    tensor = Value(Kind.TENSOR, Placement(Where.INPUT, evidence=evidence))
    return Value(Kind.SEQUENCE, elements=tuple(tensor if item else UNKNOWN for item in items))


def _on_cpu(value: Value) -> bool:
    """On the CPU, or a list or tuple whose every item is (`[torch.zeros(2)]`)."""
    if value.kind is Kind.SEQUENCE:
        items = sequence_items(value)
        return bool(items) and all(item.where is Where.CPU for item in items)
    return value.where is Where.CPU


def forget_attributes(env: Env, name: str) -> None:
    """``name`` now holds another object: what was known of its attributes is not."""
    prefix = name + "."
    for key in [key for key in env if key.startswith(prefix)]:
        del env[key]


def _moved_name(value: ast.expr) -> Optional[str]:
    """The name `data.to(device)` moves."""
    func = value.func if isinstance(value, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda", "cpu"):
        return dotted_name(func.value)
    return None


def _omitted_parameter(
    test: ast.expr, function: Optional[FunctionNode]
) -> Optional[tuple[str, bool]]:
    """The parameter ``test`` finds absent, and on which branch: `if mask is None:` or `if not
    mask:` (True), `if mask is not None: ... else:` or `if mask: ... else:` (False), where
    callers may pass None: `None` is the parameter's default, or its annotation says so
    (`Optional[Tensor]`, `Tensor | None`). A test of a parameter typed `Tensor` alone is a
    defensive check, no evidence."""
    found = _none_test(test)
    if function is None or found is None:
        return None
    name, absent_if_true = found
    tested = next((p for p in parameters_of(function) if p.arg == name), None)
    if tested is None:
        return None
    default = defaults_of(function).get(name)
    defaults_to_none = isinstance(default, ast.Constant) and default.value is None
    if not (defaults_to_none or _admits_none(tested.annotation)):
        return None
    return name, absent_if_true


def _dead_body(test: ast.expr, env: Env) -> Optional[bool]:
    """For a parameter the call analysed left at its `None` default: whether the test's body
    is the branch that cannot run (`if device is not None:`), or its `else` (`if device is
    None:`, False); None where the test is no such test."""
    tested = _none_test(test)
    if tested is None or env.get(tested[0], UNKNOWN).kind is not Kind.NONE:
        return None
    return not tested[1]


def _none_test(test: ast.expr) -> Optional[tuple[str, bool]]:
    """The name a test finds None (or falsy), and whether where it holds: `x is None`, `not x`
    (True); `x is not None`, `x` (False)."""
    if isinstance(test, ast.Name):
        return test.id, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = test.operand
        return (inner.id, True) if isinstance(inner, ast.Name) else None
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, right = test.left, test.comparators[0]
    if (
        isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(left, ast.Name)
        and isinstance(right, ast.Constant)
        and right.value is None
    ):
        return left.id, isinstance(test.ops[0], ast.Is)
    return None


def _admits_none(annotation: Optional[ast.expr]) -> bool:
    """`Optional[...]`, `Union[..., None]`, `... | None`, also written as a string."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return "Optional[" in annotation.value or "None" in annotation.value
    return any(
        (isinstance(node, ast.Constant) and node.value is None)
        or (dotted_name(node) or "").rpartition(".")[2] == "Optional"
        for node in ast.walk(annotation)
    )


_AVAILABILITY_CHECKS = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available"})


def _device_tested_for_cpu(test: ast.expr, text: SourceText) -> Optional[tuple[str, bool]]:
    """`if device == "cpu":`, `if self.device != _CPU_DEVICE:`, `if dev.type == "cpu":`: the
    device tested, and whether the test holds when it is the CPU."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    operator = type(test.ops[0])
    if operator not in (ast.Eq, ast.NotEq, ast.Is, ast.IsNot):
        return None
    left, right = test.left, test.comparators[0]
    for device, other in ((left, right), (right, left)):
        name = dotted_name(device)
        if name and "cpu" in text.code_of(other).lower() and "cpu" not in name.lower():
            return name.removesuffix(".type"), operator in (ast.Eq, ast.Is)
    return None


def _accelerator_tested(test: ast.expr, names: ImportMap) -> Optional[bool]:
    """`torch.cuda.is_available()` (True) or `not torch.cuda.is_available()` (False): the
    branch where the test says no accelerator is there runs on the CPU alone."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    call = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if not (isinstance(call, ast.Call) and not call.args and not call.keywords):
        return None
    if names.qualified_syntax_name(call.func) not in _AVAILABILITY_CHECKS:
        return None
    return not negated


def _leaves_when_available(statement: ast.If, names: ImportMap) -> bool:
    """`if torch.cuda.is_available(): ... return`: what follows runs only without CUDA."""
    body = statement.body
    exits = bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
    return exits and not statement.orelse and _accelerator_tested(statement.test, names) is True


def _is_parameter_of(name: str, function: Optional[FunctionNode]) -> bool:
    return function is not None and any(p.arg == name for p in parameters_of(function))


def _narrow_types(
    test: ast.expr,
    names: ImportMap,
    body_env: Env,
    orelse_env: Env,
    function: Optional[FunctionNode],
) -> None:
    """What a type test proves in each branch: no tensor where `isinstance(x, np.ndarray)`
    holds (its placement unknown), a tensor where `isinstance(x, torch.Tensor)` does."""
    narrowed = type_test(test)
    if narrowed is not None:
        for branch_env, tensor in (
            (body_env, narrowed.tensor_if_true),
            (orelse_env, narrowed.tensor_if_false),
        ):
            if not tensor and narrowed.name in branch_env:
                if narrowed.tensor_if_true and _is_parameter_of(narrowed.name, function):
                    # A function dispatching on whether its argument is a tensor
                    # (`isinstance(y_center, torch.Tensor)`) takes its sibling arguments
                    # (`y_scale`) in kind where it is none.
                    for name, value in branch_env.items():
                        if _is_parameter(value):
                            branch_env[name] = NOT_A_SIBLING_TENSOR
                branch_env[narrowed.name] = NOT_A_TENSOR
    tested = tensor_tested(test, names)
    if tested is not None:
        # `if not isinstance(image, torch.Tensor): image = preprocess(image)`: where the
        # test proves it, the name holds a tensor (wherever it lives).
        name, holds = tested
        proved = body_env if holds else orelse_env
        held = proved.get(name, UNKNOWN)
        if held.kind is Kind.UNKNOWN:
            proved[name] = Value(Kind.TENSOR, held.placement)


# What a type test of its sibling argument proves of a parameter in one branch (see
# `_narrow_types`): a value of its own, so that the branch's end gives the parameter back.
NOT_A_SIBLING_TENSOR = Value(Kind.NOT_TENSOR)


def _give_siblings_back(env: Env, *branches: Env) -> None:
    """A sibling's kind, read from the tested argument's (see `_narrow_types`), holds in its
    branch alone; where the other branch returns, in the rest of the function too."""
    for branch in branches:
        for name, value in branch.items():
            if value is NOT_A_SIBLING_TENSOR and name in env:
                branch[name] = env[name]


def _is_parameter(value: Value) -> bool:
    """A tensor parameter as the caller passed it, untouched."""
    return value.kind is Kind.TENSOR and value.placement.evidence.startswith("parameter `")


def _tensor_tested_for_gpu(test: ast.expr) -> Optional[tuple[str, bool]]:
    """`if x.device.type == "cuda":`, `if x.is_cuda:`, `if not x.is_cuda:`: the tensor whose
    device is tested, and whether the test holds when it is on the GPU."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if isinstance(inner, ast.Attribute) and inner.attr == "is_cuda":
        name = dotted_name(inner.value)
        return (name, not negated) if name else None
    if negated or not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    operator = type(test.ops[0])
    if operator not in (ast.Eq, ast.NotEq):
        return None
    for side, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        name = dotted_name(side) or ""
        if name.endswith(".device.type") and string_value(other) == "cuda":
            return name.removesuffix(".device.type"), operator is ast.Eq
    return None


def _off_the_gpu(env: Env, name: str) -> None:
    """Where a test proved a tensor is not on the GPU, the code handles it, and the tensors
    made from it, where they are: no longer the caller's device (`else: x.detach().numpy()`
    after `if x.device.type == "cuda":`)."""
    tested = env.get(name)
    if tested is None or tested.kind is not Kind.TENSOR or tested.where is Where.CPU:
        return
    for other, value in env.items():  # (and what lives where it does: results made from it)
        if value.kind is Kind.TENSOR and value.placement == tested.placement:
            env[other] = value.placed(Placement(Where.UNKNOWN))


def _place_on_cpu(env: Env, device: str) -> None:
    """Where a test proved that ``device`` is the CPU, what was moved there is on the CPU."""
    for name, value in env.items():
        if value.where is Where.DEVICE and value.placement.device == device:
            evidence = f"on `{device}`, the CPU in this branch"
            env[name] = value.placed(Placement(Where.CPU, evidence=evidence))


def _raises(block: Sequence[ast.stmt]) -> bool:
    return bool(block) and type(block[-1]) is ast.Raise


def _replace(env: Env, merged: Optional[Env]) -> bool:
    if merged is None:
        return False
    env.clear()
    env.update(merged)
    return True


# torch.nn classes that are tensors, not layers: `self.scale = nn.Parameter(...)`.
_TENSOR_CLASSES = frozenset(
    {"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"}
)


# Where a module surely ran (not `MAYBE_DEVICE`: a flag's other truth, which `x.numpy() if
# not use_gpu else x.cpu().numpy()` tests, leaves it on the CPU).
_RAN_THERE = frozenset({Where.DEVICE, Where.INPUT})


def _unpacked(value: Value, index: int, count: int) -> Value:
    if value.elements and len(value.elements) == count:
        return value.elements[index]
    if value.kind is Kind.BATCH:
        return Value(Kind.TENSOR, value.placement)
    if value.kind is Kind.TENSOR and value.module_output and value.where in _RAN_THERE:
        # `logits, hidden = self.rnn(x)`: what a module returned, unpacked, is where it ran
        return Value(Kind.TENSOR, value.placement, module_output=True)
    rows = _rows(value)
    if rows is not UNKNOWN:
        return rows
    return value.item or input_item(value) or UNKNOWN


def _rows(value: Value) -> Value:
    """What unpacking or iterating a tensor gives: its rows, or the tensors `torch.meshgrid`
    returns (held as one), where it is; 0-dim ones, perhaps. UNKNOWN for anything else."""
    if value.kind is Kind.TENSOR and value.where is not Where.UNKNOWN and not value.module_output:
        return Value(Kind.TENSOR, value.placement, scalar=True, unproven=value.unproven)
    return UNKNOWN


_StatementHandler = Callable[[DeviceFlow, Any, Env, Unit], bool]
_STATEMENTS: dict[type, _StatementHandler] = {
    ast.Expr: DeviceFlow._exec_expression,
    ast.Assign: DeviceFlow._exec_assign,
    ast.AnnAssign: DeviceFlow._exec_annotated,
    ast.AugAssign: DeviceFlow._exec_augmented,
    ast.Return: DeviceFlow._exec_return,
    ast.Raise: DeviceFlow._exec_raise,
    ast.Continue: DeviceFlow._exec_jump,
    ast.Break: DeviceFlow._exec_jump,
    ast.Assert: DeviceFlow._exec_assert,
    ast.Import: DeviceFlow._exec_import,
    ast.ImportFrom: DeviceFlow._exec_import,
    ast.If: DeviceFlow._exec_if,
    ast.For: DeviceFlow._exec_for,
    ast.AsyncFor: DeviceFlow._exec_for,
    ast.While: DeviceFlow._exec_while,
    ast.With: DeviceFlow._exec_with,
    ast.AsyncWith: DeviceFlow._exec_with,
    ast.Try: DeviceFlow._exec_try,
    ast.FunctionDef: DeviceFlow._exec_definition,
    ast.AsyncFunctionDef: DeviceFlow._exec_definition,
    ast.ClassDef: DeviceFlow._exec_definition,
}
if hasattr(ast, "TryStar"):  # Python 3.11: `except*`
    _STATEMENTS[ast.TryStar] = DeviceFlow._exec_try
# Statements with blocks: the code in their header is in no simple statement.
_COMPOUND = frozenset(
    getattr(ast, name)
    for name in (
        "If For AsyncFor While With AsyncWith Try TryStar Match FunctionDef AsyncFunctionDef "
        "ClassDef"
    ).split()
    if hasattr(ast, name)  # `match` came with Python 3.10, `except*` with 3.11
)


def _call_graph(functions: list[FunctionNode]) -> dict[FunctionNode, set[FunctionNode]]:
    """The functions of the list each one calls by name (itself left out), or hands to an
    executor (`pool.submit(fn, x)`)."""
    by_name = {function.name: function for function in functions}
    graph: dict[FunctionNode, set[FunctionNode]] = {}
    for function in functions:
        called = set()
        for node in nodes_below(function):
            if not isinstance(node, ast.Call):
                continue
            call = handed_over(node) or node
            name = call.func.id if isinstance(call.func, ast.Name) else ""
            if by_name.get(name, function) is not function:
                called.add(by_name[name])
        graph[function] = called
    return graph


def _callers_first(
    functions: list[FunctionNode], callees: dict[FunctionNode, set[FunctionNode]]
) -> list[FunctionNode]:
    """``functions`` with each one after every function of the list calling it (``callees``),
    where the calls form no cycle (those keep the file's order, at the end)."""
    waiting = Counter(callee for called in callees.values() for callee in called)
    ready = [function for function in functions if not waiting[function]]
    ordered: list[FunctionNode] = []
    while ready:
        function = ready.pop(0)
        ordered.append(function)
        for callee in callees[function]:
            waiting[callee] -= 1
            if not waiting[callee]:
                ready.append(callee)
    placed = set(ordered)
    return ordered + [function for function in functions if function not in placed]


def _functions_in(
    body: Sequence[ast.stmt], owner: Optional[ast.ClassDef]
) -> Iterator[tuple[FunctionNode, Optional[ast.ClassDef]]]:
    """Every function in a block, with the class it is a method of; nested ones too."""
    for statement in body:
        if isinstance(statement, _FUNCTION_TYPES):
            yield statement, owner
            yield from _functions_in(statement.body, None)
        elif isinstance(statement, ast.ClassDef):
            yield from _functions_in(statement.body, statement)
        else:
            for block in statement_blocks(statement):
                yield from _functions_in(block, owner)


def _lightning_batch(method: FunctionNode) -> str:
    """The batch parameter of a LightningModule's step hook (`training_step(self, batch, i)`)."""
    if method.name not in LIGHTNING_STEP_HOOKS:
        return ""
    parameters = [*method.args.posonlyargs, *method.args.args]
    return parameters[1].arg if len(parameters) > 1 else ""


def _run_by_init(methods: Mapping[str, FunctionNode]) -> set[str]:
    """The methods `__init__` calls as `self.name(...)`, and those they call in turn (all of
    them where it hands `self` to a function): they run while the module is still on the CPU
    (`self._conv_output_size(shape)` feeding a dummy input to its layers). Static and class
    methods too, whose first parameter is no module."""
    reached = {name for name, method in methods.items() if is_class_level(method)}
    pending = ["__init__"]
    while pending:
        method = methods.get(pending.pop())
        if method is None:
            continue
        if _hands_self_over(method):
            return set(methods)  # `infer_flat(self, shape)` may call any of them
        for node in nodes_below(method):
            if (
                type(node) is ast.Attribute
                and type(node.value) is ast.Name
                and node.value.id == "self"
                and node.attr in methods
                and node.attr not in reached
            ):
                reached.add(node.attr)
                pending.append(node.attr)
    return reached


def _hands_self_over(function: FunctionNode) -> bool:
    """Whether ``function`` passes `self` to a call (not `super(Cls, self)`)."""
    for node in nodes_below(function):
        if isinstance(node, ast.Call) and dotted_name(node.func) != "super":
            passed = [*node.args, *(keyword.value for keyword in node.keywords)]
            if any(isinstance(value, ast.Name) and value.id == "self" for value in passed):
                return True
    return False


def _attributes_constructed(init: FunctionNode) -> Iterator[tuple[str, ast.Call]]:
    """`self.name = Something(...)` at the top level of ``init``: the name, and the call."""
    for statement in init.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = self_attribute(statement.targets[0])
            if target is not None and isinstance(statement.value, ast.Call):
                yield target, statement.value


def _attributes_constructed_anywhere(init: FunctionNode) -> Iterator[tuple[str, ast.Call]]:
    """`self.name = Something(...)` anywhere in ``init`` (`if self.use_crf: self.crf
    = CRF(...)` too), where every assignment of `self.name` there calls the same thing."""
    calls: dict[str, list[Optional[ast.Call]]] = {}
    for node in nodes_below(init):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            name = self_attribute(target)
            if name is not None:
                value = getattr(node, "value", None) if len(targets) == 1 else None
                calls.setdefault(name, []).append(value if isinstance(value, ast.Call) else None)
    for name, made in calls.items():
        first = made[0]
        if first is not None and all(
            call is not None and dotted_name(call.func) == dotted_name(first.func) for call in made
        ):
            yield name, first


def _calls_super_init(init: FunctionNode, class_name: str) -> bool:
    """Whether a statement of ``init``'s top level is `super().__init__(...)` (or
    `super(Cls, self).__init__(...)` of its own class: naming another skips the base's)."""
    for statement in init.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "__init__"
            and isinstance(call.func.value, ast.Call)
            and dotted_name(call.func.value.func) == "super"
        ):
            continue
        named = call.func.value.args
        if not named or dotted_name(named[0]) == class_name:
            return True
    return False


def _merged_members(
    inherited: ModuleMembers, own: ModuleMembers, set_again: Collection[str]
) -> ModuleMembers:
    """A subclass's members: its base's, but those the subclass sets again or shadows, with
    its own."""
    if inherited is NO_MEMBERS:
        return own
    out = frozenset(set_again)

    def items(base: Mapping[str, T], mine: Mapping[str, T]) -> dict[str, T]:
        return {**{k: v for k, v in base.items() if k not in out}, **mine}

    return ModuleMembers(
        submodules=(inherited.submodules - out) | own.submodules,
        numbers=(inherited.numbers - out) | own.numbers,
        lists=(inherited.lists - out) | own.lists,
        tensors=items(inherited.tensors, own.tensors),
        modules=items(inherited.modules, own.modules),
        member_tensors=items(inherited.member_tensors, own.member_tensors),
    )


def _reassigned_in_methods(facts: ClassFacts) -> set[str]:
    """What the methods of a class other than `__init__` assign (see `_assigned_names`)."""
    return set().union(
        *(_assigned_names(method) for name, method in facts.methods.items() if name != "__init__")
    )


def _assigned_names(function: FunctionNode) -> set[str]:
    """The names and attributes a function assigns (an item of, too), or moves in place
    (`self.model.to(d)`)."""
    names: set[str] = set()
    for statement in function.body:
        for node in nodes_below(statement):
            kind = type(node)
            if kind is ast.Assign:
                targets: list[ast.expr] = node.targets  # type: ignore[attr-defined]
            elif kind is ast.AugAssign or kind is ast.AnnAssign:
                targets = [node.target]  # type: ignore[attr-defined]
            elif kind is ast.Call and type(node.func) is ast.Attribute:  # type: ignore[attr-defined]
                moved = node.func.attr in ("to", "cuda", "cpu")  # type: ignore[attr-defined]
                targets = [node.func.value] if moved else []  # type: ignore[attr-defined]
            else:
                continue
            # `self.cache[key] = t` changes what `self.cache` holds.
            targets = [t.value if isinstance(t, ast.Subscript) else t for t in targets]
            names.update(name for name in map(dotted_name, targets) if name is not None)
    return names
