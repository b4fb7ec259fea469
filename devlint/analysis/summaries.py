"""What other files need to know of one file: the summary of its classes and functions.

A summary is computed from CPython's tree of the file alone, cheaply (no flow analysis), and is
plain JSON, so that it can be cached by the file's content and compared by digest: a file whose
summary did not change does not invalidate the files that import it.

- a class: its bases (qualified where an import names them), whether it is an ``nn.Module``
  (through torch or a class of the same file; bases in other project files are followed by
  :mod:`devlint.analysis.project`), whether it defines ``to()``, and the attributes its
  ``__init__`` sets to a tensor made on the CPU (``self.mask = torch.ones(...)``), and the
  parameters and buffers it registers (which live where the module does);
- a function: its parameters, what it returns when that is certain (a tensor made on the CPU,
  a module made on the CPU), which parameters it passes to a call of another parameter
  (``def score(net, x): return net(x)``: ``x`` runs where ``net`` lives), and which pairs of
  parameters one operation combines (``def blend(a, b): return a * 0.5 + b * 0.5``: ``a`` and
  ``b`` must share a device), and which parameter's device the result stays on
  (``def db_to_amplitude(x): return 10 ** (x / 20)``), in a function that never looks at or
  changes a device.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Optional

from devlint.analysis.contexts import none_defaulted
from devlint.analysis.parameters import FunctionNode, module_tensors_set_in
from devlint.analysis.syntax import dotted_name, keyword_value, own_nodes, parameters_of
from devlint.analysis.torch_api import (
    COMBINING_FUNCTIONS,
    DEVICE_MOVES,
    FACTORIES,
    FUNCTIONAL_LOSSES,
    KEEPING_FUNCTIONS,
    MODULE_BASES,
    OPERAND_METHODS,
    PLACEMENT_KEEPING_METHODS,
    REDUCTIONS,
    SCALAR_CAPABLE_FACTORIES,
    combines_operands,
    is_parameterless_class,
    is_torch_nn_class,
    loss_operands,
    takes_cpu_targets,
)

Summary = dict[str, Any]
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMBINING_NAMES = frozenset(
    {"cat", "stack", "concat", *(name.rpartition(".")[2] for name in COMBINING_FUNCTIONS)}
)
_ELEMENTWISE_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_SUSPENDING = (ast.Yield, ast.YieldFrom, ast.Await)
# Reads of a tensor's device: code that reads one may align its operands itself.
_DEVICE_AWARE = frozenset({"device", "is_cuda", "get_device", "type_as", "type"})
FORMAT = 8
# The keywords a torch function takes its tensors by (`F.conv1d(input=x, weight=w)`).
_TENSOR_KEYWORDS = frozenset({"input", "other", "weight", "bias", "grid"})


def summary_digest(summary: Summary) -> str:
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def imported_names(tree: ast.Module) -> dict[str, tuple[int, str]]:
    """Module-level imports: local name -> (relative level, dotted target). `import a.b` binds
    `a` to `a`; `from .m import x as y` binds `y` to (1, "m.x")."""
    bound: dict[str, tuple[int, str]] = {}
    for statement in _module_statements(tree.body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname is not None:
                    bound[alias.asname] = (0, alias.name)
                else:
                    top = alias.name.split(".", 1)[0]
                    bound[top] = (0, top)
        elif isinstance(statement, ast.ImportFrom):
            module = statement.module or ""
            for alias in statement.names:
                if alias.name != "*":
                    target = f"{module}.{alias.name}" if module else alias.name
                    bound[alias.asname or alias.name] = (statement.level, target)
    return bound


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for statement in body:
        yield statement
        if isinstance(statement, ast.If):
            yield from _module_statements([*statement.body, *statement.orelse])
        elif isinstance(statement, ast.Try):
            handlers = [inner for handler in statement.handlers for inner in handler.body]
            yield from _module_statements([*statement.body, *handlers, *statement.orelse])


class _Summariser:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.imports = imported_names(tree)
        self.classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}

    def qualified(self, node: ast.AST) -> str:
        """A dotted name with its imported head replaced: `nn.Module` -> `torch.nn.Module`;
        relative imports keep their dots (`.model.Net`)."""
        dotted = dotted_name(node) or ""
        head, _, rest = dotted.partition(".")
        bound = self.imports.get(head)
        if bound is None:
            return dotted
        level, target = bound
        full = f"{target}.{rest}" if rest else target
        return "." * level + full

    def is_module(self, name: str, seen: frozenset[str] = frozenset()) -> Optional[bool]:
        """True: derives from nn.Module; None: a base is outside this file and torch."""
        facts = self.classes.get(name)
        if facts is None or name in seen:
            return False
        unknown = False
        for base in facts.bases:
            qualified = self.qualified(base)
            if qualified in MODULE_BASES or is_torch_nn_class(qualified):
                return True
            if qualified in self.classes:
                inner = self.is_module(qualified, seen | {name})
                if inner:
                    return True
                unknown = unknown or inner is None
            elif qualified not in ("object", "") and not qualified.startswith("torch."):
                unknown = True
        return None if unknown else False

    def makes_cpu_tensor(self, value: Optional[ast.expr]) -> bool:
        """A factory call without `device=` (`torch.zeros(n)`), or a method chain on one."""
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            if self.qualified(value.func) in FACTORIES:
                break
            if value.func.attr in ("to", "cuda", "type_as", "type"):
                return False
            value = value.func.value
        if not isinstance(value, ast.Call):
            return False
        qualified = self.qualified(value.func)
        if qualified not in FACTORIES or keyword_value(value, "device") is not None:
            return False
        if any(keyword.arg is None for keyword in value.keywords):
            return False  # `**kwargs` may hold a device
        if qualified in SCALAR_CAPABLE_FACTORIES:
            return bool(value.args) and isinstance(value.args[0], (ast.List, ast.Tuple))
        return True

    def makes_module(self, value: Optional[ast.expr]) -> bool:
        if not isinstance(value, ast.Call):
            return False
        qualified = self.qualified(value.func)
        if is_torch_nn_class(qualified):
            return not is_parameterless_class(qualified)
        return qualified in self.classes and bool(self.is_module(qualified))

    def summarise_class(self, node: ast.ClassDef) -> Summary:
        methods = {s.name: s for s in node.body if isinstance(s, _FUNCTIONS)}
        init = methods.get("__init__")
        attributes = sorted(self._cpu_attributes(init, methods)) if init is not None else []
        module = self.is_module(node.name)
        tensors = module_tensors_set_in(init, self.qualified) if init is not None else {}
        return {
            "bases": [self.qualified(base) for base in node.bases],
            "module": module,
            "defines_to": "to" in methods or "_apply" in methods,
            "cpu_attributes": attributes,
            "tensors": dict(sorted(tensors.items())),
        }

    def _cpu_attributes(self, init: FunctionNode, methods: dict[str, FunctionNode]) -> set[str]:
        found: set[str] = set()
        for statement in init.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = dotted_name(statement.targets[0]) or ""
                on_self = target.count(".") == 1 and target.startswith("self.")
                if on_self and self.makes_cpu_tensor(statement.value):
                    found.add(target[len("self.") :])
        if not found:
            return found
        for method in methods.values():
            for node in ast.walk(method):
                if isinstance(node, ast.Assign) and method is not init:
                    for assigned in node.targets:
                        found.discard((dotted_name(assigned) or "").removeprefix("self."))
        return found

    def summarise_function(self, node: FunctionNode) -> Summary:
        arguments = node.args
        parameters = [p.arg for p in (*arguments.posonlyargs, *arguments.args)]
        keywords = [p.arg for p in arguments.kwonlyargs]
        # One walk of the body: what it returns, the names it assigns, the calls of names.
        returns: list[Optional[ast.expr]] = []
        assigned: set[str] = set()
        calls: list[ast.Call] = []
        nodes = list(own_nodes(node))
        aligns_devices = False  # it reads or moves a device: it may align its tensors itself
        for inner in nodes:
            kind = type(inner)
            if kind is ast.Return:
                returns.append(inner.value)  # type: ignore[attr-defined]
            elif kind is ast.Name:
                if type(inner.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    assigned.add(inner.id)  # type: ignore[attr-defined]
            elif kind is ast.Call and type(inner.func) is ast.Name:  # type: ignore[attr-defined]
                calls.append(inner)  # type: ignore[arg-type]
            elif kind is ast.Attribute or kind is ast.keyword:
                aligns_devices = aligns_devices or _handles_devices(inner)
        result = None
        if returns and all(self.makes_cpu_tensor(value) for value in returns):
            result = "cpu_tensor"
        elif returns and all(self.makes_module(value) for value in returns):
            result = "cpu_module"
        assigned -= _rebound_in_place(nodes, assigned & {*parameters, *keywords}, self.qualified)
        usable = {*parameters, *keywords} - assigned
        left_none = None
        if result is None and returns:
            left_none = _device_parameter(node, nodes, usable, self.qualified)
        aliases = {} if aligns_devices or not usable else _parameter_aliases(nodes, usable)
        return {
            "parameters": parameters,
            "keywords": keywords,
            "returns": result,
            "feeds": _feeds(calls, usable),
            "mixes": _mixes(nodes, aliases, self.qualified) if len(usable) > 1 else [],
            "follows": _follows(node, nodes, returns, aliases) if aliases else None,
            "cpu_unless": left_none,
        }


def _device_parameter(
    function: FunctionNode,
    nodes: list[ast.AST],
    usable: set[str],
    qualified: Callable[[ast.AST], str],
) -> Optional[str]:
    """The parameter `device=None` whose omission leaves every tensor the function makes on the
    CPU (`create_meshgrid(h, w, device=None)`): a function of no tensor, whose torch factories
    all pass it (or nothing) as `device=`, that calls nothing but torch and never moves a
    tensor. None where it is not such a function."""
    left_none = none_defaulted(function) & usable
    every = parameters_of(function)
    if not left_none or function.decorator_list or any(_names_tensor(p.annotation) for p in every):
        return None
    if any(isinstance(node, _SUSPENDING) for node in nodes):
        return None
    made = _MadeHere(nodes, qualified)
    returned = [node.value for node in nodes if isinstance(node, ast.Return)]
    if not returned or not all(made.tensor(value) for value in returned):
        return None  # what it returns is not only what its factories made
    passed: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        call = node
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in (*DEVICE_MOVES, "type_as", "type"):
            return None
        name = qualified(func)
        if isinstance(func, ast.Name) and not name.startswith("torch."):
            if name not in _PURE_BUILTINS:
                return None
            continue
        if name in FACTORIES:
            device = keyword_value(call, "device")
            if device is None:
                continue
            if not (isinstance(device, ast.Name) and device.id in left_none):
                return None
            passed.add(device.id)
    return passed.pop() if len(passed) == 1 else None


class _MadeHere:
    """Whether an expression of a function is a tensor its own factories made: a factory call,
    what a torch function or a placement-keeping method makes of such tensors (and numbers),
    an index of one, or a local assigned once such a tensor."""

    def __init__(self, nodes: list[ast.AST], qualified: Callable[[ast.AST], str]) -> None:
        self.qualified = qualified
        assigned: dict[str, list[ast.expr]] = {}
        for node in nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    key = target.id if isinstance(target, ast.Name) else ""
                    assigned.setdefault(key, []).append(node.value)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
                target = node.target
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(target)  # no single value
        self.assigned = assigned

    def tensor(self, node: Optional[ast.expr], depth: int = 0) -> bool:
        if node is None or depth > 8:
            return False
        if isinstance(node, ast.Name):
            values = self.assigned.get(node.id, [])
            return len(values) == 1 and self.tensor(values[0], depth + 1)
        if isinstance(node, ast.Subscript):  # (an index may leave a 0-dim tensor)
            return _slices_only(node.slice) and self.tensor(node.value, depth + 1)
        if isinstance(node, ast.BinOp):
            sides = (node.left, node.right)
            return any(self.tensor(side, depth + 1) for side in sides) and all(
                isinstance(side, ast.Constant) or self.tensor(side, depth + 1) for side in sides
            )
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        name = self.qualified(func)
        if name in SCALAR_CAPABLE_FACTORIES:  # `torch.tensor(2.0)` is 0-dim: it mixes anywhere
            return bool(node.args) and isinstance(node.args[0], (ast.List, ast.Tuple))
        if name in FACTORIES:
            return True
        if name in KEEPING_FUNCTIONS:
            return bool(node.args) and all(self._operand(arg, depth) for arg in node.args)
        if isinstance(func, ast.Attribute) and func.attr in PLACEMENT_KEEPING_METHODS:
            return func.attr not in REDUCTIONS and self.tensor(func.value, depth + 1)
        return False

    def _operand(self, node: ast.expr, depth: int) -> bool:
        if isinstance(node, (ast.List, ast.Tuple)):
            return bool(node.elts) and all(self._operand(item, depth) for item in node.elts)
        return isinstance(node, ast.Constant) or self.tensor(node, depth + 1)


def _names_tensor(annotation: Optional[ast.expr]) -> bool:
    return annotation is not None and "Tensor" in ast.unparse(annotation)


_PURE_BUILTINS = frozenset("int float bool len range min max abs round tuple list".split())


def _feeds(calls: list[ast.Call], usable: set[str]) -> list[list[str]]:
    """[input, module] pairs: the function calls parameter `module` with parameter `input`
    unchanged (`net(x)`); ``usable``: the parameters the function never reassigns."""
    pairs: set[tuple[str, str]] = set()
    for call in calls:
        module = call.func.id  # type: ignore[attr-defined]
        if module not in usable:
            continue
        for passed in call.args:
            if type(passed) is ast.Name and passed.id in usable and passed.id != module:
                pairs.add((passed.id, module))
    return sorted([list(pair) for pair in pairs])


def _mixes(
    nodes: list[ast.AST], aliases: dict[str, str], qualified: Callable[[ast.AST], str]
) -> list[list[Any]]:
    """[first, second, line]: an operation of the function (of ``nodes``) combines tensors that
    stay where parameters `first` and `second` are (`a * 0.5 + b`, `torch.cat([a, b])`,
    `a.mm(b)`), at ``line``. ``aliases``: the parameters and the locals standing for one; none
    in a function that reads a device or moves a tensor, which may align them itself."""
    found: dict[tuple[str, str], int] = {}
    if not aliases:
        return []
    for node in nodes:
        operands = [_parameters_in(operand, aliases) for operand in _operands(node, qualified)]
        for index, roots in enumerate(operands):
            for others in operands[index + 1 :]:
                for pair in {(min(a, b), max(a, b)) for a in roots for b in others if a != b}:
                    line = node.lineno  # type: ignore[attr-defined]
                    found[pair] = min(line, found.get(pair, line))
    return sorted([first, second, line] for (first, second), line in found.items())


def _follows(
    function: FunctionNode,
    nodes: list[ast.AST],
    returns: list[Optional[ast.expr]],
    aliases: dict[str, str],
) -> Optional[str]:
    """The parameter whose device every returned tensor stays on (`def db_to_amplitude(x):
    return 10 ** (x / 20)`); else None. ``aliases`` as for :func:`_mixes`."""
    if not returns or any(value is None for value in returns):
        return None
    if isinstance(function, ast.AsyncFunctionDef):
        return None  # its call returns a coroutine
    if any(isinstance(node, _SUSPENDING) for node in nodes):
        return None  # a generator's call returns a generator
    followed = {frozenset(_parameters_in(value, aliases)) for value in returns if value}
    if len(followed) != 1:
        return None
    (parameters,) = followed
    return next(iter(parameters)) if len(parameters) == 1 else None


def _handles_devices(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _DEVICE_AWARE or node.attr in DEVICE_MOVES
    return isinstance(node, ast.keyword) and node.arg == "device"


def _parameter_aliases(nodes: list[ast.AST], usable: set[str]) -> dict[str, str]:
    """Parameters, and the locals assigned once from one (`k = kernel.flip(-1)`)."""
    aliases = {name: name for name in usable}
    values, bindings = _bindings(nodes)
    changed = True
    while changed:  # until no alias is added: a local may come from one found later
        changed = False
        for name, assigned in values.items():
            # bound once, by that assignment (any other binding: never an alias)
            if name in usable or name in aliases or len(assigned) != 1 or bindings[name] != 1:
                continue
            roots = _parameters_in(assigned[0], aliases)
            if len(roots) == 1:
                aliases[name] = roots.pop()
                changed = True
    return aliases


def _rebound_in_place(
    nodes: list[ast.AST], candidates: set[str], qualified: Callable[[ast.AST], str]
) -> set[str]:
    """The parameters among ``candidates`` every binding of which keeps their tensor where it
    was: `waveform = waveform.transpose(2, 1)`, `waveform = F.pad(input=waveform, pad=p)`."""
    values, bindings = _bindings(nodes)
    return {
        name
        for name, assigned in values.items()
        if name in candidates
        and len(assigned) == bindings[name]
        and all(_keeps(value, name, qualified, values, bindings) for value in assigned)
    }


def _bindings(nodes: list[ast.AST]) -> tuple[dict[str, list[ast.expr]], Counter[str]]:
    """Per name: the values plain `name = value` assignments give it, and how many times
    anything binds it (those assignments, a loop, an unpacking, `+=`...)."""
    values: dict[str, list[ast.expr]] = {}
    bindings: Counter[str] = Counter()
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.Name) and type(node.ctx) is not ast.Load:
            bindings[node.id] += 1
    return values, bindings


def _keeps(
    value: ast.expr,
    name: str,
    qualified: Callable[[ast.AST], str],
    values: Mapping[str, list[ast.expr]],
    bindings: Counter[str],
) -> bool:
    """Whether ``value`` is parameter ``name``'s tensor, where it was (see `_parameters_in`),
    or a torch function's result on it (`F.pad(x, p)`, `torch.flip(x, [0])`, `torch.cat((x[...,
    :r], zeros))`: joined with it, if the call succeeds). ``values``: what each local is
    assigned, ``bindings``: how often anything binds it (`head = x[..., :r]`, its only
    binding, stands for `x`)."""
    if _parameters_in(value, {name: name}) == {name}:
        return True
    if not isinstance(value, ast.Call) or not _may_be_functional(value.func):
        return False
    called = qualified(value.func)
    if called in _JOINING and value.args and isinstance(value.args[0], (ast.List, ast.Tuple)):
        return any(_holds(item, name, values, bindings) for item in value.args[0].elts)
    reduces = called.rpartition(".")[2] in REDUCTIONS  # `torch.sum(x)` may be 0-dim: it mixes
    keeping = not reduces and (called in KEEPING_FUNCTIONS or combines_operands(called))
    first = value.args[0] if value.args else keyword_value(value, "input")
    return keeping and first is not None and _parameters_in(first, {name: name}) == {name}


def _holds(
    item: ast.expr, name: str, values: Mapping[str, list[ast.expr]], bindings: Counter[str]
) -> bool:
    """Whether ``item`` is parameter ``name``'s tensor, or a local bound once, to it."""
    if _parameters_in(item, {name: name}) == {name}:
        return True
    if not isinstance(item, ast.Name) or bindings[item.id] != 1:
        return False
    assigned = values.get(item.id, [])
    return len(assigned) == 1 and _parameters_in(assigned[0], {name: name}) == {name}


_JOINING = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})


def _parameters_in(node: ast.expr, aliases: dict[str, str]) -> set[str]:
    """The parameters whose tensors ``node`` holds, through steps that keep their devices and
    never leave a 0-dim tensor (which mixes with any device): methods (`x.float()`), slices
    (`x[:, 1:]`), a sign, arithmetic (`a * w + 0.5`); not `x.sum()` or `x[0]`."""
    while True:
        if isinstance(node, ast.Name):
            return {aliases[node.id]} if node.id in aliases else set()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method not in PLACEMENT_KEEPING_METHODS or (
                method in REDUCTIONS and not (node.args or node.keywords)
            ):
                return set()
            node = node.func.value
        elif isinstance(node, ast.Subscript):
            if not _slices_only(node.slice):
                return set()
            node = node.value
        elif isinstance(node, ast.UnaryOp):
            node = node.operand
        elif isinstance(node, ast.BinOp):
            return _parameters_in(node.left, aliases) | _parameters_in(node.right, aliases)
        else:
            return set()


def _slices_only(index: ast.expr) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(
        isinstance(part, ast.Slice)
        or (isinstance(part, ast.Constant) and (part.value is None or part.value is Ellipsis))
        for part in parts
    )


def _operands(node: ast.AST, qualified: Callable[[ast.AST], str]) -> list[ast.expr]:
    """The tensors one operation needs on one device."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        # `a is b` and `a in b` compare no values elementwise
        if all(isinstance(op, _ELEMENTWISE_COMPARISONS) for op in node.ops):
            return [node.left, *node.comparators]
        return []
    if not isinstance(node, ast.Call):
        return []
    function = node.func
    if isinstance(function, ast.Attribute):
        if function.attr in OPERAND_METHODS:
            return [function.value, *node.args]
        last = function.attr
    else:
        last = function.id if isinstance(function, ast.Name) else ""
    if last not in _COMBINING_NAMES and not _may_be_functional(function):
        return []  # most calls: no need to build a qualified name
    name = qualified(function)
    if name in ("torch.cat", "torch.stack", "torch.concat") and node.args:
        listed = node.args[0]
        return list(listed.elts) if isinstance(listed, (ast.List, ast.Tuple)) else []
    if name in FUNCTIONAL_LOSSES:
        return [] if takes_cpu_targets(name) else loss_operands(node)  # its input and target
    if combines_operands(name):
        # `F.conv1d(input=waveform, weight=kernel)`: its tensors, however passed
        keywords = [k.value for k in node.keywords if k.arg in _TENSOR_KEYWORDS]
        return [*node.args, *keywords]
    return []


def _may_be_functional(function: ast.expr) -> bool:
    """Whether ``function`` may name a torch function, `F.conv1d` or `torch.nn.functional.pad`:
    an attribute of a name other than `self` (its qualified name decides)."""
    return (
        isinstance(function, ast.Attribute)
        and isinstance(function.value, (ast.Name, ast.Attribute))
        and not (isinstance(function.value, ast.Name) and function.value.id == "self")
    )


def summarise(tree: ast.Module) -> Summary:
    """The summary of a file's top-level classes and functions, and of its imports."""
    summariser = _Summariser(tree)
    return {
        "format": FORMAT,
        "imports": {name: [level, target] for name, (level, target) in summariser.imports.items()},
        "classes": {
            name: summariser.summarise_class(node) for name, node in summariser.classes.items()
        },
        "functions": {
            statement.name: summariser.summarise_function(statement)
            for statement in tree.body
            if isinstance(statement, _FUNCTIONS)
        },
    }
