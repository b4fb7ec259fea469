"""The expression half of the device-flow interpreter: what each expression evaluates to."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Optional

import libcst as cst

from devlint.analysis.devices import argument, cuda_literal, string_value
from devlint.analysis.names import ImportMap, dotted_name
from devlint.analysis.torch_api import (
    COMBINING_FUNCTIONS,
    DEVICE_MOVES,
    DTYPES,
    FACTORIES,
    FUNCTIONAL_LOSSES,
    LIKE_FACTORIES,
    LOADER_CLASSES,
    LOSS_WEIGHT_KEYWORDS,
    MODULE_FACTORY_PREFIXES,
    MODULE_SELF_METHODS,
    NEW_METHODS,
    PLACEMENT_KEEPING_METHODS,
    REDUCTIONS,
    SCALAR_CAPABLE_FACTORIES,
    WRAPPER_MODULES,
    is_loss_class,
    is_parameterless_class,
    is_torch_nn_class,
    looks_like_loader,
)
from devlint.analysis.values import (
    SCALAR,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    Where,
    combine,
    cpu_loader,
    join,
)
from devlint.traversal import child_nodes

if TYPE_CHECKING:
    from devlint.analysis.flow import Env, FunctionNode, Unit

_PASS_THROUGH_ITERATORS = frozenset(
    {"iter", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm"}
)
_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag", "grad"})
# Keys under which dict batches carry raw data, not tensors: the collated prompts or file names
# of a Hugging Face style dataset are lists of strings.
_TEXT_KEY = re.compile(
    r"prompt|text|caption|path|file|name|url|sentence|string|question|answer|title|^ids?$|_id$"
)


def _source(node: cst.CSTNode) -> str:
    if getattr(node, "lpar", None):
        node = node.with_changes(lpar=(), rpar=())
    text = " ".join(cst.Module(body=()).code_for_node(node).split())
    return text if len(text) <= 50 else text[:47] + "..."


def _operands(arguments: Sequence[Value]) -> list[Value]:
    """Tensor operands of a torch function: the elements of `torch.cat([a, b])` count one by one."""
    operands: list[Value] = []
    for value in arguments:
        if value.kind is Kind.SEQUENCE:
            operands.extend(value.elements or ((value.item,) if value.item else ()))
        else:
            operands.append(value)
    return operands


def _is_list_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.List, cst.Tuple, cst.ListComp))


class CallEvaluator:
    """Evaluates expressions; :class:`~devlint.analysis.flow.DeviceFlow` runs the statements."""

    names: ImportMap
    values: dict[cst.CSTNode, Value]
    recording: bool
    default_device_changed: bool
    functions: dict[str, FunctionNode]

    def is_module_class(self, name: str, seen: Optional[set[str]] = None) -> bool:
        raise NotImplementedError

    def summary(self, function: FunctionNode) -> Value:
        raise NotImplementedError

    def bind(self, target: cst.BaseExpression, value: Value, env: Env, unit: Unit) -> None:
        raise NotImplementedError

    # -- dispatch ----------------------------------------------------------------------

    def eval(self, node: cst.BaseExpression, env: Env, unit: Unit) -> Value:
        evaluate = _EVALUATORS.get(type(node))
        value = (
            evaluate(self, node, env, unit)
            if evaluate is not None
            else self._children(node, env, unit)
        )
        if value is not UNKNOWN and self.recording:
            self.values[node] = value
        return value

    def _children(self, node: cst.CSTNode, env: Env, unit: Unit) -> Value:
        for child in child_nodes(node):
            if isinstance(child, cst.BaseExpression) and not isinstance(child, cst.Lambda):
                self.eval(child, env, unit)
            elif not isinstance(child, cst.Lambda):
                self._children(child, env, unit)
        return UNKNOWN

    # -- simple expressions --------------------------------------------------------------

    def _name(self, node: cst.Name, env: Env, unit: Unit) -> Value:
        return env.get(node.value, UNKNOWN)

    def _attribute(self, node: cst.Attribute, env: Env, unit: Unit) -> Value:
        dotted = dotted_name(node)
        if dotted is not None and dotted in env:
            return env[dotted]
        base = self.eval(node.value, env, unit)
        attribute = node.attr.value
        if base.kind is Kind.TENSOR and attribute in _TENSOR_ATTRIBUTES:
            return Value(Kind.TENSOR, base.placement, scalar=base.scalar)
        if attribute == "device" and base.where is not Where.UNKNOWN and base.kind is Kind.TENSOR:
            return Value(Kind.DEVICE_OBJECT, base.placement)
        if attribute == "device" and base.kind is Kind.MODULE and base.where is Where.INPUT:
            return Value(Kind.DEVICE_OBJECT, base.placement)  # Lightning's `self.device`
        if dotted is not None and looks_like_loader(dotted):
            return cpu_loader(f"from the data loader `{dotted}`", node)
        return UNKNOWN

    def _string(self, node: cst.SimpleString, env: Env, unit: Unit) -> Value:
        if "\\" not in node.value and "cpu" not in node.value and "cuda" not in node.value:
            return UNKNOWN  # no device name in it: no need to evaluate the literal
        value = string_value(node)
        if value == "cpu":
            return Value(Kind.DEVICE_OBJECT, Placement(Where.CPU))
        if value is not None and cuda_literal(node) is not None:
            return Value(Kind.DEVICE_OBJECT, Placement(Where.DEVICE, value))
        return UNKNOWN

    def _number(self, node: cst.BaseExpression, env: Env, unit: Unit) -> Value:
        return SCALAR

    def _binary(self, node: cst.BinaryOperation, env: Env, unit: Unit) -> Value:
        return combine([self.eval(node.left, env, unit), self.eval(node.right, env, unit)])

    def _unary(self, node: cst.UnaryOperation, env: Env, unit: Unit) -> Value:
        operand = self.eval(node.expression, env, unit)
        return UNKNOWN if isinstance(node.operator, cst.Not) else operand

    def _comparison(self, node: cst.Comparison, env: Env, unit: Unit) -> Value:
        operands = [self.eval(node.left, env, unit)]
        operands.extend(self.eval(target.comparator, env, unit) for target in node.comparisons)
        if any(operand.kind is Kind.TENSOR for operand in operands):
            return combine(operands)
        return UNKNOWN

    def _if_expression(self, node: cst.IfExp, env: Env, unit: Unit) -> Value:
        self.eval(node.test, env, unit)
        return join(self.eval(node.body, env, unit), self.eval(node.orelse, env, unit))

    def _sequence(self, node: cst.BaseExpression, env: Env, unit: Unit) -> Value:
        elements = tuple(
            self.eval(element.value, env, unit)
            for element in node.elements  # type: ignore[attr-defined]
        )
        if any(isinstance(e, cst.StarredElement) for e in node.elements):  # type: ignore[attr-defined]
            return UNKNOWN
        return Value(Kind.SEQUENCE, elements=elements)

    def _dict(self, node: cst.Dict, env: Env, unit: Unit) -> Value:
        held: list[Value] = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.eval(element.key, env, unit)
            held.append(self.eval(element.value, env, unit))
        if held and all(value.kind is Kind.TENSOR for value in held):
            first = held[0]
            if all(first.placement.same_place(value.placement) for value in held[1:]):
                return Value(Kind.BATCH, first.placement)
        return UNKNOWN

    def _subscript(self, node: cst.Subscript, env: Env, unit: Unit) -> Value:
        container = self.eval(node.value, env, unit)
        slices_only = True
        index: Optional[int] = None
        for element in node.slice:
            inner = element.slice
            if isinstance(inner, cst.Index):
                slices_only = False
                self.eval(inner.value, env, unit)
                if isinstance(inner.value, cst.Integer):
                    index = int(inner.value.value, 0)
            else:
                self._children(inner, env, unit)
        if container.kind is Kind.BATCH:
            key = _single_string_key(node)
            if key is not None and _TEXT_KEY.search(key.lower()):
                return UNKNOWN
            return Value(Kind.TENSOR, container.placement)
        if container.kind is Kind.TENSOR:
            # Indexing with a number may leave a 0-dim tensor, which mixes with any device.
            return Value(
                Kind.TENSOR, container.placement, scalar=container.scalar or not slices_only
            )
        if (
            container.elements
            and index is not None
            and -len(container.elements) <= index < len(container.elements)
        ):
            return container.elements[index]
        return UNKNOWN

    def _comprehension(self, node: cst.BaseExpression, env: Env, unit: Unit) -> Value:
        inner_env = dict(env)
        clause: Optional[cst.CompFor] = node.for_in  # type: ignore[attr-defined]
        while clause is not None:
            iterable = self.eval(clause.iter, inner_env, unit)
            self.bind(clause.target, iterable.item or UNKNOWN, inner_env, unit)
            for condition in clause.ifs:
                self.eval(condition.test, inner_env, unit)
            clause = clause.inner_for_in
        if isinstance(node, cst.DictComp):
            self.eval(node.key, inner_env, unit)
            element = self.eval(node.value, inner_env, unit)
            if element.kind is Kind.TENSOR:
                return Value(Kind.BATCH, element.placement)
            return UNKNOWN
        element = self.eval(node.elt, inner_env, unit)  # type: ignore[attr-defined]
        return Value(Kind.SEQUENCE, item=element) if element is not UNKNOWN else UNKNOWN

    def _named(self, node: cst.NamedExpr, env: Env, unit: Unit) -> Value:
        value = self.eval(node.value, env, unit)
        self.bind(node.target, value, env, unit)
        return value

    def _lambda(self, node: cst.Lambda, env: Env, unit: Unit) -> Value:
        return UNKNOWN

    # -- devices ---------------------------------------------------------------------------

    def device_placement(
        self, node: cst.BaseExpression, env: Env, unit: Unit, verb: str
    ) -> Placement:
        """Where `.to(node)` or `device=node` puts a tensor; a device variable is a device."""
        value = self.values.get(node) or self.eval(node, env, unit)
        if value.where is Where.CPU and value.kind in (Kind.DEVICE_OBJECT, Kind.TENSOR):
            return Placement(Where.CPU, evidence=f"{verb} the CPU", origin=node)
        if value.kind is Kind.TENSOR and value.where is not Where.UNKNOWN:
            return value.placement  # `x.to(y)`: where `y` is
        if value.where is Where.INPUT:
            return Placement(Where.INPUT, evidence=f"{verb} the input's device", origin=node)
        if isinstance(node, cst.Name) and node.value == "None":
            return Placement(Where.UNKNOWN)
        shown = dotted_name(node) or value.placement.device or _source(node)
        if "cpu" in shown.lower():
            return Placement(Where.UNKNOWN)  # `self._cpu_device`: named for the CPU, so no GPU
        return Placement(Where.DEVICE, shown, f"{verb} `{shown}`", node)

    def _moved(self, node: cst.Call, method: str, env: Env, unit: Unit) -> Optional[Placement]:
        """The placement a `.to`/`.cuda`/`.cpu` call moves to; None when `.to` keeps the device."""
        if method == "cpu":
            return Placement(Where.CPU, evidence="moved to the CPU with `.cpu()`", origin=node)
        if method == "cuda":
            index = argument(node, 0, "device")
            device = "cuda" if index is None else f"cuda:{_source(index.value)}"
            return Placement(Where.DEVICE, device, f"moved with `.cuda()` to `{device}`", node)
        target = argument(node, 0, "device")
        if target is None or converts_dtype(node, self.names):
            return None
        return self.device_placement(target.value, env, unit, "moved to")

    # -- calls ----------------------------------------------------------------------------------

    def _call(self, node: cst.Call, env: Env, unit: Unit) -> Value:
        return self.eval_call(node, env, unit, bare=False)

    def eval_call(self, node: cst.Call, env: Env, unit: Unit, bare: bool) -> Value:
        func = node.func
        qualified = self.names.qualified_name(func)
        dotted = dotted_name(func)
        value: Value
        if qualified is not None:
            arguments = self._arguments(node, env, unit)
            value = self._torch_call(node, qualified, arguments, env, unit)
        elif dotted is not None and dotted in env and env[dotted].kind is not Kind.CALLABLE:
            callee = env[dotted]
            if callee is not UNKNOWN and self.recording:
                self.values[func] = callee
            value = self._call_value(node, callee, self._arguments(node, env, unit))
        elif isinstance(func, cst.Attribute):
            receiver = self.eval(func.value, env, unit)
            arguments = self._arguments(node, env, unit)
            value = self._method(node, func, receiver, arguments, env, unit, bare)
        elif isinstance(func, cst.Name):
            value = self._local_call(node, func.value, self._arguments(node, env, unit))
        else:
            self.eval(func, env, unit)
            self._arguments(node, env, unit)
            value = UNKNOWN
        if value is not UNKNOWN and self.recording:
            self.values[node] = value
        return value

    def _arguments(self, node: cst.Call, env: Env, unit: Unit) -> list[Value]:
        return [self.eval(arg.value, env, unit) for arg in node.args]

    def _keyword(self, node: cst.Call, name: str) -> Optional[cst.Arg]:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        return None

    def _created(
        self, node: cst.Call, qualified: str, env: Env, unit: Unit, inherit: Optional[Value]
    ) -> Value:
        device = self._keyword(node, "device")
        if device is not None:
            placement = self.device_placement(device.value, env, unit, "created on")
        elif inherit is not None:
            placement = inherit.placement
        elif self.default_device_changed or unit.default_device_changed:
            placement = Placement(Where.UNKNOWN)
        else:
            evidence = f"created on the CPU by `{qualified}(...)`"
            placement = Placement(Where.CPU, evidence=evidence, origin=node)
        scalar = qualified in SCALAR_CAPABLE_FACTORIES and not (
            node.args and _is_list_literal(node.args[0].value)
        )
        return Value(Kind.TENSOR, placement, scalar=scalar or bool(inherit and inherit.scalar))

    def _torch_call(
        self, node: cst.Call, qualified: str, arguments: list[Value], env: Env, unit: Unit
    ) -> Value:
        if qualified in FACTORIES:
            return self._created(node, qualified, env, unit, None)
        if qualified in LIKE_FACTORIES:
            return self._created(node, qualified, env, unit, arguments[0] if arguments else UNKNOWN)
        if qualified == "torch.device":
            first = argument(node, 0, "type")
            if first is None:
                return UNKNOWN
            return Value(Kind.DEVICE_OBJECT, self.device_placement(first.value, env, unit, "on"))
        if qualified == "torch.load":
            location = argument(node, 1, "map_location")
            if location is not None and string_value(location.value) == "cpu":
                evidence = 'loaded with `map_location="cpu"`'
                return Value(Kind.TENSOR, Placement(Where.CPU, evidence=evidence, origin=node))
            return UNKNOWN
        if qualified in LOADER_CLASSES or qualified.endswith(".DataLoader"):
            return self._loader(node)
        if qualified == "torch.nn.Parameter" or qualified == "torch.nn.parameter.Parameter":
            return Value(Kind.TENSOR, arguments[0].placement) if arguments else UNKNOWN
        if is_torch_nn_class(qualified):
            return self._nn_module(node, qualified, env, unit)
        if (
            qualified.startswith(MODULE_FACTORY_PREFIXES)
            and qualified.rpartition(".")[2][:1].islower()
        ):
            return Value(
                Kind.MODULE, Placement(Where.CPU, evidence="created on the CPU", origin=node)
            )
        if qualified in FUNCTIONAL_LOSSES:
            result = combine(arguments[:2])
            return (
                Value(Kind.TENSOR, result.placement, scalar=True)
                if result is not UNKNOWN
                else UNKNOWN
            )
        if qualified in COMBINING_FUNCTIONS or qualified.startswith("torch.nn.functional."):
            result = combine(_operands(arguments))
            if (
                result is not UNKNOWN
                and qualified.rpartition(".")[2] in REDUCTIONS
                and len(arguments) == 1
            ):
                return Value(Kind.TENSOR, result.placement, scalar=True)
            return result
        if qualified in _PASS_THROUGH_ITERATORS:
            return arguments[0] if arguments else UNKNOWN
        return UNKNOWN

    def _loader(self, node: cst.Call) -> Value:
        if self._keyword(node, "collate_fn") is not None:
            return Value(Kind.LOADER)  # a custom collate function may move the batch
        return cpu_loader("from the DataLoader", node)

    def _nn_module(self, node: cst.Call, qualified: str, env: Env, unit: Unit) -> Value:
        created = Placement(Where.CPU, evidence="created on the CPU", origin=node)
        if qualified in WRAPPER_MODULES:
            return Value(Kind.MODULE, scatters=True)
        if is_loss_class(qualified):
            weight: Optional[Value] = None
            for keyword in LOSS_WEIGHT_KEYWORDS:
                arg = self._keyword(node, keyword)
                held = self.values.get(arg.value) if arg is not None else None
                if held is not None and held.is_cpu_tensor():
                    weight = held
            return Value(
                Kind.MODULE, created, has_parameters=False, is_loss=True, cpu_weight=weight
            )
        if is_parameterless_class(qualified):
            return Value(Kind.MODULE, created, has_parameters=False)
        return Value(Kind.MODULE, created)

    def _local_call(self, node: cst.Call, name: str, arguments: list[Value]) -> Value:
        if name in ("enumerate", "zip"):
            items = [argument_value.item or UNKNOWN for argument_value in arguments]
            if name == "enumerate":
                items = [SCALAR, items[0] if items else UNKNOWN]
            return Value(Kind.SEQUENCE, item=Value(Kind.SEQUENCE, elements=tuple(items)))
        if name in _PASS_THROUGH_ITERATORS:
            return arguments[0] if arguments else UNKNOWN
        if self.is_module_class(name):
            return Value(
                Kind.MODULE, Placement(Where.CPU, evidence="created on the CPU", origin=node)
            )
        function = self.functions.get(name)
        if function is not None:
            return self.summary(function)
        return UNKNOWN

    def _call_value(self, node: cst.Call, callee: Value, arguments: list[Value]) -> Value:
        """Calling a value held in a variable: a module, a loss, or something unknown."""
        if callee.scatters:
            return UNKNOWN
        if callee.kind is Kind.MODULE and (callee.is_loss or not callee.has_parameters):
            result = combine(arguments)
            if result is UNKNOWN:
                return UNKNOWN
            return Value(Kind.TENSOR, result.placement, scalar=callee.is_loss)
        if callee.kind not in (Kind.MODULE, Kind.UNKNOWN):
            return UNKNOWN
        if callee.where in (Where.DEVICE, Where.INPUT):
            shown = _source(node.func)
            evidence = f"output of `{shown}`, {callee.placement.evidence}".rstrip(", ")
            return Value(
                Kind.TENSOR,
                Placement(callee.where, callee.placement.device, evidence, callee.placement.origin),
            )
        # A module accepting an input on a device runs on that device, and so is its output.
        for argument_value in arguments:
            if argument_value.where in (Where.DEVICE, Where.INPUT) and not argument_value.scalar:
                return Value(Kind.TENSOR, argument_value.placement)
        return UNKNOWN

    def _method(
        self,
        node: cst.Call,
        func: cst.Attribute,
        receiver: Value,
        arguments: list[Value],
        env: Env,
        unit: Unit,
        bare: bool,
    ) -> Value:
        method = func.attr.value
        if method in DEVICE_MOVES:
            return self._move(node, func, method, receiver, env, unit, bare)
        tensor_like = receiver.kind is Kind.TENSOR or (
            receiver.kind is Kind.UNKNOWN and receiver.where is not Where.UNKNOWN
        )
        if tensor_like and method in PLACEMENT_KEEPING_METHODS:
            reduced = method in REDUCTIONS and not node.args
            return Value(Kind.TENSOR, receiver.placement, scalar=receiver.scalar or reduced)
        if tensor_like and method in NEW_METHODS:
            return self._created(
                node, "torch." + method, env, unit, receiver.placed(receiver.placement)
            )
        if tensor_like and method == "type_as" and arguments:
            return Value(Kind.TENSOR, arguments[0].placement, scalar=receiver.scalar)
        if method in ("item", "tolist"):
            return SCALAR
        if receiver.kind is Kind.MODULE and method in MODULE_SELF_METHODS:
            return receiver
        if method == "from_pretrained":
            return Value(Kind.MODULE)
        if receiver.kind is Kind.BATCH and method in ("items", "values"):
            element = Value(Kind.TENSOR, receiver.placement)
            item = (
                Value(Kind.SEQUENCE, elements=(UNKNOWN, element)) if method == "items" else element
            )
            return Value(Kind.SEQUENCE, item=item)
        inside_forward = receiver.kind is Kind.MODULE and receiver.where is Where.INPUT
        if inside_forward and any(value.where is Where.INPUT for value in arguments):
            # `self.encoder(x)` inside forward: a submodule runs where the module's inputs are.
            return Value(Kind.TENSOR, receiver.placement)
        return UNKNOWN

    def _move(
        self,
        node: cst.Call,
        func: cst.Attribute,
        method: str,
        receiver: Value,
        env: Env,
        unit: Unit,
        bare: bool,
    ) -> Value:
        placement = self._moved(node, method, env, unit)
        if placement is None or receiver.scatters:
            return receiver if receiver.kind is not Kind.UNKNOWN else UNKNOWN
        receiver_name = dotted_name(func.value)
        if receiver.kind is Kind.MODULE or (bare and receiver.kind is Kind.UNKNOWN):
            # Module.to works in place: the name itself now refers to a moved module.
            moved = Value(Kind.MODULE, placement, has_parameters=receiver.has_parameters,
                          is_loss=receiver.is_loss)  # fmt: skip
            if receiver_name is not None:
                env[receiver_name] = moved
            return moved
        if receiver.kind in (Kind.TENSOR, Kind.BATCH):
            return Value(receiver.kind, placement, scalar=receiver.scalar)
        return Value(Kind.UNKNOWN, placement)


_Evaluator = Callable[[CallEvaluator, cst.BaseExpression, "Env", "Unit"], Value]
_EVALUATORS: dict[type, _Evaluator] = {
    cst.Name: CallEvaluator._name,  # type: ignore[dict-item]
    cst.Attribute: CallEvaluator._attribute,  # type: ignore[dict-item]
    cst.SimpleString: CallEvaluator._string,  # type: ignore[dict-item]
    cst.Integer: CallEvaluator._number,
    cst.Float: CallEvaluator._number,
    cst.Imaginary: CallEvaluator._number,
    cst.BinaryOperation: CallEvaluator._binary,  # type: ignore[dict-item]
    cst.UnaryOperation: CallEvaluator._unary,  # type: ignore[dict-item]
    cst.Comparison: CallEvaluator._comparison,  # type: ignore[dict-item]
    cst.IfExp: CallEvaluator._if_expression,  # type: ignore[dict-item]
    cst.Tuple: CallEvaluator._sequence,
    cst.List: CallEvaluator._sequence,
    cst.Dict: CallEvaluator._dict,  # type: ignore[dict-item]
    cst.Subscript: CallEvaluator._subscript,  # type: ignore[dict-item]
    cst.ListComp: CallEvaluator._comprehension,
    cst.GeneratorExp: CallEvaluator._comprehension,
    cst.SetComp: CallEvaluator._comprehension,
    cst.DictComp: CallEvaluator._comprehension,
    cst.NamedExpr: CallEvaluator._named,  # type: ignore[dict-item]
    cst.Lambda: CallEvaluator._lambda,  # type: ignore[dict-item]
    cst.Call: CallEvaluator._call,  # type: ignore[dict-item]
}


def _single_string_key(node: cst.Subscript) -> Optional[str]:
    """The key of `batch["name"]`, when it is one string literal."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    return string_value(node.slice[0].slice.value)


def converts_dtype(call: cst.Call, names: ImportMap) -> bool:
    """`x.to(torch.float16)`, `x.to(query.dtype)`: a conversion that keeps the device."""
    target = argument(call, 0, "device")
    if target is None:
        return False
    named = dotted_name(target.value) or ""
    return names.qualified_name(target.value) in DTYPES or "dtype" in named.lower()
