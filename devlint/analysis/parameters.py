"""Which parameters of a function are tensors that live on the caller's device.

Library code is device-agnostic by contract: `def pairwise(x: Tensor)` runs wherever its caller
keeps `x`, so `x - torch.arange(n)` fails as soon as a caller passes a GPU tensor. The analysis
places such a parameter on "the caller's device" (`Where.INPUT`, as `forward`'s inputs) only on
evidence that it is a tensor: an annotation naming `Tensor`, or a use that only a tensor has
(`x.device`, `x.new_zeros(...)`, `x.unsqueeze(...)`, `x.size(0)`), or a docstring documenting
its type as one (`x : torch.Tensor`, see `docstrings`). A name alone, or a number, proves
nothing. Uses and docstrings count only in a file that places something on a device (see
`flow`).

Code that runs on the CPU by design is left out: a dataset's `__getitem__`, a collate function,
a dataset class's methods. So are the helpers of a test module: their callers are the tests
beside them, which make the data and decide its device.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import PurePath
from typing import Optional, Union

from devlint.analysis.contexts import defaults_of
from devlint.analysis.names import ImportMap
from devlint.analysis.syntax import dotted_name, nodes_below, parameters_of, statement_blocks

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# Attributes and methods a tensor has and a number, a list or a numpy array has not.
TENSOR_ONLY_ATTRIBUTES = frozenset(
    (
        "is_cuda new_zeros new_ones new_full new_empty new_tensor type_as unsqueeze unsqueeze_ "
        "masked_fill masked_fill_ contiguous permute numel dim expand_as view_as index_select "
        "masked_select softmax log_softmax detach clamp clamp_ long unbind narrow numpy"
    ).split()
)  # (not `device`, `half`, `bfloat16` or `requires_grad_`: models have them too)
# Methods only a module has: a name they are called on holds no tensor.
MODULE_ONLY_METHODS = frozenset(
    (
        "parameters named_parameters buffers named_buffers modules named_modules children eval "
        "train state_dict load_state_dict zero_grad forward apply register_buffer "
        "enable_gradient_checkpointing gradient_checkpointing_enable"
    ).split()
)
_CPU_BY_DESIGN_METHODS = frozenset({"__getitem__", "__iter__", "__len__"})


def annotated_as_tensor(annotation: ast.expr | None) -> bool:
    """`Tensor`, `torch.Tensor`, `torch.BoolTensor`, `Optional[Tensor]` (`tp.Optional`, too),
    `Union[Tensor, None]`, `Tensor | None`, `"torch.Tensor"`; not `List[Tensor]`."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            written = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
        return not isinstance(written, ast.Constant) and annotated_as_tensor(written)
    if isinstance(annotation, ast.Subscript):
        wrapper = (dotted_name(annotation.value) or "").rpartition(".")[2]
        inner = annotation.slice
        if wrapper == "Optional":
            return annotated_as_tensor(inner)
        if wrapper == "Union" and isinstance(inner, ast.Tuple):
            return _tensor_or_none(inner.elts)
        return False
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _tensor_or_none([annotation.left, annotation.right])
    name = dotted_name(annotation)
    return name is not None and name.rpartition(".")[2] in TENSOR_TYPES


# `Tensor` and the legacy typed tensor classes, which annotations still use (`torch.BoolTensor`).
TENSOR_TYPES = frozenset(
    {"Tensor"}
    | {
        kind + "Tensor"
        for kind in "Float Double Half BFloat16 Long Int Short Char Byte Bool".split()
    }
)


def _tensor_or_none(sides: list[ast.expr]) -> bool:
    """`Tensor | None`, `Union[Tensor, None]`: a tensor and None, nothing else."""
    none = [side for side in sides if isinstance(side, ast.Constant) and side.value is None]
    others = [side for side in sides if side not in none]
    return bool(none) and len(others) == 1 and annotated_as_tensor(others[0])


_SEQUENCES = frozenset({"List", "list", "Sequence", "Iterable", "Tuple", "tuple"})


def annotated_as_tensors(annotation: ast.expr | None) -> bool:
    """`List[Tensor]`, `list[torch.Tensor]`, `Sequence[Tensor]`, `Tuple[Tensor, ...]`: a
    sequence whose every item is a tensor (not `List[Optional[Tensor]]`)."""
    if not isinstance(annotation, ast.Subscript):
        return False
    if (dotted_name(annotation.value) or "").rpartition(".")[2] not in _SEQUENCES:
        return False
    inner = annotation.slice
    items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
    items = [item for item in items if not (isinstance(item, ast.Constant) and item.value is ...)]
    return bool(items) and all(
        (dotted_name(item) or "").rpartition(".")[2] == "Tensor" for item in items
    )


