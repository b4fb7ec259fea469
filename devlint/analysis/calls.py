"""The expression half of the device-flow interpreter: what each expression evaluates to."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Optional, Union

from devlint.analysis.contexts import argument_node
from devlint.analysis.derivation import latest_assignment
from devlint.analysis.imported import followed_argument, imported_attribute, imported_value
from devlint.analysis.loops import (
    LoopFrame,
    PathCounts,
    first_iteration_value,
    later_iteration_value,
)
from devlint.analysis.names import ImportMap
from devlint.analysis.parameters import TENSOR_ONLY_ATTRIBUTES, changed_parameters
from devlint.analysis.placers import PLACERS, placer, placer_method
from devlint.analysis.project import ProjectView
from devlint.analysis.syntax import (
    SourceText,
    argument,
    call_arguments,
    cuda_literal,
    dotted_name,
    handed_over,
    has_arguments,
    is_class_level,
    keyword_value,
    last_name,
    no_elements,
    string_value,
)
from devlint.analysis.torch_api import (
    COMBINING_FUNCTIONS,
    DEVICE_KEEPING_COLLECTIVES,
    DEVICE_MOVES,
    DTYPES,
    FACTORIES,
    FUNCTIONAL_LOSSES,
    HOST_METHODS,
    KEEPING_FUNCTIONS,
    LIKE_FACTORIES,
    LOADER_CLASSES,
    LOSS_WEIGHT_KEYWORDS,
    MODULE_FACTORY_PREFIXES,
    MODULE_SELF_METHODS,
    NEW_METHODS,
    OPERAND_METHODS,
    PLACEMENT_KEEPING_METHODS,
    REDUCTIONS,
    SCALAR_CAPABLE_FACTORIES,
    WRAPPER_MODULES,
    combines_operands,
    device_compared,
    is_loss_class,
    is_parameterless_class,
    is_torch_nn_class,
    looks_like_loader,
    loss_operands,
    returns_one_tensor,
    takes_cpu_targets,
)
from devlint.analysis.values import (
    SCALAR,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    Where,
    appended,
    as_compared_by_device,
    combine,
    cpu_loader,
    input_item,
    join,
)

if TYPE_CHECKING:
    from devlint.analysis.contexts import Frame
    from devlint.analysis.units import Env, FunctionNode, ModuleMembers, Unit

# Calls whose result is their first argument, or iterates as it does: `tqdm(loader)`, and the
# deprecated `Variable(t)`, which wraps the tensor where it is.
_PASS_THROUGH_CALLS = frozenset(
    {
        "iter",
        "tqdm",
        "tqdm.tqdm",
        "tqdm.auto.tqdm",
        "tqdm.notebook.tqdm",
        "torch.autograd.Variable",
        "torch.autograd.variable.Variable",
    }
)
_PARAMETER_METHODS = frozenset({"parameters", "buffers", "named_parameters", "named_buffers"})
# `dt`, `ori_dt`, `self.compute_dt`: how code abbreviates a dtype variable.
_DTYPE_ABBREVIATION = re.compile(r"(?:^|[._])dt$")
_DTYPE_FUNCTIONS = frozenset(("torch.promote_types", "torch.result_type"))
# Factories copying their data, which keep a tensor's device (`torch.tensor(t)`).
_DATA_COPIES = frozenset(("torch.tensor", "torch.as_tensor", "torch.asarray"))
_OFF_THE_CPU = frozenset((Where.INPUT, Where.DEVICE, Where.MAYBE_DEVICE))
_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag", "grad"})
# Keys under which dict batches carry raw data, not tensors: the collated prompts or file names
# of a Hugging Face style dataset are lists of strings.
_TEXT_KEY = re.compile(
    r"prompt|text|caption|path|file|name|url|sentence|string|question|answer|title|^ids?$|_id$"
)


# The tensors a torch layer holds under these names (a layer built with `bias=False` holds None).
_LAYER_TENSORS = frozenset({"weight", "bias", "running_mean", "running_var"})


# Functions whose result has at least one dimension, whatever their inputs have.
_JOINING_FUNCTIONS = frozenset(
    "stack cat concat concatenate hstack vstack dstack column_stack row_stack".split()
)


def _as_tuple(call: ast.Call) -> bool:
    """`as_tuple=True` is the call's only keyword."""
    keywords = call.keywords
    return (
        len(keywords) == 1
        and keywords[0].arg == "as_tuple"
        and isinstance(keywords[0].value, ast.Constant)
        and keywords[0].value.value is True
    )


def _followed_value(argument: Value) -> Value:
    """What a function returning on its argument's device gives back: a tensor where the
    argument is one, placed where it is (a number passed gives a number)."""
    if argument.kind is Kind.TENSOR:
        return Value(Kind.TENSOR, argument.placement, scalar=argument.scalar)
    if argument.kind is Kind.SCALAR:
        return argument
    return UNKNOWN


def _operands(arguments: Sequence[Value]) -> list[Value]:
    """Tensor operands of a torch function: the elements of `torch.cat([a, b])` count one by one."""
    operands: list[Value] = []
    for value in arguments:
        if value.kind is Kind.SEQUENCE:
            operands.extend(value.elements or ((value.item,) if value.item else ()))
        else:
            operands.append(value)
    return operands


def _is_ellipsis(index: ast.expr) -> bool:
    """`...`, which may stand for no dimension at all (`x[..., 0]` of a vector is 0-dim)."""
    return type(index) is ast.Constant and index.value is Ellipsis


def _adds_or_keeps_axes(index: ast.expr) -> bool:
    """`None` (a new axis) and `...` in an index keep a tensor's dimensions, as a slice does."""
    return type(index) is ast.Constant and (index.value is None or index.value is Ellipsis)


def _lists_indices(index: ast.expr, function: Optional[FunctionNode]) -> bool:
    """`[0, 2]`, or a name the function last bound to a list (`dims = [None] * n`)."""
    if isinstance(index, ast.Name) and function is not None:
        latest = latest_assignment(function, index)
        index = latest.value if latest is not None and latest.value is not None else index
    if isinstance(index, ast.BinOp) and isinstance(index.op, ast.Mult):
        return isinstance(index.left, ast.List) or isinstance(index.right, ast.List)
    return isinstance(index, (ast.List, ast.ListComp))