def annotated_as_list(annotation: ast.expr | None) -> bool:
    """`List[float]`, `list`, `Tuple[int, int]`, `Sequence[float]`: a list or tuple (which
    `torch.tensor` makes a tensor with a dimension, never a 0-dim one)."""
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    if annotation is None:
        return False
    return (dotted_name(annotation) or "").rpartition(".")[2] in _LISTS


_LISTS = _SEQUENCES - {"Iterable"}


def list_parameters(function: FunctionNode) -> frozenset[str]:
    """The parameters of ``function`` annotated as lists or tuples."""
    return frozenset(p.arg for p in parameters_of(function) if annotated_as_list(p.annotation))


def names_used_as_modules(function: FunctionNode) -> set[str]:
    """Names ``function`` calls (`vae(x)`) or calls a method only a module has on
    (`vae.eval()`): modules, whatever else reads them (a model's `.device`)."""
    return {
        name
        for node in nodes_below(function)
        if isinstance(node, ast.Call) and (name := module_used(node)) is not None
    }


def module_used(call: ast.Call) -> Optional[str]:
    """The name ``call`` uses as a module: `vae(x)` calls it, `vae.eval()` calls a method
    only a module has on it."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if (
        isinstance(func, ast.Attribute)
        and func.attr in MODULE_ONLY_METHODS
        and isinstance(func.value, ast.Name)
    ):
        return func.value.id
    return None


def names_used_as_tensors(function: FunctionNode) -> set[str]:
    """Names in ``function``'s own code that are used the way only a tensor is used, before
    anything is assigned to them (`img = torch.from_numpy(img)` makes a new tensor of an array)."""
    first_store: dict[str, int] = {}
    uses: list[tuple[str, int]] = []
    for node in nodes_below(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            line = first_store.get(node.id, node.lineno)
            first_store[node.id] = min(line, node.lineno)
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in TENSOR_ONLY_ATTRIBUTES
            and isinstance(node.value, ast.Name)
        ):
            uses.append((node.value.id, node.lineno))
        elif isinstance(node, ast.Call) and (sized := size_called(node)) is not None:
            uses.append((sized, node.lineno))
    used = {name for name, line in uses if line <= first_store.get(name, line)}
    return used - names_used_as_modules(function) if used else used


def names_on_a_device(function: FunctionNode) -> dict[str, ast.Attribute]:
    """Names whose device ``function`` reads (`device=q.device`, `.to(q.device)`) and that it
    also uses as tensors (an arithmetic operand, a tensor-only method, an item `torch.cat`
    joins): tensors that live on a
    device chosen elsewhere, as a parameter lives on its caller's. Each with its first read.
    A name the function's branches type-test (`if torch.is_tensor(x):`) may hold an array as
    well: its device read proves nothing outside the branch that tests it."""
    reads: dict[str, ast.Attribute] = {}
    tensors: set[str] = set()
    tested: set[str] = set()
    for node in nodes_below(function):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):  # an `assert` proves, not tests
            tested.update(
                name
                for part in ast.walk(node.test)
                if isinstance(part, ast.Call)
                for name in _type_tested(part)
            )
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            name = node.value.id
            if node.attr == "device":
                first = reads.get(name)
                if first is None or _position(node) < _position(first):
                    reads[name] = node
            elif node.attr in TENSOR_ONLY_ATTRIBUTES:
                tensors.add(name)
        elif isinstance(node, ast.BinOp):
            sides = (node.left, node.right)
            tensors.update(side.id for side in sides if isinstance(side, ast.Name))
        elif isinstance(node, ast.Call):
            tensors.update(_joined_names(node))
    kept = tensors - tested - {"self"}
    if not kept.intersection(reads):
        return {}
    kept -= names_used_as_modules(function)
    return {name: read for name, read in reads.items() if name in kept}


def size_called(call: ast.Call) -> Optional[str]:
    """The name `x.size(0)` calls `size` of: a numpy array's `size` is a number, which no
    code calls, so only a tensor's is (`self.size(3)` is a method of the class)."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "size" and isinstance(func.value, ast.Name):
        return func.value.id if func.value.id != "self" else None
    return None


_JOINING = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack"})


def _joined_names(call: ast.Call) -> list[str]:
    """The names `torch.cat([a, b])` joins: only tensors can be joined."""
    head, _, last = (dotted_name(call.func) or "").rpartition(".")
    if head != "torch" or last not in _JOINING or not call.args:
        return []
    joined = call.args[0]
    items = joined.elts if isinstance(joined, (ast.List, ast.Tuple)) else []
    return [item.id for item in items if isinstance(item, ast.Name)]


def _type_tested(call: ast.Call) -> list[str]:
    """The name `isinstance(x, ...)`, `type(x)` or `torch.is_tensor(x)` tests."""
    function = dotted_name(call.func) or ""
    testing = function in ("isinstance", "type") or function.rpartition(".")[2] == "is_tensor"
    subject = call.args[0] if testing and call.args else None
    return [subject.id] if isinstance(subject, ast.Name) else []


def _position(node: ast.expr) -> tuple[int, int]:
    return node.lineno, node.col_offset


def rebinding_positions(
    function: FunctionNode,
) -> dict[str, list[tuple[tuple[int, int], int]]]:
    """Where each plain name takes a new value in ``function``'s own statements (not a nested
    function's, nor a comprehension's), with the block holding the statement: the end of an
    assignment (`x = x.cpu().numpy()` binds once its value is made), or a loop's target. An
    augmented assignment (`x += 1`) keeps the tensor, and its device."""
    found: dict[str, list[tuple[tuple[int, int], int]]] = {}

    def visit(block: Sequence[ast.stmt]) -> None:
        for statement in block:
            targets: list[ast.expr] = []
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, (ast.AnnAssign, ast.For, ast.AsyncFor)):
                targets = [statement.target]
            end = (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
            if isinstance(statement, (ast.For, ast.AsyncFor)):
                end = (statement.target.lineno, statement.target.col_offset)
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Name):
                        found.setdefault(part.id, []).append((end, id(block)))
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for inner in statement_blocks(statement):
                    visit(inner)

    visit(function.body)
    return found


def enclosing_blocks(function: FunctionNode, node: ast.expr) -> set[int]:
    """The statement blocks of ``function`` that hold ``node``, from its body inwards: a
    rebinding in one of them runs on every path to ``node``."""
    position = (node.lineno, node.col_offset)
    held: set[int] = set()
    block: Optional[Sequence[ast.stmt]] = function.body
    while block is not None:
        held.add(id(block))
        inner = None
        for statement in block:
            start = (statement.lineno, statement.col_offset)
            end = (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
            if start <= position <= end:
                inner = next(
                    (
                        candidate
                        for candidate in statement_blocks(statement)
                        if candidate
                        and (candidate[0].lineno, candidate[0].col_offset) <= position
                        and position
                        <= (candidate[-1].end_lineno or 0, candidate[-1].end_col_offset or 0)
                    ),
                    None,
                )
                break
        block = inner
    return held


def runs_on_cpu_by_design(function: FunctionNode, classes: Iterable[str]) -> bool:
    """A dataset's item access, a collate function, a data collator's or a dataset's methods:
    code that prepares CPU data. ``classes`` are the class's own name and its bases'."""
    name = function.name
    if name in _CPU_BY_DESIGN_METHODS or "collat" in name.lower():
        return True
    return any(prepares_data(base.rpartition(".")[2]) for base in classes)


def prepares_data(class_name: str) -> bool:
    """A dataset or a data collator, by its class's name."""
    return class_name.endswith("Dataset") or "Collat" in class_name


def is_test_module(path: str) -> bool:
    """`test_*.py`, `*_test.py` or `conftest.py`, as pytest collects them, or any module of a
    `tests` folder (the helpers the tests beside them call)."""
    parts = PurePath(path).parts
    name = parts[-1] if parts else ""
    test_file = name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    return test_file or any(part in _TEST_FOLDERS for part in parts[:-1])


_TEST_FOLDERS = frozenset({"test", "tests"})


def tensor_parameters(function: FunctionNode, used_as_tensors: Collection[str]) -> set[str]:
    """The parameters of ``function`` that are tensors by annotation, or by use (the uses
    ``used_as_tensors`` names, a docstring's word among them, see `docstrings`)."""
    every = parameters_of(function)
    return {
        parameter.arg
        for parameter in every
        if parameter.arg not in ("self", "cls")
        and (
            annotated_as_tensor(parameter.annotation)
            or annotated_as_tensors(parameter.annotation)
            or (parameter.arg in used_as_tensors and not _annotated_otherwise(parameter))
        )
    }


def unpacked_tensor_items(function: FunctionNode) -> dict[str, tuple[bool, ...]]:
    """The parameters ``function`` unpacks in its own body's first statements (`features,
    lengths = features_tuple`), each with, by position, whether the name unpacked there is a
    tensor: used the way only a tensor is (`features.size(0)`) and bound nowhere else. A
    caller's tuple of tensors holds them where the caller keeps its tensors."""
    every = parameters_of(function)
    # (`pair: Tuple[np.ndarray, np.ndarray]`: the author says what the items are; a bare
    # `tuple` does not)
    parameters = {
        p.arg
        for p in every
        if not (isinstance(p.annotation, ast.Subscript) and _annotated_otherwise(p))
    }
    unpacks: dict[str, list[str]] = {}
    twice: set[str] = set()
    for statement in function.body:
        if not isinstance(statement, ast.Assign):
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # the docstring
            break
        target, value = statement.targets[0], statement.value
        if (
            len(statement.targets) == 1
            and isinstance(target, (ast.Tuple, ast.List))
            and all(isinstance(element, ast.Name) for element in target.elts)
            and isinstance(value, ast.Name)
            and value.id in parameters
        ):
            if value.id in unpacks:
                twice.add(value.id)  # two readings of one tuple: which is right is unknown
            unpacks[value.id] = [element.id for element in target.elts]  # type: ignore[attr-defined]
    if not unpacks:
        return {}
    stores: Counter[str] = Counter()
    tensors: set[str] = set()
    for node in nodes_below(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] += 1
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in TENSOR_ONLY_ATTRIBUTES
            and isinstance(node.value, ast.Name)
        ):
            tensors.add(node.value.id)
        elif isinstance(node, ast.Call) and (sized := size_called(node)) is not None:
            tensors.add(sized)
    found = {
        parameter: tuple(name in tensors and stores[name] == 1 for name in names)
        for parameter, names in unpacks.items()
        if stores[parameter] == 0 and parameter not in twice
    }
    return {parameter: items for parameter, items in found.items() if any(items)}