# Factories whose first argument (or `size=`) is the shape: `torch.zeros(())` is 0-dim.
_SHAPED_FACTORIES = frozenset(
    {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full"}
)


def _zero_dim_shape(node: ast.Call, qualified: str) -> bool:
    """A factory given the empty shape `()`: its tensor is 0-dim, a CPU scalar that mixes
    legally with tensors on any device."""
    if qualified not in _SHAPED_FACTORIES:
        return False
    shape = argument(node, 0, "size")
    return isinstance(shape, (ast.Tuple, ast.List)) and not shape.elts


def _is_list_literal(node: ast.expr) -> bool:
    return isinstance(node, (ast.List, ast.Tuple, ast.ListComp))


class CallEvaluator:
    """Evaluates expressions; :class:`~devlint.analysis.flow.DeviceFlow` runs the statements."""

    names: ImportMap
    text: SourceText
    values: dict[ast.AST, Value]
    recording: bool
    default_device_changed: bool
    functions: dict[str, FunctionNode]
    # Nodes of these classes are logged in `visits` as they are evaluated, with the simple
    # statement they are in: the flow rules check those, rather than walk the tree again.
    watched: frozenset[type]
    visits: list[tuple[ast.AST, Optional[ast.stmt]]]
    statement: Optional[ast.stmt]
    # Inside `with pytest.raises(...)`, or a branch that runs only where no accelerator is
    # available (`else:` of `if torch.cuda.is_available():`): nothing there is logged.
    silenced: int
    project: Optional[ProjectView]  # the summaries of imported project files, where known
    frames: list[Frame]  # helpers being analysed in their caller's context
    loop_frames: list[LoopFrame]  # loops whose body is being run, recording
    changed_parameters: dict[FunctionNode, frozenset[str]]  # per helper, what it changes
    # Factories given a helper's `device` parameter its call left at None: made on the CPU.
    defaulted_devices: set[ast.AST]
    paths: PathCounts  # the branches around the expression, and those that left early so far
    first_values: dict[ast.AST, Value]  # names read with another value on a first iteration
    later_values: dict[ast.AST, Value]  # names read after an iteration reset them on the CPU
    # Each method's class's methods, which it calls as `self.name(...)`.
    sibling_methods: dict[ast.AST, Mapping[str, FunctionNode]]

    def is_module_class(self, name: str) -> bool:
        raise NotImplementedError

    def class_returns_tensor(self, name: str) -> bool:
        """Whether the `forward` of the file's module class ``name`` returns one tensor."""
        raise NotImplementedError

    def summary(self, function: FunctionNode) -> Value:
        raise NotImplementedError

    def call_summary(
        self, function: FunctionNode, call: ast.Call, arguments: list[Value], caller: Unit
    ) -> Value:
        raise NotImplementedError

    def construct(self, call: ast.Call, name: str, arguments: list[Value]) -> None:
        raise NotImplementedError

    def method_call(
        self,
        call: ast.Call,
        method: FunctionNode,
        receiver: Value,
        arguments: list[Value],
        caller: Unit,
        members: Optional[ModuleMembers] = None,
    ) -> Value:
        raise NotImplementedError

    def note_module_input(self, call: ast.Call, module: Value, arguments: list[Value]) -> None:
        raise NotImplementedError

    def note_operation(self, node: ast.AST, operands: Sequence[Value]) -> None:
        raise NotImplementedError

    def _operation(self, node: ast.AST, operands: Sequence[Value]) -> None:
        """An operation's operands, seen inside a helper analysed in its caller's context."""
        if self.frames and not self.recording:
            self.note_operation(node, operands)

    def device_read(self, unit: Unit, use: ast.Name) -> Optional[ast.Attribute]:
        raise NotImplementedError

    def bound_in_context(self, node: ast.expr) -> bool:
        """Whether ``node`` names a parameter the call being analysed passed a value for."""
        frames = self.frames
        return bool(frames) and type(node) is ast.Name and node.id in frames[-1].bound

    def bind(
        self, target: ast.expr, value: Value, env: Env, unit: Unit, keep_attributes: bool = False
    ) -> None:
        raise NotImplementedError

    def _source(self, node: ast.AST) -> str:
        return self.text.code_of(node, limit=50)

    # -- dispatch ----------------------------------------------------------------------

    def eval(self, node: ast.expr, env: Env, unit: Unit) -> Value:
        kind = type(node)
        if kind is ast.Call:
            return self.eval_call(node, env, unit, bare=False)  # type: ignore[arg-type]
        evaluate = _EVALUATORS.get(kind)
        value = (
            evaluate(self, node, env, unit)
            if evaluate is not None
            else self._children(node, env, unit)
        )
        if self.recording:
            if value is not UNKNOWN:
                self.values[node] = value
            if kind in self.watched:
                self.visited(node)
        return value

    def visited(self, node: ast.AST) -> None:
        if type(node) in self.watched and self.recording and not self.silenced:
            self.visits.append((node, self.statement))

    def _children(self, node: ast.AST, env: Env, unit: Unit) -> Value:
        for field in node._fields:
            value = getattr(node, field, None)
            for child in value if type(value) is list else (value,):
                if isinstance(child, ast.expr):
                    if type(child) is not ast.Lambda:
                        self.eval(child, env, unit)
                elif isinstance(child, ast.AST) and not isinstance(child, ast.expr_context):
                    self._children(child, env, unit)
        return UNKNOWN

    # -- simple expressions --------------------------------------------------------------

    def _name(self, node: ast.Name, env: Env, unit: Unit) -> Value:
        value = env.get(node.id, UNKNOWN)
        if self.loop_frames and self.recording:
            first = first_iteration_value(self.loop_frames, node.id, value, self.paths)
            if first is not None:
                self.first_values[node] = first
            later = later_iteration_value(self.loop_frames, node.id, value, self.paths)
            if later is not None:
                self.later_values[node] = later
        if value.kind is Kind.UNKNOWN and value.where is Where.UNKNOWN:
            read = self.device_read(unit, node)
            if read is not None:  # a tensor whose device the code reads: on a device, somewhere
                evidence = f"`{node.id}`, whose device is read"
                return Value(Kind.TENSOR, Placement(Where.INPUT, evidence=evidence, origin=read))
        return value

    def _attribute(self, node: ast.Attribute, env: Env, unit: Unit) -> Value:
        dotted = dotted_name(node)
        if dotted is not None and dotted in env:
            return env[dotted]
        if type(node.value) is ast.Name and node.value.id == "self":
            # (lists first: `freqs: List[float]` counts among the numbers too)
            if node.attr in unit.members.lists:
                return Value(Kind.SEQUENCE)
            if node.attr in unit.members.numbers:
                return SCALAR
        base = self.eval(node.value, env, unit)
        attribute = node.attr
        if base.kind is Kind.TENSOR and attribute in _TENSOR_ATTRIBUTES:
            return Value(Kind.TENSOR, base.placement, scalar=base.scalar)
        if attribute == "device" and base.where is not Where.UNKNOWN and base.kind is Kind.TENSOR:
            return Value(Kind.DEVICE_OBJECT, base.placement)
        if attribute == "device" and base.kind is Kind.MODULE and base.where is Where.INPUT:
            return Value(Kind.DEVICE_OBJECT, base.placement)  # Lightning's `self.device`
        if base.kind is Kind.MODULE and base.where is Where.INPUT:
            layer = self._layer_attribute(node, unit)
            if layer is not None:
                return layer
        registered = unit.members.tensors.get(attribute) if base.kind is Kind.MODULE else None
        if registered is not None and type(node.value) is ast.Name and node.value.id == "self":
            # `self.inv_freq`, a registered buffer: `.to()` moves it with the module
            evidence = f"`self.{attribute}`, a {registered} of the module"
            return Value(Kind.TENSOR, Placement(Where.INPUT, evidence=evidence))
        if dotted is not None and looks_like_loader(dotted):
            return cpu_loader(f"from the data loader `{dotted}`", node)
        if self.project is not None and base.kind is Kind.MODULE and base.where is Where.DEVICE:
            return imported_attribute(self.project, node) or UNKNOWN  # `net.mask`, left behind
        return UNKNOWN

    def _layer_attribute(self, node: ast.Attribute, unit: Unit) -> Optional[Value]:
        """Inside the module's code: `self.linear`, a torch layer `__init__` made (which `.to()`
        moves with the module), and its `weight` or `bias`, on the module's device."""
        owner = node.value
        members = unit.members
        if type(owner) is ast.Name and owner.id == "self":
            if node.attr in members.submodules:
                evidence = f"`self.{node.attr}`, a layer of the module"
                return Value(Kind.MODULE, Placement(Where.INPUT, evidence=evidence))
            if node.attr in members.member_tensors:  # (its `forward` decides what it takes)
                evidence = f"`self.{node.attr}`, a module of the module"
                return Value(
                    Kind.MODULE, Placement(Where.INPUT, evidence=evidence), returns_tensor=False
                )
        if not (
            type(owner) is ast.Attribute
            and type(owner.value) is ast.Name
            and owner.value.id == "self"
        ):
            return None
        layer = node.attr in _LAYER_TENSORS and owner.attr in members.submodules
        kind = "parameter" if layer else members.member_tensors.get(owner.attr, {}).get(node.attr)
        if kind is None:
            return None
        evidence = f"`self.{owner.attr}.{node.attr}`, a {kind} of the module"
        return Value(Kind.TENSOR, Placement(Where.INPUT, evidence=evidence))

    def _constant(self, node: ast.Constant, env: Env, unit: Unit) -> Value:
        value = node.value
        kind = type(value)
        if kind is int or kind is float or kind is complex:
            return SCALAR
        if kind is not str:
            return UNKNOWN  # None, True, bytes, ...
        if value == "cpu":
            return Value(Kind.DEVICE_OBJECT, Placement(Where.CPU))
        written = cuda_literal(node)
        if written is not None:
            return Value(Kind.DEVICE_OBJECT, Placement(Where.DEVICE, written))
        return UNKNOWN

    def _binary(self, node: ast.BinOp, env: Env, unit: Unit) -> Value:
        operands = [self.eval(node.left, env, unit), self.eval(node.right, env, unit)]
        self._operation(node, operands)
        result = combine(operands, arithmetic=True)
        if result.kind is Kind.TENSOR and all(op.kind is not Kind.TENSOR for op in operands):
            # `H / self.window_size` of an input `H` of unknown kind: placed, proven nothing
            return replace(result, kind=Kind.UNKNOWN)
        return result

    def _unary(self, node: ast.UnaryOp, env: Env, unit: Unit) -> Value:
        operand = self.eval(node.operand, env, unit)
        return UNKNOWN if isinstance(node.op, ast.Not) else operand

    def _comparison(self, node: ast.Compare, env: Env, unit: Unit) -> Value:
        operands = [self.eval(node.left, env, unit)]
        operands.extend(self.eval(comparator, env, unit) for comparator in node.comparators)
        # What `.to(device)` returned compares as a tensor: `ids == 271` of a moved
        # tokenizer output is a mask there (a moved module would compare to a bool, unused).
        if any(
            operand.kind is Kind.TENSOR
            or (operand.kind is Kind.UNKNOWN and operand.where is Where.DEVICE)
            for operand in operands
        ):
            self._operation(node, operands)
            return combine(operands)
        return UNKNOWN

    def _if_expression(self, node: ast.IfExp, env: Env, unit: Unit) -> Value:
        self.eval(node.test, env, unit)
        with self.branching():
            return join(self.eval(node.body, env, unit), self.eval(node.orelse, env, unit))

    def _bool_operation(self, node: ast.BoolOp, env: Env, unit: Unit) -> Value:
        first, *rest = node.values
        self.eval(first, env, unit)
        with self.branching():  # `a and b + c`: what follows the first operand may not run
            for value in rest:
                self.eval(value, env, unit)
        return UNKNOWN

    @contextmanager
    def branching(self) -> Iterator[None]:
        """Around a branch, which the first iteration of a loop around it may not take."""
        self.paths = replace(self.paths, branches=self.paths.branches + 1)
        try:
            yield
        finally:
            self.paths = replace(self.paths, branches=self.paths.branches - 1)

    def _sequence(self, node: ast.Tuple, env: Env, unit: Unit) -> Value:
        elements = tuple(
            self.eval(element.value if type(element) is ast.Starred else element, env, unit)
            for element in node.elts
        )
        if any(type(element) is ast.Starred for element in node.elts):
            return UNKNOWN
        return Value(Kind.SEQUENCE, elements=elements, empty=not elements)

    def _dict(self, node: ast.Dict, env: Env, unit: Unit) -> Value:
        held: list[Value] = []
        for key, element in zip(node.keys, node.values):
            if key is not None:
                self.eval(key, env, unit)
            held.append(self.eval(element, env, unit))
        if held and all(value.kind is Kind.TENSOR for value in held):
            first = held[0]
            if all(first.placement.same_place(value.placement) for value in held[1:]):
                return Value(Kind.BATCH, first.placement)
        return UNKNOWN

    def _subscript(self, node: ast.Subscript, env: Env, unit: Unit) -> Value:
        container = self.eval(node.value, env, unit)
        slices_only = True
        keeps_an_axis = False
        index: Optional[int] = None
        for inner in _subscript_elements(node):
            if type(inner) is ast.Slice or _adds_or_keeps_axes(inner):
                keeps_an_axis = keeps_an_axis or not _is_ellipsis(inner)
                self._children(inner, env, unit)
            else:
                slices_only = False
                self.eval(inner, env, unit)
                number = inner.value if type(inner) is ast.Constant else None
                if type(number) is int:
                    index = number
        if container.kind is Kind.BATCH:
            key = _single_string_key(node)
            if key is not None and _TEXT_KEY.search(key.lower()):
                return UNKNOWN
            return Value(Kind.TENSOR, container.placement)
        if container.kind is Kind.TENSOR:
            # Indexing with numbers alone may leave a 0-dim tensor, which mixes with any
            # device; a slice, a new axis or a list index (`t[[0, 2]]`, `t[[None] * n]`)
            # beside them keeps a dimension (`x[:, 0]`). The list is looked for last: it reads
            # the function's assignments.
            scalar = container.scalar or not (
                slices_only
                or keeps_an_axis
                or any(_lists_indices(inner, unit.function) for inner in _subscript_elements(node))
            )
            return Value(
                Kind.TENSOR,
                container.placement,
                scalar=scalar,
                module_output=container.module_output,
            )
        item = input_item(container)
        if item is not None:
            return item
        if (
            container.elements
            and index is not None
            and -len(container.elements) <= index < len(container.elements)
        ):
            return container.elements[index]
        if container.kind is Kind.SEQUENCE and not container.elements and slices_only is False:
            return container.item or UNKNOWN  # `ts[0]` of `[t.to(d) for t in ts]`
        return UNKNOWN

    def _comprehension(
        self,
        node: Union[ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp],
        env: Env,
        unit: Unit,
    ) -> Value:
        inner_env = dict(env)
        for clause in node.generators:
            iterable = self.eval(clause.iter, inner_env, unit)
            self.bind(clause.target, iterable.item or UNKNOWN, inner_env, unit)
            for condition in clause.ifs:
                self.eval(condition, inner_env, unit)
        if isinstance(node, ast.DictComp):
            self.eval(node.key, inner_env, unit)
            element = self.eval(node.value, inner_env, unit)
            if element.kind is Kind.TENSOR:
                return Value(Kind.BATCH, element.placement)
            return UNKNOWN
        element = self.eval(node.elt, inner_env, unit)
        return Value(Kind.SEQUENCE, item=element) if element is not UNKNOWN else UNKNOWN

    def _named(self, node: ast.NamedExpr, env: Env, unit: Unit) -> Value:
        value = self.eval(node.value, env, unit)
        self.bind(node.target, value, env, unit)
        return value

    def _lambda(self, node: ast.Lambda, env: Env, unit: Unit) -> Value:
        return UNKNOWN

    # -- devices ---------------------------------------------------------------------------

    def device_placement(
        self, node: ast.expr, env: Env, unit: Unit, verb: str
    ) -> Optional[Placement]:
        """Where `.to(node)` or `device=node` puts a tensor; a device variable is a device.
        None where ``node`` holds a helper's `device` its call left at None: no device given."""
        # (in a call's context the recorded value is the function's own analysis's, not this
        # call's: `if device is None: device = torch.device("cpu")` for a `device` left out)
        recorded = self.values.get(node) if self.recording else None
        value = recorded or self.eval(node, env, unit)
        if value.kind is Kind.NONE:
            return None
        if value.where is Where.CPU and value.kind in (Kind.DEVICE_OBJECT, Kind.TENSOR):
            return Placement(Where.CPU, evidence=f"{verb} the CPU", origin=node)
        if value.kind is Kind.TENSOR and value.where is not Where.UNKNOWN:
            return value.placement  # `x.to(y)`: where `y` is
        if value.where is Where.INPUT:
            shown = dotted_name(node)
            named = f"`{shown}`" if shown else "the input's device"
            return Placement(Where.INPUT, evidence=f"{verb} {named}", origin=node)
        if type(node) is ast.Constant and node.value is None:
            return Placement(Where.UNKNOWN)
        if (
            value.kind is Kind.DEVICE_OBJECT
            and value.where is Where.DEVICE
            and value.placement.device
            and self.bound_in_context(node)
        ):
            # A helper's `device` parameter, passed by its caller: the caller's device.
            device = value.placement.device
            return Placement(
                Where.DEVICE, device, f"{verb} `{device}`", value.placement.origin or node
            )
        shown = dotted_name(node) or value.placement.device or self._source(node)
        if "cpu" in shown.lower():
            return Placement(Where.UNKNOWN)  # `self._cpu_device`: named for the CPU, so no GPU
        return Placement(Where.DEVICE, shown, f"{verb} `{shown}`", node)

    def _moved(self, node: ast.Call, method: str, env: Env, unit: Unit) -> Optional[Placement]:
        """The placement a `.to`/`.cuda`/`.cpu` call moves to; None when `.to` keeps the device."""
        if method == "cpu":
            return Placement(Where.CPU, evidence="moved to the CPU with `.cpu()`", origin=node)
        if method == "cuda":
            index = argument(node, 0, "device")
            device = "cuda" if index is None else f"cuda:{self._source(index)}"
            return Placement(Where.DEVICE, device, f"moved with `.cuda()` to `{device}`", node)
        target = argument(node, 0, "device")
        if target is None or converts_dtype(node, self.names):
            return None
        return self.device_placement(target, env, unit, "moved to")  # `.to(None)`: it stays

    # -- calls ----------------------------------------------------------------------------------

    def eval_call(self, node: ast.Call, env: Env, unit: Unit, bare: bool) -> Value:
        func = node.func
        dotted = dotted_name(func)
        qualified = self.names.resolve(dotted)
        value: Value
        imported = imported_value(self.project, node) if self.project is not None else None
        default_changed = self.default_device_changed or unit.default_device_changed
        if imported is not None and imported.kind is Kind.TENSOR and default_changed:
            imported = UNKNOWN  # made on the default device, which the code changes
        followed = (
            followed_argument(self.project, node)
            if imported is None and self.project is not None
            else None
        )
        if imported is not None:
            self._arguments(node, env, unit)  # a class or function of another project file
            value = imported
        elif followed is not None:
            arguments = self._arguments(node, env, unit)
            value = _followed_value(arguments[call_arguments(node).index(followed)])
        elif qualified is not None:
            arguments = self._arguments(node, env, unit)
            value = self._torch_call(node, qualified, arguments, env, unit)
        elif dotted == "self" and self._own_forward(unit) is not None:
            arguments = self._arguments(node, env, unit)
            value = self._forward_call(node, env.get("self", UNKNOWN), arguments, unit)
        elif dotted is not None and dotted in env and env[dotted].kind is not Kind.CALLABLE:
            callee = env[dotted]
            if callee is not UNKNOWN and self.recording:
                self.values[func] = callee
            value = self._call_value(node, callee, self._arguments(node, env, unit))
        elif isinstance(func, ast.Attribute):
            receiver = self.eval(func.value, env, unit)
            arguments = self._arguments(node, env, unit)
            value = self._method(node, func, receiver, arguments, env, unit, bare)
            handed = handed_over(node)
            target = self.functions.get(dotted_name(handed.func) or "") if handed else None
            if handed is not None and target is not None:
                # `pool.submit(run_metrics, clean, estimate)` calls `run_metrics(clean, estimate)`
                self.call_summary(target, handed, arguments[1:], unit)
        elif isinstance(func, ast.Name):
            value = self._local_call(node, func.id, self._arguments(node, env, unit), unit)
            helper = self.functions.get(func.id)
            if helper is not None:
                self._forget_changed_containers(node, helper, env)
        else:
            self.eval(func, env, unit)
            self._arguments(node, env, unit)
            value = UNKNOWN
        if self.recording:
            if value is not UNKNOWN:
                self.values[node] = value
            self.visited(node)
        return value

    def _forget_changed_containers(self, call: ast.Call, helper: FunctionNode, env: Env) -> None:
        """A dict or a list the helper changes in place (`input_cuda(batch)` moving each tensor
        of it) holds, after the call, what the analysis does not follow."""
        changed = self.changed_parameters.get(helper)
        if changed is None:
            changed = self.changed_parameters[helper] = changed_parameters(helper)
        for parameter in changed:
            passed = argument_node(call, helper, parameter)
            name = dotted_name(passed) if passed is not None else None
            if name is not None and name in env:
                env[name] = UNKNOWN

    def _arguments(self, node: ast.Call, env: Env, unit: Unit) -> list[Value]:
        return [self.eval(value, env, unit) for value in call_arguments(node)]

    def _created(
        self, node: ast.Call, qualified: str, env: Env, unit: Unit, inherit: Optional[Value]
    ) -> Value:
        device = keyword_value(node, "device")
        given = None if device is None else self.device_placement(device, env, unit, "created on")
        if device is not None and given is None:
            self.defaulted_devices.add(node)  # `device=device`, the caller's left at None
        into = keyword_value(node, "out")
        placement: Placement
        if given is not None:
            placement = given
        elif into is not None:
            placement = self.eval(into, env, unit).placement  # written into `out=`, where it is
        elif inherit is not None:
            placement = inherit.placement
        elif (
            self.default_device_changed
            or unit.default_device_changed
            or any(keyword.arg is None for keyword in node.keywords)  # `**kwargs` may hold one
        ):
            placement = Placement(Where.UNKNOWN)
        else:
            evidence = f"created on the CPU by `{qualified}(...)`"
            placement = Placement(Where.CPU, evidence=evidence, origin=node)
        passed = call_arguments(node)
        scalar = qualified in SCALAR_CAPABLE_FACTORIES and not (
            passed and _is_list_literal(passed[0])
        )
        scalar = scalar or _zero_dim_shape(node, qualified) or bool(inherit and inherit.scalar)
        return Value(Kind.TENSOR, placement, scalar=scalar)

    def _torch_call(
        self, node: ast.Call, qualified: str, arguments: list[Value], env: Env, unit: Unit
    ) -> Value:
        if qualified == "torch.Tensor" and len(arguments) == 1 and arguments[0].kind is Kind.TENSOR:
            return arguments[0]  # `torch.Tensor(t)` of a tensor is an alias of it, where it is
        copied = _copied_where_it_is(node, qualified, arguments)
        if copied is not None:
            return copied
        if qualified in FACTORIES:
            created = self._created(node, qualified, env, unit, None)
            if (
                created.scalar
                and arguments
                and arguments[0].kind is Kind.SEQUENCE
                and not _zero_dim_shape(node, qualified)
            ):
                return replace(created, scalar=False)  # `torch.tensor(freqs)` of a list
            return created
        if qualified in LIKE_FACTORIES:
            return self._created(node, qualified, env, unit, arguments[0] if arguments else UNKNOWN)
        if qualified == "torch.device":
            first = argument(node, 0, "type")
            if first is None:
                return UNKNOWN
            placement = self.device_placement(first, env, unit, "on") or Placement(Where.UNKNOWN)
            return Value(Kind.DEVICE_OBJECT, placement)
        if qualified == "torch.load":
            location = argument(node, 1, "map_location")
            if location is not None and string_value(location) == "cpu":
                evidence = 'loaded with `map_location="cpu"`'
                return Value(Kind.TENSOR, Placement(Where.CPU, evidence=evidence, origin=node))
            return UNKNOWN
        if qualified in PLACERS:
            return placer(node, qualified)
        if qualified in LOADER_CLASSES or qualified.endswith(".DataLoader"):
            return self._loader(node)
        if qualified == "torch.nn.Parameter" or qualified == "torch.nn.parameter.Parameter":
            # A parameter belongs to a module, which moves it: where it lives is the module's
            # business, whatever its initial value was made on.
            return Value(Kind.TENSOR)
        if is_torch_nn_class(qualified):
            return self._nn_module(node, qualified, env, unit)
        if (
            qualified.startswith(MODULE_FACTORY_PREFIXES)
            and qualified.rpartition(".")[2][:1].islower()
        ):
            return Value(
                Kind.MODULE, Placement(Where.CPU, evidence="created on the CPU", origin=node)
            )
        if qualified == "torch.normal" and arguments and arguments[0].kind is Kind.TENSOR:
            # Given a tensor of means, it samples where they are (given numbers, on the CPU).
            return combine(_operands(arguments[:2]))
        if qualified in ("torch.where", "torch.nonzero"):
            indices = self._where_indices(node, qualified, arguments)
            if indices is not None:
                return indices
        asserted = device_compared(node, qualified)
        if asserted:
            # inside a helper: the caller's CPU `expected` against a tensor on a device
            compared = _values_at(node, arguments, asserted)
            self._operation(node, [as_compared_by_device(value) for value in compared])
            return UNKNOWN
        if qualified in FUNCTIONAL_LOSSES:
            compared = (
                []
                if takes_cpu_targets(qualified)
                else _values_at(node, arguments, loss_operands(node))
            )
            self._operation(node, compared)
            result = combine(compared or arguments[:1])
            return (
                Value(Kind.TENSOR, result.placement, scalar=True)
                if result is not UNKNOWN
                else UNKNOWN
            )
        if (
            qualified in KEEPING_FUNCTIONS
            or qualified in COMBINING_FUNCTIONS
            or qualified.startswith("torch.nn.functional.")
        ):
            # An option written as a string (`indexing="xy"`, `mode="bilinear"`) is no operand,
            # nor a placeholder of no elements (`torch.empty([0])` for an unused weight).
            options = [
                (isinstance(a, ast.Constant) and type(a.value) is str) or no_elements(a)
                for a in call_arguments(node)
            ]
            operands = _operands([v for v, option in zip(arguments, options) if not option])
            # `F.grid_sample(x, grid)`, `F.linear(x, w)`: a functional layer's tensors (its
            # losses aside, read above) all take part in one operation.
            if combines_operands(qualified):
                self._operation(node, operands)
            result = combine(operands)
            name = qualified.rpartition(".")[2]
            if result is not UNKNOWN and name in REDUCTIONS and len(arguments) == 1:
                return Value(Kind.TENSOR, result.placement, scalar=True)
            if result.kind is Kind.TENSOR and name in _JOINING_FUNCTIONS:
                return replace(result, scalar=False)  # stacked 0-dim tensors have a dimension
            return result
        if qualified in _PASS_THROUGH_CALLS:
            return arguments[0] if arguments else UNKNOWN
        if qualified in DEVICE_KEEPING_COLLECTIVES and arguments:
            # (a gather stacks 0-dim tensors into a dimension)
            return replace(arguments[0], scalar=arguments[0].scalar and "gather" not in qualified)
        return UNKNOWN

    def _where_indices(
        self, node: ast.Call, qualified: str, arguments: list[Value]
    ) -> Optional[Value]:
        """`torch.where(cond)`, `torch.nonzero(cond, as_tuple=True)`: a tuple of index tensors,
        one per dimension, where `cond` is."""
        if len(node.args) != 1 or arguments[0].kind is not Kind.TENSOR:
            return None
        as_tuple = _as_tuple(node)
        if (node.keywords and not as_tuple) or (qualified == "torch.nonzero" and not as_tuple):
            return None  # `torch.nonzero(cond)`: one (N, ndim) tensor
        return Value(Kind.SEQUENCE, item=Value(Kind.TENSOR, arguments[0].placement))

    def _loader(self, node: ast.Call) -> Value:
        if keyword_value(node, "collate_fn") is not None:
            return Value(Kind.LOADER)  # a custom collate function may move the batch
        return cpu_loader("from the DataLoader", node)

    def _nn_module(self, node: ast.Call, qualified: str, env: Env, unit: Unit) -> Value:
        created = Placement(Where.CPU, evidence="created on the CPU", origin=node)
        if qualified in WRAPPER_MODULES:
            return Value(Kind.MODULE, scatters=True)
        if is_loss_class(qualified):
            weight: Optional[Value] = None
            for keyword in LOSS_WEIGHT_KEYWORDS:
                passed = keyword_value(node, keyword)
                held = self.values.get(passed) if passed is not None else None
                if held is not None and held.is_cpu_tensor():
                    weight = held
            return Value(
                Kind.MODULE,
                created,
                has_parameters=False,
                is_loss=True,
                cpu_weight=weight,
                cpu_targets=takes_cpu_targets(qualified),
            )
        returns_tensor = returns_one_tensor(qualified)
        if is_parameterless_class(qualified):
            return Value(Kind.MODULE, created, has_parameters=False, returns_tensor=returns_tensor)
        return Value(Kind.MODULE, created, returns_tensor=returns_tensor)

    def _local_call(self, node: ast.Call, name: str, arguments: list[Value], unit: Unit) -> Value:
        if name in ("enumerate", "zip"):
            items = [argument_value.item or UNKNOWN for argument_value in arguments]
            if name == "enumerate":
                items = [SCALAR, items[0] if items else UNKNOWN]
            return Value(Kind.SEQUENCE, item=Value(Kind.SEQUENCE, elements=tuple(items)))
        if name in _PASS_THROUGH_CALLS:
            return arguments[0] if arguments else UNKNOWN
        if self.is_module_class(name):
            created = Placement(Where.CPU, evidence="created on the CPU", origin=node)
            returns_tensor = self.class_returns_tensor(name)
            return Value(Kind.MODULE, created, class_name=name, returns_tensor=returns_tensor)
        function = self.functions.get(name)
        if function is not None:
            return self.call_summary(function, node, arguments, unit)
        self.construct(node, name, arguments)
        return UNKNOWN

    def _call_value(self, node: ast.Call, callee: Value, arguments: list[Value]) -> Value:
        """Calling a value held in a variable: a module, a loss, or something unknown."""
        if callee.scatters:
            return UNKNOWN
        if callee.kind is Kind.MODULE and (callee.is_loss or not callee.has_parameters):
            if callee.is_loss and not callee.cpu_targets:
                self._operation(node, _values_at(node, arguments, loss_operands(node)))
            result = combine(arguments)
            if result is UNKNOWN:
                return UNKNOWN
            return Value(Kind.TENSOR, result.placement, scalar=callee.is_loss)
        if callee.kind not in (Kind.MODULE, Kind.UNKNOWN):
            return UNKNOWN
        if callee.kind is Kind.UNKNOWN and _names_a_class(node.func):
            return UNKNOWN  # `pipeline = pipe_class(vae=vae, ...)`: an object, not a tensor
        on_device = callee.where is Where.DEVICE or (
            # a layer held in a name, or `self(x)` where the file shows no `forward` of its own
            callee.where is Where.INPUT and callee.kind is Kind.MODULE
        )
        if on_device and self.frames and not self.recording:
            self.note_module_input(node, callee, arguments)
        if callee.where in (Where.DEVICE, Where.INPUT, Where.MAYBE_DEVICE):
            shown = self._source(node.func)
            evidence = f"output of `{shown}`, {callee.placement.evidence}".rstrip(", ")
            return Value(
                Kind.TENSOR,
                replace(callee.placement, evidence=evidence),
                module_output=not callee.returns_tensor,
            )
        # A module accepting an input on a device runs on that device, and so is its output;
        # given one that may be on a device (on some paths), its output may be there too. A
        # callable of unknown kind given two tensors a script moved (`metric(output, target)`)
        # may return a number as much as a tensor.
        moved = sum(value.where is Where.DEVICE and not value.scalar for value in arguments)
        unproven = callee.kind is Kind.UNKNOWN and moved >= 2
        for wheres in ((Where.DEVICE, Where.INPUT), (Where.MAYBE_DEVICE,)):
            for argument_value in arguments:
                if argument_value.where in wheres and not argument_value.scalar:
                    placement = argument_value.placement
                    return Value(Kind.TENSOR, placement, module_output=True, unproven=unproven)
        return UNKNOWN

    def _method(
        self,
        node: ast.Call,
        func: ast.Attribute,
        receiver: Value,
        arguments: list[Value],
        env: Env,
        unit: Unit,
        bare: bool,
    ) -> Value:
        method = func.attr
        if receiver.kind is Kind.PLACER:
            placer_name = dotted_name(func.value) or "the accelerator"
            prepared = placer_method(node, receiver, placer_name, arguments)
            if prepared is not None:
                if bare:  # (in `x if c else y` or `a and b`, the call may not run)
                    _rebind_moved_modules(node, prepared, env)
                return prepared
        if method in DEVICE_MOVES:
            return self._move(node, func, method, receiver, env, unit, bare)
        sibling = self._sibling_method(func, unit)
        if sibling is None and receiver.kind is Kind.MODULE and receiver.class_name:
            sibling = self._helper_method(receiver.class_name, method)  # `model.init_hidden(n)`
        if sibling is None and receiver.kind in (Kind.UNKNOWN, Kind.CALLABLE):
            sibling = self._class_level_method(func)  # `Model.post_process(boxes)`
        if sibling is not None:
            result = self.method_call(node, sibling, receiver, arguments, unit)
            if result is not UNKNOWN:
                return result
        elif method == "forward" and receiver.kind in (Kind.MODULE, Kind.UNKNOWN):
            return self._call_value(node, receiver, arguments)  # `model.forward(x)`: a call
        if method in OPERAND_METHODS:
            self._operation(node, [receiver, *_operands(arguments)])
        tensor_like = receiver.kind is Kind.TENSOR or (
            receiver.kind is Kind.UNKNOWN and receiver.where is not Where.UNKNOWN
        )
        if method == "nonzero" and receiver.kind is Kind.TENSOR and _as_tuple(node):
            return Value(Kind.SEQUENCE, item=Value(Kind.TENSOR, receiver.placement))
        if tensor_like and method in PLACEMENT_KEEPING_METHODS:
            reduced = method in REDUCTIONS and not has_arguments(node)
            # `.flatten()` or `.sum()` of a module's (or a metric's) output may still be an
            # array; `.detach()` proves a tensor.
            only_tensors = method in TENSOR_ONLY_ATTRIBUTES
            return Value(
                Kind.TENSOR,
                receiver.placement,
                scalar=receiver.scalar or reduced,
                module_output=receiver.module_output and not only_tensors,
                unproven=receiver.unproven and not only_tensors,
            )
        if tensor_like and method in NEW_METHODS:
            return self._created(
                node, "torch." + method, env, unit, receiver.placed(receiver.placement)
            )
        if tensor_like and method == "type_as" and arguments:
            return Value(Kind.TENSOR, arguments[0].placement, scalar=receiver.scalar)
        if method in HOST_METHODS:
            return SCALAR
        if receiver.kind is Kind.MODULE and method in MODULE_SELF_METHODS:
            return receiver
        if method == "from_pretrained":
            return Value(Kind.MODULE)
        if receiver.kind is Kind.MODULE and method in _PARAMETER_METHODS:
            return self._parameters_of(func, method, receiver, unit)
        if receiver.kind is Kind.SEQUENCE and method == "append" and len(arguments) == 1:
            name = dotted_name(func.value)
            if name is not None and env.get(name) is receiver:
                env[name] = appended(receiver, arguments[0])
            return UNKNOWN
        if receiver.kind is Kind.BATCH and method in ("items", "values"):
            element = Value(Kind.TENSOR, receiver.placement)
            item = (
                Value(Kind.SEQUENCE, elements=(UNKNOWN, element)) if method == "items" else element
            )
            return Value(Kind.SEQUENCE, item=item)
        inside_forward = receiver.kind is Kind.MODULE and receiver.where is Where.INPUT
        module_class = unit.members.modules.get(method) if inside_forward else None
        if module_class is not None:
            return self._member_module_call(node, func, module_class, arguments, unit)
        if inside_forward and method in unit.members.submodules:
            # `self.embedding(positions)`: a layer of the module runs on the module's device.
            layer = Value(
                Kind.MODULE, Placement(Where.INPUT, evidence="a layer of the module, on its device")
            )
            if self.recording:
                self.values[func] = layer
            elif self.frames:
                self.note_module_input(node, layer, arguments)
            evidence = f"output of `self.{method}`, a layer of the module"
            return Value(Kind.TENSOR, Placement(Where.INPUT, evidence=evidence))
        if inside_forward and any(value.where is Where.INPUT for value in arguments):
            # `self.encoder(x)` inside forward: a submodule runs where the module's inputs are.
            return Value(Kind.TENSOR, receiver.placement)
        return UNKNOWN

    def _own_forward(self, unit: Unit) -> Optional[FunctionNode]:
        """The `forward` of the module class whose method ``unit`` is."""
        if unit.function is None or not unit.module_class:
            return None
        return self.sibling_methods.get(unit.function, {}).get("forward")

    def _forward_call(
        self, node: ast.Call, module: Value, arguments: list[Value], unit: Unit
    ) -> Value:
        """`self(x)` in a module's method: its `forward`, analysed with what the call passes
        (which may move its input itself); what it returns, or else a tensor where the module is."""
        forward = self._own_forward(unit)
        assert forward is not None
        result = self.method_call(node, forward, module, arguments, unit)
        if result is not UNKNOWN or module.where is not Where.INPUT:
            return result
        return Value(Kind.TENSOR, module.placement, module_output=True)

    def _member_module_call(
        self,
        node: ast.Call,
        func: ast.Attribute,
        class_name: str,
        arguments: list[Value],
        unit: Unit,
    ) -> Value:
        """`self.pos(steps)`, a module of the file's class `PositionalEncoding`: its `forward`
        runs where the module is, with what the call passes."""
        placement = Placement(
            Where.INPUT, evidence=f"`{self._source(func)}`, a module of the module"
        )
        # (not recorded as a layer: what its `forward` does with the input decides)
        module = Value(Kind.MODULE, placement, class_name=class_name)
        forward = self.methods_of(class_name)["forward"]
        members = self.module_members(class_name)
        result = self.method_call(node, forward, module, arguments, unit, members)
        if result is UNKNOWN or result.where is Where.INPUT:  # (cited as this module's member)
            return Value(Kind.TENSOR, placement) if result is UNKNOWN else result.placed(placement)
        return result

    def module_members(self, name: str) -> ModuleMembers:
        raise NotImplementedError

    def _helper_method(self, class_name: str, method: str) -> Optional[FunctionNode]:
        """A helper method the file's class ``class_name`` defines itself: not `forward`, which
        the module's call runs, nor a special method."""
        if method == "forward" or method.startswith("__"):
            return None
        return self.methods_of(class_name).get(method)

    def methods_of(self, class_name: str) -> Mapping[str, FunctionNode]:
        raise NotImplementedError

    def _class_level_method(self, func: ast.Attribute) -> Optional[FunctionNode]:
        """The static or class method `Cls.name(...)` calls, `Cls` a class of the file."""
        if type(func.value) is not ast.Name:
            return None
        method = self.methods_of(func.value.id).get(func.attr)
        return method if method is not None and is_class_level(method) else None

    def _sibling_method(self, func: ast.Attribute, unit: Unit) -> Optional[FunctionNode]:
        """The method of ``unit``'s class that `self.name(...)` calls, if any."""
        if unit.function is None or not (type(func.value) is ast.Name and func.value.id == "self"):
            return None
        return self.sibling_methods.get(unit.function, {}).get(func.attr)

    def _parameters_of(
        self, func: ast.Attribute, method: str, receiver: Value, unit: Unit
    ) -> Value:
        """`model.parameters()`: tensors where the module is; `self.parameters()` in a module's
        method: on the module's device, wherever its caller moved it."""
        if receiver.where is Where.DEVICE:
            placement = receiver.placement
        elif unit.module_class and type(func.value) is ast.Name and func.value.id == "self":
            placement = Placement(Where.INPUT, evidence="a parameter of the module, on its device")
        else:
            return UNKNOWN
        tensor = Value(Kind.TENSOR, placement)
        if method.startswith("named_"):
            return Value(Kind.SEQUENCE, item=Value(Kind.SEQUENCE, elements=(UNKNOWN, tensor)))
        return Value(Kind.SEQUENCE, item=tensor)

    def _move(
        self,
        node: ast.Call,
        func: ast.Attribute,
        method: str,
        receiver: Value,
        env: Env,
        unit: Unit,
        bare: bool,
    ) -> Value:
        placement = self._moved(node, method, env, unit)
        if placement is None or receiver.scatters:
            return receiver if receiver.kind is not Kind.UNKNOWN else UNKNOWN
        receiver_name = dotted_name(_module_itself(func.value, receiver))
        if receiver_name is not None and receiver.kind in (Kind.UNKNOWN, Kind.BATCH):
            # (a module's `.to()` leaves its plain tensor attributes behind: DEV009's concern)
            _move_attributes(env, receiver_name, placement)
        if receiver.kind is Kind.MODULE or (bare and receiver.kind is Kind.UNKNOWN):
            # Module.to works in place: the name itself now refers to a moved module.
            moved = Value(Kind.MODULE, placement, has_parameters=receiver.has_parameters,
                          is_loss=receiver.is_loss, returns_tensor=receiver.returns_tensor,
                          class_name=receiver.class_name)  # fmt: skip
            if receiver_name is not None:
                env[receiver_name] = moved
            return moved
        if receiver.kind in (Kind.TENSOR, Kind.BATCH):
            return Value(receiver.kind, placement, scalar=receiver.scalar)
        return Value(Kind.UNKNOWN, placement)


def _rebind_moved_modules(call: ast.Call, prepared: Value, env: Env) -> None:
    """`fabric.setup(model, optimizer)` as a statement moves `model` itself (`Module.to` works
    in place): the name refers to a module on the device, though the call's result is dropped."""
    results = prepared.elements if prepared.kind is Kind.SEQUENCE else (prepared,)
    for passed, result in zip(call.args, results):
        if (
            isinstance(passed, ast.Name)
            and result.kind is Kind.MODULE
            and result.where in (Where.DEVICE, Where.MAYBE_DEVICE)
        ):
            env[passed.id] = result


def _names_a_class(func: ast.expr) -> bool:
    """`Pipeline`, `pipe_class`, `model_cls`, `cls`: a name that, by convention, holds a class
    (not `G` or `D`, a GAN's networks)."""
    name = last_name(func)
    camel = name[:1].isupper() and not name.isupper()
    return camel or name == "cls" or name.endswith(("_class", "_cls"))


def _module_itself(node: ast.expr, value: Value) -> ast.expr:
    """`model` in `model.eval().float()`: a module's methods that return the module itself."""
    while (
        value.kind is Kind.MODULE
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MODULE_SELF_METHODS
    ):
        node = node.func.value
    return node


def _move_attributes(env: Env, name: str, placement: Placement) -> None:
    """`data.to(device)` on an object that is no tensor: a graph `Data`, a `BatchEncoding` or a
    class defining `to` moves the tensors it holds, so its tensor attributes move with it."""
    prefix = name + "."
    for key in [key for key in env if key.startswith(prefix)]:
        held = env[key]
        if held.kind is Kind.TENSOR or held.kind is Kind.BATCH:
            env[key] = held.placed(placement)
        elif held.where is not Where.UNKNOWN:
            env[key] = UNKNOWN


_Evaluator = Callable[[CallEvaluator, ast.expr, "Env", "Unit"], Value]
_EVALUATORS: dict[type, _Evaluator] = {
    ast.Name: CallEvaluator._name,  # type: ignore[dict-item]
    ast.Attribute: CallEvaluator._attribute,  # type: ignore[dict-item]
    ast.Constant: CallEvaluator._constant,  # type: ignore[dict-item]
    ast.BinOp: CallEvaluator._binary,  # type: ignore[dict-item]
    ast.UnaryOp: CallEvaluator._unary,  # type: ignore[dict-item]
    ast.Compare: CallEvaluator._comparison,  # type: ignore[dict-item]
    ast.IfExp: CallEvaluator._if_expression,  # type: ignore[dict-item]
    ast.BoolOp: CallEvaluator._bool_operation,  # type: ignore[dict-item]
    ast.Tuple: CallEvaluator._sequence,  # type: ignore[dict-item]
    ast.List: CallEvaluator._sequence,  # type: ignore[dict-item]
    ast.Dict: CallEvaluator._dict,  # type: ignore[dict-item]
    ast.Subscript: CallEvaluator._subscript,  # type: ignore[dict-item]
    ast.ListComp: CallEvaluator._comprehension,  # type: ignore[dict-item]
    ast.GeneratorExp: CallEvaluator._comprehension,  # type: ignore[dict-item]
    ast.SetComp: CallEvaluator._comprehension,  # type: ignore[dict-item]
    ast.DictComp: CallEvaluator._comprehension,  # type: ignore[dict-item]
    ast.NamedExpr: CallEvaluator._named,  # type: ignore[dict-item]
    ast.Lambda: CallEvaluator._lambda,  # type: ignore[dict-item]
}


def _subscript_elements(node: ast.Subscript) -> list[ast.expr]:
    """The indices of `x[i, j]` one by one (`x[i]` has one)."""
    inner = node.slice
    return list(inner.elts) if type(inner) is ast.Tuple else [inner]


def _single_string_key(node: ast.Subscript) -> Optional[str]:
    """The key of `batch["name"]`, when it is one string literal."""
    return string_value(node.slice)


def _copied_where_it_is(node: ast.Call, qualified: str, arguments: list[Value]) -> Optional[Value]:
    """`torch.tensor(t)` of data that may be a tensor off the CPU (a module's input, a moved
    tensor): a copy where `t` is, not a CPU tensor. None where no device says otherwise."""
    if qualified not in _DATA_COPIES or not arguments or keyword_value(node, "device") is not None:
        return None
    data = arguments[0]
    if data.kind not in (Kind.TENSOR, Kind.UNKNOWN) or data.where not in _OFF_THE_CPU:
        return None
    placement = data.placement if data.kind is Kind.TENSOR else Placement(Where.UNKNOWN)
    return Value(Kind.TENSOR, placement, scalar=data.scalar)


def converts_dtype(call: ast.Call, names: ImportMap) -> bool:
    """`x.to(torch.float16)`, `x.to(query.dtype)`: a conversion that keeps the device."""
    target = argument(call, 0, "device")
    if target is None:
        return keyword_value(call, "dtype") is not None  # `x.to(dtype=torch.float16)`
    if isinstance(target, ast.Call):
        # `x.to(torch.get_default_dtype())`, `x.to(torch.promote_types(a, b))`: named by the
        # function that returns it
        target = target.func
    named = dotted_name(target) or ""
    lowered = named.lower()
    resolved = names.resolve(named or None)
    return (
        resolved in DTYPES
        or resolved in _DTYPE_FUNCTIONS
        or "dtype" in lowered
        or bool(_DTYPE_ABBREVIATION.search(lowered))
    )


def _values_at(
    node: ast.Call, arguments: Sequence[Value], chosen: Sequence[ast.expr]
) -> list[Value]:
    """The values of the ``chosen`` arguments of ``node`` (a loss's input and target, an
    assertion's actual and expected), ``arguments`` being those of all of them in order."""
    held = {id(passed): value for passed, value in zip(call_arguments(node), arguments)}
    return [held[id(operand)] for operand in chosen if id(operand) in held]