def _annotated_otherwise(parameter: ast.arg) -> bool:
    """An annotation that names no tensor (`sigmas: list[float]`, `image: np.ndarray`): the
    author says what the parameter is, whatever later uses of its name suggest."""
    if parameter.annotation is None:
        return False
    return "Tensor" not in ast.unparse(parameter.annotation)


def module_tensors_set_in(
    init: FunctionNode, qualified: Callable[[ast.expr], Optional[str]]
) -> dict[str, str]:
    """The buffers and parameters a module's ``init`` registers, by name: what its `to()`
    moves, so what lives on the module's device (`self.register_buffer("freqs", f)`,
    `self.scale = nn.Parameter(...)`). A buffer registered as None is none. ``qualified``:
    the file's qualified name of a called expression (`nn.Parameter` -> `torch.nn.Parameter`)."""
    found: dict[str, str] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            registered = _REGISTRATIONS.get(method)
            if registered is None or not _on_self(node.func.value) or len(node.args) < 2:
                continue
            name, value = node.args[0], node.args[1]
            is_none = isinstance(value, ast.Constant) and value.value is None
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and not is_none:
                found[name.value] = registered
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if (
                isinstance(target, ast.Attribute)
                and _on_self(target.value)
                and isinstance(value, ast.Call)
                and qualified(value.func) in _PARAMETER_CLASSES
            ):
                found[target.attr] = "parameter"
    return found


_REGISTRATIONS = {"register_buffer": "buffer", "register_parameter": "parameter"}
_PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def _on_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


# Methods that change a dict or a list in place.
_MUTATING_METHODS = frozenset(
    {"update", "pop", "popitem", "setdefault", "clear", "append", "extend", "insert", "remove"}
)


def changed_parameters(function: FunctionNode) -> frozenset[str]:
    """The parameters holding a dict or a list that ``function`` changes in place: an item
    assigned or deleted by name (`batch["x"] = batch["x"].cuda()`), by a key drawn from the
    container itself (`for key in batch: batch[key] = ...`), or replaced by what it is turned
    into (`batch[key] = batch[key].cuda()`, whatever `key` is), or a mutating method called
    (`batch.update(...)`). (A tensor's items, `x[mask] = 0`, change no device.)"""
    names = {p.arg for p in parameters_of(function)}
    keys = _container_keys(function)
    changed: set[str] = set()
    for node in nodes_below(function):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            targets = []
        for target in targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                container = target.value.id
                if _names_an_item(target.slice, container, keys) or _rewrites_item(node, target):
                    changed.add(container)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATING_METHODS
            and isinstance(node.func.value, ast.Name)
        ):
            changed.add(node.func.value.id)
    return frozenset(changed & names)


def _names_an_item(index: ast.expr, container: str, keys: set[tuple[str, str]]) -> bool:
    if isinstance(index, ast.Constant):
        return isinstance(index.value, str)
    return isinstance(index, ast.Name) and (index.id, container) in keys


def _rewrites_item(statement: ast.AST, target: ast.Subscript) -> bool:
    """`batch[key] = batch[key].cuda()`: an item replaced by what it is turned into."""
    if not isinstance(statement, ast.Assign):
        return False
    written = ast.dump(target, include_attributes=False).replace("Store()", "Load()")
    return any(
        isinstance(node, ast.Subscript) and ast.dump(node, include_attributes=False) == written
        for node in ast.walk(statement.value)
    )


def _container_keys(function: FunctionNode) -> set[tuple[str, str]]:
    """(key, container) for each loop drawing its keys from a container: `for key in batch`,
    `batch.keys()`, `batch.items()`, `enumerate(batch)`, `range(len(batch))`."""
    keys: set[tuple[str, str]] = set()
    for loop in nodes_below(function):
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        drawn = _keys_drawn(loop.iter)
        if drawn is None:
            continue
        container, paired = drawn
        target = loop.target
        if paired and isinstance(target, ast.Tuple) and target.elts:
            target = target.elts[0]
        if isinstance(target, ast.Name):
            keys.add((target.id, container))
    return keys


def _keys_drawn(iterable: ast.expr) -> Optional[tuple[str, bool]]:
    """The container whose keys ``iterable`` yields, and whether each key comes paired."""
    if isinstance(iterable, ast.Name):
        return iterable.id, False
    if not isinstance(iterable, ast.Call) or len(iterable.args) > 1:
        return None
    function = iterable.func
    if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
        if not iterable.args and function.attr in ("keys", "items"):
            return function.value.id, function.attr == "items"
        return None
    if not isinstance(function, ast.Name) or len(iterable.args) != 1:
        return None
    argument = iterable.args[0]
    if function.id in ("list", "tuple", "sorted"):
        return _keys_drawn(argument)  # `for key in list(batch.keys())`
    if function.id == "enumerate" and isinstance(argument, ast.Name):
        return argument.id, True
    if (
        function.id == "range"
        and isinstance(argument, ast.Call)
        and isinstance(argument.func, ast.Name)
        and argument.func.id == "len"
        and len(argument.args) == 1
        and isinstance(argument.args[0], ast.Name)
    ):
        return argument.args[0].id, False
    return None


# Factories whose positional arguments are sizes or bounds, never tensors: a name passed there
# is a number (`torch.arange(seq_len)`), as one passed to `range`.
_SIZE_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros ones empty rand randn randint randperm arange linspace logspace eye full"
    ).split()
)
_NUMBER_TYPES = frozenset({"int", "float", "bool"})
_TYPE_WRAPPERS = frozenset({"Optional", "Union", "Tuple", "tuple", "List", "list", "Sequence"})


def numeric_parameters(function: FunctionNode, names: ImportMap) -> frozenset[str]:
    """Parameters the function shows to be numbers, not tensors: annotated `int`, `float`,
    `bool` (or tuples of them), defaulting to a number, or used as a size or a bound
    (`torch.arange(seq_len)`, `range(n)`). `forward(self, x, seq_len)` then leaves `seq_len`
    out of the module's tensors."""
    every = parameters_of(function)
    found = {p.arg for p in every if p.annotation is not None and _numeric_type(p.annotation)}
    found.update(
        name
        for name, default in defaults_of(function).items()
        if isinstance(default, ast.Constant) and type(default.value) in (int, float)
    )
    for node in nodes_below(function):
        if isinstance(node, ast.Call) and _takes_sizes(node, names):
            for argument in node.args:
                parts = argument.elts if isinstance(argument, ast.Tuple) else [argument]
                found.update(part.id for part in parts if isinstance(part, ast.Name))
    return frozenset(found & {p.arg for p in every})


def _numeric_type(annotation: ast.expr) -> bool:
    named = [node.id for node in ast.walk(annotation) if isinstance(node, ast.Name)]
    return (
        bool(named)
        and any(name in _NUMBER_TYPES for name in named)
        and all(name in _NUMBER_TYPES or name in _TYPE_WRAPPERS for name in named)
    )


def _takes_sizes(call: ast.Call, names: ImportMap) -> bool:
    if isinstance(call.func, ast.Name) and call.func.id == "range":
        return True
    return names.qualified_syntax_name(call.func) in _SIZE_FACTORIES
