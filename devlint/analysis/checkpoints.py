"""What a ``torch.load`` reads: a checkpoint that may hold GPU tensors, or data known to be safe.

``torch.load`` without ``map_location`` restores each tensor on the device it was saved
from. Whether that is a hazard depends on who saved the file and from what, so this module
gathers the evidence a file holds about one load:

- **Safe, same process**: the same function saved what it loads (``torch.save(x, buffer)``
  then ``torch.load(buffer)``, a byte-buffer round trip, a temporary file written and read
  back). Saved and loaded by one process on one machine, the devices exist.
- **Safe, a temporary place**: the path lies in a temporary directory or file the loading
  function made (``with tempfile.TemporaryDirectory() as d``, ``tempfile.mkdtemp()``, pytest's
  ``tmp_path``, ``mkstemp()[1]``), and the function saves into it (``model.save_pretrained(d)``)
  or hands it to a saving function of the file (``split_files(src, d)``, ``mp.spawn(worker,
  args=(d,))``): this run wrote what it reads. Not where it only downloads into it
  (``get_file(url, d)``).
- **Safe, no device at all**: the same file saves the same path from what it made (not a value
  its caller passed in), and nothing it runs can place a value on a device (see `cpu_only`):
  a CPU-only tutorial saving and reloading its model.
- **Safe, CPU data**: the same file saves the same path (``self.processed_paths[0]``) from
  values that show no device (no ``.state_dict()``, ``.cuda()``, ``.to()``, ``device=``, in a
  function that moves nothing to a device before the save, see `_device_on_the_way`): a
  processed dataset file, a cache of tokenized documents saved before the model goes to the
  GPU.
- **Safe, written first by this run**: a test given a pytest fixture of the file that saves
  into a temporary path and returns it; a method loading a file name, written out, that the
  object's ``__init__`` saves in its own statements.
- **Safe, a CPU attribute**: a file name this file writes only from ``self.log``, an attribute
  every assignment makes on the CPU, nothing moves and the file reads with ``.numpy()``.
- **Safe, a CPU-only file's own state**: the result goes into ``self.actor.load_state_dict``,
  the file saves ``self.actor.state_dict()`` (an attribute of ``self``: one object, not a
  caller's model), and nothing it runs can place a value on a device: whatever path the
  caller passes, this code saved it from the CPU.
- **Safe, no tensors**: the result goes only into a learning-rate scheduler's or a gradient
  scaler's ``load_state_dict`` (``scheduler.load_state_dict(torch.load(...))``): their states
  hold Python numbers.
- **Safe, a dataset's data**: a dataset class (`ExpertDataset`, a `torch.utils.data.Dataset`)
  loads a file that shows no checkpoint and is not used as a whole model (called, `.eval()`):
  its tensors feed a DataLoader, which prepares them on the CPU.
- **Safe, no GPU to save from**: the file hides every GPU at its top
  (``os.environ["CUDA_VISIBLE_DEVICES"] = ""``), so its author's own run loaded on the CPU: a
  GPU's file would have failed there first.
- **Safe, the project's convention**: the result is a checkpoint, and the project saves its
  weights moved to the CPU, with no `.state_dict()` saved as it is (see `project_saves`):
  BasicSR's `save_network` stores `param.cpu()` for every weight. An optimizer's state saved
  as it is voids it only for a load restoring an optimizer.
- **A checkpoint**: the result reaches ``load_state_dict``, is read with a ``"model"``,
  ``"optimizer"`` or ``"state_dict"`` key, or is used as a model; the file saves the path (or
  the file name) from a state dict or from values a device-moving function made; or the
  author names it one (see `checkpoint_names`: `args.ckpt_path`, `state_dict = ...`).
- **Safe, nothing shown**: none of the above: features, messages, a generic loader. Most such
  files are saved from the CPU, and a finding would be a guess.
- **Safe, numpy arrays**: the loading function, annotated `-> np.ndarray`, returns the result.

Paths are matched by how they are written (``tmp``, ``tmp.name``, ``io.BytesIO(data)`` with
``data = buffer.getvalue()``), never by guessing what a string holds.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union, cast

import libcst as cst

from devlint.analysis.checkpoint_names import (
    annotated_array,
    assigned_names,
    names_checkpoint_key,
    names_data,
    naming_token,
    returns_result,
    storing_receivers,
)
from devlint.analysis.conditions import suite_exits
from devlint.analysis.devices import argument, string_value
from devlint.analysis.names import ImportMap, dotted_name
from devlint.analysis.project_saves import OPTIMIZER_NAME, SaveConvention
from devlint.analysis.syntax import CLASS_LEVEL_DECORATORS
from devlint.analysis.torch_api import FACTORIES
from devlint.traversal import child_nodes, descendants

if TYPE_CHECKING:  # (typing has it from Python 3.10; annotations are not evaluated)
    from typing import TypeGuard

Scope = Union[cst.Module, cst.FunctionDef]
_Matcher = Callable[[cst.BaseExpression], bool]

# Keys a training checkpoint is read with: `ckpt["model"]`, `state["optimizer_state_dict"]`.
CHECKPOINT_KEY = re.compile(r"model|optim|state_dict|net\Z|weights|ema", re.IGNORECASE)
# Objects whose `state_dict()` holds Python numbers, no tensors: `scheduler`, `lr_scheduler`,
# `self.sched`, `scaler` (a GradScaler keeps its scale as a float).
_TENSORLESS_STATE = re.compile(r"sched|scaler", re.IGNORECASE)
# Setters of random generators' states: `torch.get_rng_state()` (CUDA's too) is a CPU tensor.
# By their names as written: `set_state` alone is any object's (pyro's optimizer wrapper).
_RNG_SETTER_METHODS = frozenset({"set_rng_state", "set_rng_state_all"})
_RNG_SETTERS = frozenset({"random.setstate", "np.random.set_state", "numpy.random.set_state"})
# Calls that show a value may live on a device, or a function that moves things to one.
_DEVICE_METHODS = frozenset({"cuda", "to", "state_dict", "parameters", "named_parameters"})
# Methods only a module has: a loaded object given one is a whole model, not data.
_MODEL_METHODS = frozenset(
    {"eval", "train", "forward", "parameters", "named_parameters", "modules", "children",
     "named_modules", "state_dict", "load_state_dict", "zero_grad"}
)  # fmt: skip
# Wrappers a path or buffer passes through on its way into `torch.save`/`torch.load`.
_BUFFER_METHODS = frozenset({"getvalue", "getbuffer", "read", "read_bytes"})
# Names that mean the same in every function: `open`, `str`, and `self`/`cls` (one object).
_BUILTINS = frozenset(dir(builtins)) | {"self", "cls"}
# What makes a fresh temporary place: whatever is in it, this process wrote.
_TEMPORARY_PLACES = frozenset(
    {
        "tempfile.TemporaryDirectory",
        "tempfile.mkdtemp",
        "tempfile.NamedTemporaryFile",
        "tempfile.mkstemp",
    }
)
_TEMPORARY_FIXTURES = frozenset({"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"})
_PATH_BUILDERS = frozenset(
    {"join", "Path", "PurePath", "str", "fspath", "format", "joinpath", "glob", "iglob", "rglob"}
)
# Factories that copy their data where it lives (`torch.tensor(cuda_tensor)` stays there).
_DATA_COPIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_file"})
# Calls after which torch's factories make tensors elsewhere than the CPU.
_DEFAULT_DEVICE_SETTERS = frozenset({"torch.set_default_device", "torch.set_default_tensor_type"})
_NAMED = "name:"  # a round trip's key for a file name, not a path (see `_round_trip_keys`)
_WRAPPERS = frozenset({"BytesIO", "open", "Path", "str", "fspath", "bytes", "memoryview"})


@dataclass(frozen=True)
class LoadEvidence:
    """What a file says about one ``torch.load``: ``safe`` explains a silence, ``checkpoint``
    names what makes the result a checkpoint, the hazard; one of the two is set."""

    safe: Optional[str] = None
    checkpoint: Optional[str] = None


def _short(module: cst.Module, node: cst.CSTNode) -> str:
    return _clipped(module.code_for_node(node))


def _clipped(code: str) -> str:
    text = " ".join(code.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _device_on_save(scope: Scope, value: cst.BaseExpression) -> bool:
    """Whether a save of ``value`` may write device tensors: a state dict or a value showing a
    device, or a device shown on the way to the save."""
    return _shows_device(value) or _device_on_the_way(scope, value)


def source_key(node: cst.BaseExpression, module: cst.Module) -> str:
    """How a path or buffer is written, with its wrappers taken off: ``tmp.name`` is ``tmp``,
    ``io.BytesIO(data)`` is ``data``, ``buffer.getvalue()`` is ``buffer``."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _BUFFER_METHODS:
            return source_key(func.value, module)
        wrapper = dotted_name(func)
        wraps = wrapper is not None and wrapper.rpartition(".")[2] in _WRAPPERS
        if wraps and node.args and node.args[0].keyword is None and not node.args[0].star:
            return source_key(node.args[0].value, module)
    if isinstance(node, cst.Attribute) and node.attr.value == "name":
        return source_key(node.value, module)
    dotted = dotted_name(node)
    if dotted is not None:
        return dotted
    text = string_value(node)
    if text is not None:
        return repr(text)  # "rows.pt" and 'rows.pt' are one path
    return "".join(module.code_for_node(node).split())


def _method(node: cst.CSTNode) -> Optional[str]:
    if type(node) is cst.Call and type(node.func) is cst.Attribute:
        return node.func.attr.value
    return None


def _shows_device(node: cst.CSTNode) -> bool:
    """A `.cuda()`, `.to()`, `.state_dict()` call or a `device=` argument below ``node``; not
    `.to("cpu")` or `device="cpu"`, which say the opposite."""
    for part in descendants(node):
        if type(part) is cst.Call and _method(part) in _DEVICE_METHODS:
            if not (part.args and _names_cpu(part.args[0].value)):
                return True
        elif _device_keyword(part) and not _names_cpu(cast(cst.Arg, part).value):
            return True
    return False


def _device_on_the_way(
    scope: cst.CSTNode, saved: cst.CSTNode, given: frozenset[str] = frozenset()
) -> bool:
    """Whether code of ``scope`` that may run before the save of ``saved`` shows a device (see
    `_shows_device`) or calls what the caller gave (`model(x)`: the caller's model may be on a
    GPU; not `docs.items()`): what precedes it, but the other branch of an `if`, and the whole
    of a loop around it, whose next iteration runs after it. A cache saved from what was
    computed before the model goes to the GPU (`torch.save(encodings, cache)`, then
    `model.cuda()`) holds no GPU tensor."""
    if isinstance(scope, cst.FunctionDef):
        given = frozenset(_parameter_names(scope))
    if isinstance(scope, (cst.For, cst.While)) and _may_place(scope, given):
        return True
    children = list(child_nodes(scope))
    if isinstance(scope, cst.If) and scope.orelse is not None and _holds(scope.orelse, saved):
        children = [scope.test, scope.orelse]  # (the body does not run on the way)
    for child in children:
        if child is saved:
            return False
        if _holds(child, saved):
            return _device_on_the_way(child, saved, given)
        if _may_place(child, given):
            return True
    return False


def _may_place(node: cst.CSTNode, given: frozenset[str]) -> bool:
    if _shows_device(node):
        return True
    return any(
        type(part) is cst.Call and type(part.func) is cst.Name and part.func.value in given
        for part in descendants(node)
    )


def _parameter_names(function: cst.FunctionDef) -> list[str]:
    parameters = function.params
    every = [*parameters.posonly_params, *parameters.params, *parameters.kwonly_params]
    return [parameter.name.value for parameter in every if parameter.name.value != "self"]


def _moved_to_cpu_before(scope: cst.CSTNode, saved: cst.CSTNode) -> bool:
    """Whether ``saved`` is moved to the CPU (`feats.cpu()`), or is a name the statements of
    its own block last bind, before the save, to a value moved there (`feats =
    feats.detach().cpu()`, then `torch.save(feats, path)`)."""
    if isinstance(saved, cst.BaseExpression) and _moved_to_cpu(saved):
        return True
    if not isinstance(saved, cst.Name):
        return False
    for block in descendants(scope):
        if not isinstance(block, cst.IndentedBlock):
            continue
        statements = list(block.body)
        at = next((i for i, line in enumerate(statements) if _holds(line, saved)), None)
        if at is None or not isinstance(statements[at], cst.SimpleStatementLine):
            continue  # (the save is deeper in: a block below this one holds its statement)
        for earlier in reversed(statements[:at]):
            if saved.value not in _names_bound_below(earlier):
                continue
            return (
                isinstance(earlier, cst.SimpleStatementLine)
                and len(earlier.body) == 1
                and isinstance(earlier.body[0], cst.Assign)
                and _moved_to_cpu(earlier.body[0].value)
            )
        return False
    return False


def _names_bound_below(statement: cst.CSTNode) -> set[str]:
    return {
        name
        for node in descendants(statement)
        if isinstance(node, (cst.Assign, cst.AnnAssign))
        for name in _bound_names(node)
    } | {
        node.target.value
        for node in descendants(statement)
        if isinstance(node, (cst.AugAssign, cst.For)) and isinstance(node.target, cst.Name)
    }


def _holds(node: cst.CSTNode, part: cst.CSTNode) -> bool:
    return any(found is part for found in descendants(node))


def _device_keyword(node: cst.CSTNode) -> bool:
    return type(node) is cst.Arg and node.keyword is not None and node.keyword.value == "device"


def _names_cpu(device: cst.BaseExpression) -> bool:
    """`"cpu"`, or `torch.device("cpu")`."""
    if (
        type(device) is cst.Call
        and device.args
        and dotted_name(device.func)
        in (
            "torch.device",
            "device",
        )
    ):
        device = device.args[0].value
    return string_value(device) == "cpu"


def _passed_in(scope: Scope) -> set[str]:
    """The parameters of a function other than ``self``/``cls``: what its caller chooses."""
    if not isinstance(scope, cst.FunctionDef):
        return set()
    params = scope.params
    passed = {
        param.name.value
        for param in (*params.posonly_params, *params.params, *params.kwonly_params)
        if param.name.value not in ("self", "cls")
    }
    for extra in (params.star_arg, params.star_kwarg):
        if isinstance(extra, cst.Param):
            passed.add(extra.name.value)
    return passed


def _from_caller(value: cst.BaseExpression, scope: Scope) -> bool:
    """Whether the saved value is (or is made from) a parameter of the saving function:
    ``def save(obj, path): torch.save(obj, path)`` says nothing of ``obj``."""
    passed = _passed_in(scope)
    return any(name in passed for name in _root_names(value))


def _builds_path(node: cst.BaseExpression) -> bool:
    """A path made of others: `tmp`, `tmp.name`, `Path(tmp) / "w.pt"`, `os.path.join(tmp, f)`,
    `f"{tmp}/w.pt"`."""
    if isinstance(node, (cst.Name, cst.Attribute, cst.BinaryOperation, cst.FormattedString)):
        return True
    if isinstance(node, cst.Call):
        name = dotted_name(node.func) or ""
        return name.rpartition(".")[2] in _PATH_BUILDERS
    return False


def _file_name(path: cst.BaseExpression, values: dict[str, cst.BaseExpression]) -> Optional[str]:
    """The file name a path ends in, where written out: `"w.pth"` in `os.path.join(d, "w.pth")`,
    `Path(d) / "w.pth"`, `d + "/w.pth"` or `"out/w.pth"`; or its template, `"%s_net_%s.pth"` in
    `os.path.join(d, "%s_net_%s.pth" % (epoch, label))`. ``values``: the function's names
    assigned once (`save_path = os.path.join(...)`), read through."""
    path = _through(path, values)
    if isinstance(path, cst.Call) and path.args and _method(path) != "format":
        path = _through(path.args[-1].value, values)
    elif isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Divide):
        path = _through(path.right, values)  # `Path(d) / "w.pth"`
    elif isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Add):
        # `d + "/w.pth"`, `d + "/" + "w.pth"`, not a suffix: `d + "_best.pth"`
        path = _added_file(path, values) or path
    if isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Modulo):
        path = path.left  # a template: `"%s_net_%s.pth" % (epoch, label)`
    elif _method(path) == "format":
        path = cast(cst.Attribute, cast(cst.Call, path).func).value
    text = _template(path) if isinstance(path, cst.FormattedString) else string_value(path)
    if text is None:
        return None
    name = text.replace("\\", "/").rpartition("/")[2]
    return name if "." in name.strip(".") else None


def _added_file(
    path: cst.BinaryOperation, values: dict[str, cst.BaseExpression]
) -> Optional[cst.BaseExpression]:
    """The file part of `d + "/w.pth"` or `d + "/" + "w.pth"`."""
    right = _through(path.right, values)
    text = string_value(right)
    if text is None:
        return None
    if text.startswith(("/", "\\")):
        return right
    left = path.left
    joined = isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Add)
    return (
        right
        if joined and string_value(cast(cst.BinaryOperation, left).right) in ("/", "\\")
        else None
    )


def _folder_of(path: cst.BaseExpression, values: dict[str, cst.BaseExpression]) -> Optional[str]:
    """The folder a path is built in, as a plain name: `d` in `os.path.join(d, "w.pth")`,
    `d + "/" + "w.pth"`, `d + "/w.pth"`, `Path(d) / "w.pth"`."""
    path = _through(path, values)
    folder: Optional[cst.BaseExpression] = None
    if isinstance(path, cst.Call) and len(path.args) == 2 and _method(path) != "format":
        folder = path.args[0].value
    elif isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Divide):
        folder = path.left
    elif (
        isinstance(path, cst.BinaryOperation)
        and isinstance(path.operator, cst.Add)
        and _added_file(path, values) is not None
    ):
        left = path.left
        slash = isinstance(left, cst.BinaryOperation) and string_value(left.right) in ("/", "\\")
        folder = cast(cst.BinaryOperation, left).left if slash else left
    if isinstance(folder, cst.Call) and len(folder.args) == 1:
        folder = folder.args[0].value  # `Path(d)`
    return folder.value if isinstance(folder, cst.Name) else None


def _template(path: cst.FormattedString) -> Optional[str]:
    """An f-string's template, `{}` for each value (`"gather_{}_{}.pkl"`), where its words
    name a file family: at least four letters outside the values and the extension."""
    parts = [
        part.value if isinstance(part, cst.FormattedStringText) else "{}" for part in path.parts
    ]
    text = "".join(parts)
    words = text.replace("{}", "").rpartition("/")[2].rpartition(".")[0]
    return text if sum(letter.isalpha() for letter in words) >= 4 else None


def _through(
    value: cst.BaseExpression, values: dict[str, cst.BaseExpression]
) -> cst.BaseExpression:
    """What a name assigned once holds, a few names deep."""
    for _ in range(3):
        if not isinstance(value, cst.Name) or value.value not in values:
            break
        value = values[value.value]
    return value


def _assigned_once(scope: Scope) -> dict[str, cst.BaseExpression]:
    """The plain names ``scope`` assigns exactly once, with their values."""
    counts: dict[str, int] = {}
    values: dict[str, cst.BaseExpression] = {}
    for node in descendants(scope):
        if type(node) is cst.Assign:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    name = target.target.value
                    counts[name] = counts.get(name, 0) + 1
                    values[name] = node.value
    return {name: value for name, value in values.items() if counts[name] == 1}


def _moved_to_cpu(value: cst.BaseExpression) -> bool:
    """`x.cpu()`, `x.detach().cpu()`, `x.to("cpu")`, and the state of a module moved there:
    `net.cpu().state_dict()`."""
    method = _method(value)
    if method == "state_dict":
        return _moved_to_cpu(cast(cst.Attribute, cast(cst.Call, value).func).value)
    if method == "cpu":
        return True
    arguments = cast(cst.Call, value).args if method == "to" else ()
    return bool(arguments) and _names_cpu(arguments[0].value)


def _call_parts(call: cst.Call) -> Iterator[cst.BaseExpression]:
    """A call's arguments, and the object whose method it is (`f` of `f.save(sd)`)."""
    if isinstance(call.func, cst.Attribute):
        yield call.func.value
    yield from (arg.value for arg in call.args)


def _hands_to(call: cst.Call, functions: frozenset[str]) -> bool:
    """Whether ``call`` runs one of ``functions``: `split(src, tmp)`, or hands it on to run,
    `mp.spawn(worker, args=(tmp,))`, `Process(target=worker, args=(tmp,))`."""
    named = [call.func, *(arg.value for arg in call.args)]
    return any(dotted_name(node) in functions for node in named)


def _is_save(call: cst.Call) -> bool:
    """`model.save_pretrained(tmp)`, `torch.save(x, file)`, `save(...)`: this process writing
    its own objects (a download, `get_file(url, tmp)`, is none)."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else dotted_name(func) or ""
    return name == "save" or name.startswith("save_")


def _exclusive_branches(scope: Scope, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """Whether an `if` runs one node in its body and the other in its `else`, or after a body
    that always leaves: a cache's load and its save (`if exists: x = torch.load(p)` / `else:
    x = make(); torch.save(x, p)`, or `if exists: return torch.load(p)`, then the save)."""
    for node in descendants(scope):
        if type(node) is not cst.If:
            continue
        body = set(map(id, descendants(node.body)))
        if node.orelse is not None:
            orelse = set(map(id, descendants(node.orelse)))
            if (id(first) in body and id(second) in orelse) or (
                id(first) in orelse and id(second) in body
            ):
                return True
        elif id(first) in body and suite_exits(node.body) and _runs_after(scope, node, second):
            return True
    return False


def _runs_after(scope: Scope, statement: cst.If, node: cst.CSTNode) -> bool:
    """Whether ``node`` lies in a statement after ``statement`` in the block that holds it."""
    for block in descendants(scope):
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)) or statement not in body:
            continue
        later = body[body.index(statement) + 1 :]
        return any(id(node) in set(map(id, descendants(part))) for part in later)
    return False


def _root_names(node: cst.CSTNode) -> list[str]:
    """The names an expression reads (`self` in `self.paths[0]`, not `paths`)."""
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, cst.Attribute):
        return _root_names(node.value)
    return [name for child in child_nodes(node) for name in _root_names(child)]


def _bound_names(statement: cst.BaseSmallStatement) -> list[str]:
    if isinstance(statement, cst.Assign):
        return [name for target in statement.targets for name in _root_names(target.target)]
    if isinstance(statement, cst.AnnAssign):
        return _root_names(statement.target)
    if isinstance(statement, (cst.Import, cst.ImportFrom)) and not isinstance(
        statement.names, cst.ImportStar
    ):
        return [
            _root_names(alias.asname.name)[0] if alias.asname else _root_names(alias.name)[0]
            for alias in statement.names
        ]
    return []


class CheckpointEvidence:
    """Answers, for one file, what the file says about each of its ``torch.load`` calls."""

    def __init__(
        self,
        module: cst.Module,
        names: ImportMap,
        cpu_only: Callable[[], bool] = lambda: False,
        project_saves: Callable[[], SaveConvention] = lambda: SaveConvention(None),
    ) -> None:
        self._module = module
        self._names = names
        # How the project saves (see `project_saves`), asked where a load's path or its
        # checkpoint needs it.
        self._project_saves = project_saves
        # Whether nothing the file runs can place a value on a device (see `cpu_only`), asked
        # once, where a save of the loaded path needs it.
        self._ask_cpu_only = cpu_only
        self._cpu_only: Optional[bool] = None
        # Per file, computed on the first load that needs it: (key, saved value, saving scope).
        self._saves: Optional[list[tuple[str, cst.BaseExpression, Scope]]] = None
        # The file name each save writes, where written out (`"trainfeat.pth"`), and its value.
        self._named_saves: list[tuple[str, cst.BaseExpression, Scope]] = []
        # Per scope: `with open(path, "wb") as f` makes `f` stand for `path`.
        self._aliases: dict[int, dict[str, str]] = {}
        self._alias_nodes: dict[int, dict[str, cst.BaseExpression]] = {}
        self._globals: Optional[set[str]] = None
        self._assigned: dict[int, dict[str, cst.BaseExpression]] = {}  # per scope, on demand
        # The attributes of `self` that always hold CPU tensors (see `_cpu_attributes`).
        self._cpu_attributes: Optional[set[str]] = None
        self._no_gpus: Optional[bool] = None
        self._default_device: Optional[bool] = None  # see `_sets_default_device`
        self._savers: Optional[frozenset[str]] = None  # see `_saving_functions`

    def evidence(
        self,
        load: cst.Call,
        scope: Scope,
        statement: Optional[cst.CSTNode],
        classes: Sequence[str] = (),
    ) -> LoadEvidence:
        """What the file says about ``load``, made in ``scope`` (inside a class whose own name
        and bases' are ``classes``)."""
        path = argument(load, 0, "f")
        if path is None:
            return LoadEvidence(safe="no path to read evidence from")  # `torch.load(*args)`
        if self._hides_gpus():
            return LoadEvidence(safe="this file hides every GPU (`CUDA_VISIBLE_DEVICES`)")
        saves = self._file_saves()
        key = self._resolve(scope, source_key(path.value, self._module))
        round_trip = self._round_trip_keys(scope, load)
        located = self._located_name(path.value, scope)
        if (
            located is not None
            and "{}" in located
            and not self._same_family(path.value, load, scope)
        ):
            located = None  # (`f"{args.teacher}.pth"` is another file than `f"{args.student}.pth"`)
        if key in round_trip or (located is not None and located in round_trip):
            # (the same path, or a file of the same name in the same folder: `os.path.join(
            # save_dir, f"gather_{rank}.pkl")` for each rank)
            return LoadEvidence(safe="saved by the same function")
        name = _file_name(path.value, self._assigned_in(scope))
        if self._temporary(path.value, scope):
            return LoadEvidence(safe="in a temporary place the same function made")
        same_run = self._saved_earlier_in_this_run(path.value, scope)
        if same_run is None:
            same_run = self._saved_by_a_call_before(load, path.value, scope)
        if same_run is not None:
            return LoadEvidence(safe=same_run)
        checkpoint = self._loaded_into(load, scope, statement, self._checkpoint_use)
        if checkpoint is None:
            tensorless = self._loaded_into(load, scope, statement, _tensorless_use)
            if tensorless is None and self._returned_as_array(load, scope):
                tensorless = "the function returns it as a numpy array (its annotation)"
            if tensorless is not None:
                return LoadEvidence(safe=tensorless)
        named = [(value, where) for saved, value, where in self._named_saves if saved == name]
        if named and all(self._cpu_value(value) for value, _ in named):
            # Another folder perhaps (`args.dump_features` / `args.load_features`), but the file
            # this file writes under that name always holds what it moved to the CPU; a
            # checkpoint too (`network.cpu().state_dict()`): this code saves them so.
            return LoadEvidence(safe=f'this file saves "{name}" from values moved to the CPU')
        restored = self._loaded_into(load, scope, statement, _restoring_receiver)
        # Wherever the caller points, the object restores what this code saved from it (an
        # attribute of `self`: one object, not a caller's model of the same name).
        if (
            restored is not None
            and restored.startswith("self.")
            and self._saves_own_state(restored)
            and self._runs_on_cpu_only()
        ):
            return LoadEvidence(
                safe=f"this file saves `{restored}`'s state and moves nothing to a device"
            )
        chosen_by_caller = self._chosen_by_caller(path.value, scope)
        # A local `path` of another function is another file.
        same_everywhere = self._same_everywhere(path.value, scope)
        loaded = _assigned_name(statement, load) if statement is not None else None
        matching = [
            (value, saving_scope)
            for saved_key, value, saving_scope in saves
            if saved_key == key and (saving_scope is scope or same_everywhere)
        ]
        if matching and all(_moved_to_cpu_before(where, value) for value, where in matching):
            # `feats = feats.detach().cpu()`, then `torch.save(feats, save_file)`
            return LoadEvidence(safe="this file moves what it saves there to the CPU first")
        for saved_key, value, saving_scope in saves:
            # The loading function's own save of the path (a cache: load it if it exists, else
            # compute and save it) names the file it reads, wherever its caller points it.
            own = saving_scope is scope
            if saved_key != key or not (own or same_everywhere):
                continue
            if (
                own
                and loaded is not None
                and loaded in _root_names(value)
                and not _exclusive_branches(scope, load, value)
            ):
                continue  # the loaded checkpoint, upgraded and saved back: no evidence
            made_here = (own or not chosen_by_caller) and not _from_caller(value, saving_scope)
            if made_here and self._runs_on_cpu_only():
                return LoadEvidence(safe="saved by this file, which moves nothing to a device")
            if (
                made_here
                and not self._sets_default_device()
                and _local_made_on_cpu(value, saving_scope, self._names)
            ):
                return LoadEvidence(safe="saved by this file from a tensor it made on the CPU")
            if _shows_device(value) or _device_on_the_way(saving_scope, value):
                return LoadEvidence(checkpoint=checkpoint or self._saved_from(value))
            if checkpoint is None and made_here:
                return LoadEvidence(safe="saved by this file from CPU values")
        if checkpoint is None and _is_dataset(classes) and not self._used_as_model(load, statement):
            # A dataset's tensors feed a DataLoader, which prepares them on the CPU.
            return LoadEvidence(safe="a dataset's data file: its loader reads CPU tensors")
        if checkpoint is None:
            # (saved from a device under its name: the project's convention for its weights
            # does not hold for this file)
            device_saved = [value for value, where in named if _device_on_save(where, value)]
            if device_saved:
                return LoadEvidence(checkpoint=self._saved_from(device_saved[0]))
            checkpoint = self._named_as_checkpoint(path.value, scope, load)
            if checkpoint is None and self._used_as_model(load, statement):
                checkpoint = "the result is used as a model"
            if checkpoint is None:
                return LoadEvidence(safe="nothing shows a checkpoint or a device")
        saver = self._weights_saver(load, scope, statement)
        if saver is not None:
            return LoadEvidence(safe=f"this project saves its weights moved to the CPU ({saver})")
        return LoadEvidence(checkpoint=checkpoint)

    def _named_as_checkpoint(
        self, path: cst.BaseExpression, scope: Scope, load: cst.Call
    ) -> Optional[str]:
        """Where the author names what is loaded a checkpoint (see `checkpoint_names`): its
        path, read through a `with open(...) as f` or the path's one assignment, the names the
        result is assigned to, the objects storing it, or a function returning it."""
        named = [
            self._module.code_for_node(path),
            self._resolve(scope, source_key(path, self._module)),  # `f` of `open("model.pt")`
        ]
        assigned = self._assigned_in(scope).get(dotted_name(path) or "")
        if assigned is not None:
            named.append(self._module.code_for_node(assigned))  # `path = Path(tmp) / "ckpt.pt"`
        loaded = assigned_names(scope, load)
        named.extend(loaded)
        named.extend(storing_receivers(scope, load))
        if isinstance(scope, cst.FunctionDef) and returns_result(scope, load, loaded):
            named.append(scope.name.value)  # `def load_checkpoint(path): return torch.load(path)`
        if any(names_data(text) for text in named):
            return None  # `state = torch.load(path)` in `def load_random_states(...)`
        for text in named:
            token = naming_token(text)
            if token is not None:
                return f"`{_clipped(token)}` names one"
        return None

    def _weights_saver(
        self, load: cst.Call, scope: Scope, statement: Optional[cst.CSTNode]
    ) -> Optional[str]:
        """Where the project saves its weights moved to the CPU, if it always does; not for a
        load restoring an optimizer (`optimizer.load_state_dict(...)`) where the project saves
        one's state as it is."""
        convention = self._project_saves()
        if convention.cpu_saver is None or not convention.optimizer_saved_as_is:
            return convention.cpu_saver
        # (only a receiver known by name, and not an optimizer's: `self.optimizers[i]` may be)
        restored = self._loaded_into(load, scope, statement, _weights_receiver) or ""
        if not restored or OPTIMIZER_NAME.search(restored.rpartition(".")[2]):
            return None
        return convention.cpu_saver

    def _sets_default_device(self) -> bool:
        """Whether the file sets a default device (`torch.set_default_device("cuda")`): its
        factories then make their tensors there."""
        if self._default_device is None:
            self._default_device = any(
                type(node) is cst.Call
                and self._names.qualified_name(node.func) in _DEFAULT_DEVICE_SETTERS
                for node in descendants(self._module)
            )
        return self._default_device

    def _hides_gpus(self) -> bool:
        """A top-level `os.environ["CUDA_VISIBLE_DEVICES"] = ""` (or `"-1"`): the process that
        runs this file, its author's included, sees no GPU."""
        if self._no_gpus is None:
            hidden = [
                _hides_gpus(small, self._names)
                for statement in self._module.body
                if isinstance(statement, cst.SimpleStatementLine)
                for small in statement.body
            ]
            # (and no assignment anywhere shows one again: `= args.gpu`)
            self._no_gpus = any(hidden) and not any(
                _sets_visible_devices(node, self._names) and not _hides_gpus(node, self._names)
                for node in descendants(self._module)
                if isinstance(node, cst.Assign)
            )
        return self._no_gpus

    def _cpu_value(self, value: cst.BaseExpression) -> bool:
        """A value moved to the CPU (`feats.cpu()`), or an attribute of `self` every assignment
        makes on the CPU, which nothing moves and the file reads as a NumPy array (`self.log`,
        plotted with `self.log[:, i].numpy()`): a CPU tensor."""
        if _moved_to_cpu(value):
            return True
        if self._cpu_attributes is None:
            self._cpu_attributes = _cpu_attributes(self._module, self._names)
        return dotted_name(value) in self._cpu_attributes

    def _saved_earlier_in_this_run(self, path: cst.BaseExpression, scope: Scope) -> Optional[str]:
        """Why what a load of ``path`` in ``scope`` reads was written by this process, on this
        machine, before it:
        - a test (`def test_x(weights_path):`) given a fixture of the file (`@pytest.fixture
          def weights_path(tmp_path_factory):`) that saves into a temporary place and returns
          that path: pytest runs the fixture first;
        - a method of an object whose `__init__` saves that file name, written out, in its own
          statements (`torch.save(model.state_dict(), "init_params.pt")`, read back by
          `range_test`): `__init__` ran first."""
        if not isinstance(scope, cst.FunctionDef):
            return None
        if isinstance(path, cst.Name) and path.value in _passed_in(scope):
            fixture = self._fixture(path.value)
            is_test = scope.name.value.startswith("test")
            if is_test and fixture is not None and self._returns_temporary_save(fixture):
                return f"written by the fixture `{path.value}` into a temporary place, this run"
        name = string_value(path)
        init = self._init_of(scope) if name is not None and _plain_method(scope) else None
        if init is None:
            return None
        # (its own statements only: not a save under an `if`)
        lines = [line for line in init.body.body if isinstance(line, cst.SimpleStatementLine)]
        for target in self._save_targets(node for line in lines for node in descendants(line)):
            if string_value(target) == name:
                return "saved by the object's `__init__` before its other methods run"
        return None

    def _saved_by_a_call_before(
        self, load: cst.Call, path: cst.BaseExpression, scope: Scope
    ) -> Optional[str]:
        """`early_stopping(loss, model, path)` in a training loop, then `torch.load(path + "/"
        + "checkpoint.pth")`: the folder was handed, before the load, to a call that reaches a
        function of the project saving that file name into the folder its caller gives (see
        `project_saves`): by its name, a method of its class calling it, or an instance of
        its class called (`__call__`)."""
        if not isinstance(scope, cst.FunctionDef):
            return None
        values = self._assigned_in(scope)
        name, folder = _file_name(path, values), _folder_of(path, values)
        if name is None or folder is None:
            return None
        saved = self._project_saves().into_callers_folders.get(name)
        if saved is None:
            return None
        for node in descendants(scope):
            if node is load:
                break
            if not isinstance(node, cst.Call):
                continue
            handed = any(
                isinstance(passed.value, cst.Name) and passed.value.value == folder
                for passed in node.args
            )
            if (
                handed
                and self._reaches(node, values, saved.reached_through)
                and not _exclusive_branches(scope, node, load)
            ):
                shown = _short(self._module, node.func)
                return (
                    f"saved earlier in this run: `{shown}` is given `{folder}`, and saves "
                    f'"{name}" into it ({saved.where})'
                )
        return None

    @staticmethod
    def _reaches(
        call: cst.Call, values: dict[str, cst.BaseExpression], through: frozenset[str]
    ) -> bool:
        """Whether ``call`` calls one of ``through`` by name (`self.save_checkpoint(...)`), or
        an instance the function made of one (`early_stopping = EarlyStopping(...)`)."""
        called = dotted_name(call.func) or ""
        if called.rpartition(".")[2] in through:
            return True
        made = values.get(called)
        made_by = dotted_name(made.func) or "" if isinstance(made, cst.Call) else ""
        return bool(made_by) and made_by.rpartition(".")[2] in through

    def _is_torch_save(self, node: cst.CSTNode) -> TypeGuard[cst.Call]:
        return type(node) is cst.Call and self._names.qualified_name(node.func) == "torch.save"

    def _save_targets(self, nodes: Iterable[cst.CSTNode]) -> Iterator[cst.BaseExpression]:
        """Where the `torch.save` calls among ``nodes`` write."""
        for node in nodes:
            if self._is_torch_save(node):
                target = argument(node, 1, "f")
                if target is not None:
                    yield target.value

    def _fixture(self, name: str) -> Optional[cst.FunctionDef]:
        """The module's pytest fixture called ``name``, if any."""
        for statement in self._module.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
                for decorator in statement.decorators:
                    called = decorator.decorator
                    if isinstance(called, cst.Call):
                        called = called.func
                    if (dotted_name(called) or "").rpartition(".")[2] == "fixture":
                        return statement
        return None

    def _returns_temporary_save(self, fixture: cst.FunctionDef) -> bool:
        """Whether every value ``fixture`` returns is a temporary path it saved into."""
        returned = [
            node.value
            for node in descendants(fixture)
            if type(node) is cst.Return and node.value is not None
        ]
        return bool(returned) and all(self._temporary(value, fixture) for value in returned)

    def _init_of(self, scope: cst.FunctionDef) -> Optional[cst.FunctionDef]:
        """The `__init__` of the class whose method ``scope`` is."""
        for node in descendants(self._module):
            if type(node) is cst.ClassDef and isinstance(node.body, cst.IndentedBlock):
                methods = [item for item in node.body.body if isinstance(item, cst.FunctionDef)]
                if any(method is scope for method in methods):
                    return next((m for m in methods if m.name.value == "__init__"), None)
        return None

    def _saves_own_state(self, restored: str) -> bool:
        """Whether the file saves ``restored``'s state (`torch.save(self.actor.state_dict(),
        path)`), of an object of its own, not one its caller passed in."""
        for _, value, saving_scope in self._file_saves():
            if _method(value) != "state_dict" or _from_caller(value, saving_scope):
                continue
            if dotted_name(cast(cst.Attribute, cast(cst.Call, value).func).value) == restored:
                return True
        return False

    def _runs_on_cpu_only(self) -> bool:
        if self._cpu_only is None:
            self._cpu_only = self._ask_cpu_only()
        return self._cpu_only

    def _used_as_model(self, load: cst.Call, statement: Optional[cst.CSTNode]) -> bool:
        """Whether what ``load`` returns is used as a whole model: called, or given a module's
        method (`torch.load(p).eval()`, `self.encoder = torch.load(p)` then `self.encoder(x)`)."""
        loaded = _assigned_name(statement, load) if statement is not None else None
        where = self._module if loaded is not None else statement
        if where is None:
            return False

        def is_loaded(node: cst.BaseExpression) -> bool:
            return node is load or (loaded is not None and dotted_name(node) == loaded)

        for node in descendants(where):
            if type(node) is not cst.Call:
                continue
            func = node.func
            if is_loaded(func):
                return True
            method = func.attr.value if isinstance(func, cst.Attribute) else None
            if method in _MODEL_METHODS and is_loaded(cast(cst.Attribute, func).value):
                return True
        return False

    def _temporary(self, path: cst.BaseExpression, scope: Scope) -> bool:
        """Whether ``path`` is built from a temporary directory or file ``scope`` made, directly
        or through the names assigned from it (`file = os.path.join(tmp, "w.bin")`), and
        ``scope`` saves into that same place (`model.save_pretrained(tmp)`)."""
        # Each name's temporary places: the `with ... as tmp` or `tmp = mkdtemp()` it comes from.
        places: dict[str, set[str]] = {
            name: {name} for name in _TEMPORARY_FIXTURES & _passed_in(scope)
        }
        assignments: list[tuple[str, cst.BaseExpression]] = []
        carriers: set[int] = set()
        for node in descendants(scope):
            if type(node) is cst.WithItem and isinstance(node.asname, cst.AsName):
                target = node.asname.name
                if isinstance(target, cst.Name) and self._makes_temporary(node.item):
                    places[target.value] = {target.value}
                elif isinstance(target, cst.Name) and isinstance(node.item, cst.Call):
                    # `with incremental_save(path) as f`: a writer of the place, `f.save(sd)`
                    assignments.append((target.value, node.item))
                    carriers.add(id(node.item))
            elif type(node) is cst.Assign and len(node.targets) == 1:
                assigned = node.targets[0].target
                if isinstance(assigned, cst.Name):
                    assignments.append((assigned.value, node.value))
            elif type(node) is cst.For:
                # `for i, file in enumerate(files)`: the items of a list of the place's paths
                assignments.extend((name, node.iter) for name in _root_names(node.target))
                carriers.add(id(node.iter))
        for name, value in assignments * 2:  # twice: a name assigned from one assigned later
            if self._makes_temporary(value):
                places[name] = {name}
            if not _builds_path(value) and id(value) not in carriers:
                continue  # what is read from the place (`state = torch.load(file)`) is no path
            for root in _root_names(value):
                if root in places and root != name:
                    places.setdefault(name, set()).update(places[root])

        def places_of(node: cst.CSTNode) -> set[str]:
            return {place for root in _root_names(node) for place in places.get(root, ())}

        read = places_of(path)
        savers = self._saving_functions()
        return bool(read) and any(
            (_is_save(node) or _hands_to(node, savers))
            and any(places_of(part) & read for part in _call_parts(node))
            for node in descendants(scope)
            if type(node) is cst.Call
        )

    def _saving_functions(self) -> frozenset[str]:
        """The file's module-level functions that save (`def split_files(src, tmp): ...
        torch.save(part, os.path.join(tmp, name))`): a call handing them a place writes there."""
        if self._savers is None:
            self._savers = frozenset(
                statement.name.value
                for statement in self._module.body
                if isinstance(statement, cst.FunctionDef)
                and any(
                    type(node) is cst.Call and _is_save(node)
                    for node in descendants(statement.body)
                )
            )
        return self._savers

    def _makes_temporary(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Attribute) and node.attr.value == "name":
            node = node.value  # `tmp.name` of a `NamedTemporaryFile`
        elif isinstance(node, cst.Subscript):
            node = node.value  # `tempfile.mkstemp()[1]`
        if not isinstance(node, cst.Call):
            return False
        return self._names.qualified_name(node.func) in _TEMPORARY_PLACES

    def _chosen_by_caller(self, path: cst.BaseExpression, scope: Scope) -> bool:
        """A path made from the loading function's parameters (`os.path.join(path, name)`, or
        `f` opened from one) may name any file, whatever this file saves there."""
        if isinstance(path, cst.Name):
            path = self._alias_nodes.get(id(scope), {}).get(path.value, path)
        passed = _passed_in(scope)
        return any(name in passed for name in _root_names(path))  # `self.root` is no `root`

    def _same_everywhere(self, path: cst.BaseExpression, scope: Scope) -> bool:
        """Whether the path names one file in every function: built from literals, `self`
        attributes and module-level names only (`self.processed_paths[0]`, `CACHE_FILE`)."""
        if isinstance(path, cst.Name):
            path = self._alias_nodes.get(id(scope), {}).get(path.value, path)
        # a parameter or a local of the loading function shadows the module's name
        local = _passed_in(scope) | set(self._assigned_in(scope))
        known = (self._module_names() - local) | _BUILTINS
        return all(name in known for name in _root_names(path))

    def _module_names(self) -> set[str]:
        """Names bound at module level: definitions, assignments, imports."""
        if self._globals is None:
            self._globals = set()
            for statement in self._module.body:
                if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                    self._globals.add(statement.name.value)
                elif isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        self._globals.update(_bound_names(small))
        return self._globals

    def _saved_from(self, value: cst.BaseExpression) -> str:
        return f"this file saves it from `{_short(self._module, value)}`"

    def _file_saves(self) -> list[tuple[str, cst.BaseExpression, Scope]]:
        if self._saves is None:
            self._saves = []
            self._collect_saves(self._module, self._module)
        return self._saves

    def _assigned_in(self, scope: Scope) -> dict[str, cst.BaseExpression]:
        if id(scope) not in self._assigned:
            self._assigned[id(scope)] = _assigned_once(scope) if scope is not self._module else {}
        return self._assigned[id(scope)]

    def _resolve(self, scope: Scope, key: str) -> str:
        return self._aliases.get(id(scope), {}).get(key, key)

    def _collect_saves(self, node: cst.CSTNode, scope: Scope) -> None:
        assert self._saves is not None
        if type(node) is cst.With:
            aliases = self._aliases.setdefault(id(scope), {})
            for item in node.items:
                if item.asname is not None and isinstance(item.asname.name, cst.Name):
                    aliases[item.asname.name.value] = source_key(item.item, self._module)
                    nodes = self._alias_nodes.setdefault(id(scope), {})
                    nodes[item.asname.name.value] = item.item
        for child in child_nodes(node):
            if type(child) is cst.FunctionDef:
                self._collect_saves(child, child)
                continue
            if self._is_torch_save(child):
                value, target = argument(child, 0, "obj"), argument(child, 1, "f")
                if value is not None and target is not None:
                    key = self._resolve(scope, source_key(target.value, self._module))
                    self._saves.append((key, value.value, scope))
                    name = _file_name(target.value, self._assigned_in(scope))
                    if name is not None:
                        self._named_saves.append((name, value.value, scope))
            self._collect_saves(child, scope)

    def _same_family(self, path: cst.BaseExpression, load: cst.Call, scope: Scope) -> bool:
        """Whether a save of the scope before the load writes the loaded f-string's file: each
        value the same as the save's, or a loop's variable around the load (`for rank in
        range(world_size):` ... `f"part_{rank}.pkl"`, each rank's file in turn)."""
        loaded = self._slots(path, scope)
        if loaded is None:
            return False
        looped = {
            name.value
            for node in descendants(scope)
            if isinstance(node, cst.For) and any(inner is load for inner in descendants(node.body))
            for name in descendants(node.target)
            if isinstance(name, cst.Name)
        }
        for node in descendants(scope):
            if node is load:
                return False
            target = argument(node, 1, "f") if self._is_torch_save(node) else None
            saved = self._slots(target.value, scope) if target is not None else None
            if (
                saved is not None
                and len(saved) == len(loaded)
                and all(mine == theirs or mine in looped for mine, theirs in zip(loaded, saved))
            ):
                return True
        return False

    def _slots(self, path: cst.BaseExpression, scope: Scope) -> Optional[list[str]]:
        """The values of the f-string naming a path's file, as written."""
        values = self._assigned_in(scope)
        string = _through(path, values)
        if isinstance(string, cst.Call) and string.args:
            string = _through(string.args[-1].value, values)
        if not isinstance(string, cst.FormattedString):
            return None
        return [
            self._module.code_for_node(part.expression)
            for part in string.parts
            if isinstance(part, cst.FormattedStringExpression)
        ]

    def _located_name(self, path: cst.BaseExpression, scope: Scope) -> Optional[str]:
        """A path's folder, as written, and its file name or template: `save_dir` and
        `"gather_{}.pkl"` in `os.path.join(save_dir, f"gather_{rank}.pkl")`."""
        values = self._assigned_in(scope)
        name = _file_name(path, values)
        path = _through(path, values)
        if name is None or not isinstance(path, cst.Call) or len(path.args) < 2:
            return None
        folder = ", ".join(source_key(part.value, self._module) for part in path.args[:-1])
        return f"{_NAMED}{folder}/{name}"

    def _round_trip_keys(self, scope: Scope, load: cst.Call) -> set[str]:
        """What the function saves into before the load, and names bound from those buffers
        (``data = buffer.getvalue()``). A save after the load (a checkpoint upgraded in place)
        is no round trip, nor one in the other branch of an `if` (`if args.train: ... save` /
        `else: load`), nor one in a function defined there unless the scope calls it before
        the load (`train()`, then the load: not a callback handed on after it)."""
        keys: set[str] = set()
        defined_in: dict[int, str] = {}  # nodes of the functions defined in the scope
        for node in descendants(scope):
            if type(node) in (cst.FunctionDef, cst.Lambda) and node is not scope:
                name = node.name.value if isinstance(node, cst.FunctionDef) else "<lambda>"
                defined_in.update((id(inner), name) for inner in descendants(node))
        called_before: set[str] = set()
        for node in descendants(scope):
            if node is load:
                break
            if type(node) is cst.Call and id(node) not in defined_in:
                called_before.add(dotted_name(node.func) or "")
        for node in descendants(scope):
            if node is load:
                break
            owner = defined_in.get(id(node))
            if owner is not None and owner not in called_before:
                continue
            if self._is_torch_save(node):
                target = argument(node, 1, "f")
                if target is not None and not _exclusive_branches(scope, node, load):
                    keys.add(self._resolve(scope, source_key(target.value, self._module)))
                    located = self._located_name(target.value, scope)
                    if located is not None:
                        keys.add(located)
            elif (
                type(node) is cst.Assign
                and len(node.targets) == 1
                and keys
                and source_key(node.value, self._module) in keys
            ):
                keys.add(source_key(node.targets[0].target, self._module))
        return keys

    def _loaded_into(
        self,
        load: cst.Call,
        scope: Scope,
        statement: Optional[cst.CSTNode],
        use: Callable[[cst.CSTNode, _Matcher], Optional[str]],
    ) -> Optional[str]:
        """How ``use`` finds the result used, in its statement or through the name it is
        assigned to (as a checkpoint: into `load_state_dict`, or read with a checkpoint key);
        None where nothing shows it."""
        if statement is None:
            return None
        for node in descendants(statement):
            found = use(node, lambda value: value is load)
            if found is not None:
                return found
        result = _assigned_name(statement, load)
        if result is None:
            return None
        for node in descendants(scope):
            found = use(node, lambda value: dotted_name(value) == result)
            if found is not None:
                return found
        return None

    def _returned_as_array(self, load: cst.Call, scope: Scope) -> bool:
        """`def init_states(...) -> np.ndarray: return torch.load(path)` (or a name it is
        assigned to, reshaped): the author says the file holds numpy arrays, never on a GPU."""
        return (
            isinstance(scope, cst.FunctionDef)
            and scope.returns is not None
            and annotated_array(scope.returns.annotation, self._names)
            and returns_result(scope, load, assigned_names(scope, load))
        )

    @staticmethod
    def _checkpoint_use(node: cst.CSTNode, is_result: _Matcher) -> Optional[str]:
        if type(node) is cst.Call and _method(node) == "load_state_dict":
            if _tensorless_receiver(node):
                return None
            if any(is_result(value) for arg in node.args for value in _state_dicts_in(arg.value)):
                return "the result goes into `load_state_dict`"
        if type(node) is cst.Subscript and is_result(node.value):
            for element in node.slice:
                index = element.slice
                key = string_value(index.value) if isinstance(index, cst.Index) else None
                if key is not None and (CHECKPOINT_KEY.search(key) or names_checkpoint_key(key)):
                    return f'the result is read with the checkpoint key "{key}"'
        return None


def _hides_gpus(statement: cst.BaseSmallStatement, names: ImportMap) -> bool:
    """`os.environ["CUDA_VISIBLE_DEVICES"] = ""` or `"-1"`: no GPU for the process."""
    return (
        isinstance(statement, cst.Assign)
        and string_value(statement.value) in ("", "-1")
        and _sets_visible_devices(statement, names)
    )


def _sets_visible_devices(statement: cst.BaseSmallStatement, names: ImportMap) -> bool:
    """An assignment to `os.environ["CUDA_VISIBLE_DEVICES"]`."""
    if not isinstance(statement, cst.Assign):
        return False
    for target in statement.targets:
        subscript = target.target
        if (
            isinstance(subscript, cst.Subscript)
            and names.qualified_name(subscript.value) == "os.environ"
            and len(subscript.slice) == 1
            and isinstance(subscript.slice[0].slice, cst.Index)
            and string_value(subscript.slice[0].slice.value) == "CUDA_VISIBLE_DEVICES"
        ):
            return True
    return False


def _cpu_attributes(module: cst.Module, names: ImportMap) -> set[str]:
    """The attributes of ``self`` that hold a CPU tensor wherever the file saves them: every
    assignment makes it on the CPU (a torch factory with no `device=`, a `torch.cat` of it
    and such factories, a `torch.load` of it), nothing moves it (`.cuda()`, `.to(...)`), and
    the file reads it as a NumPy array (`self.log[:, i].numpy()`)."""
    reads: set[str] = set()
    moved: set[str] = set()
    made: dict[str, bool] = {}
    for node in descendants(module):
        method = _method(node)
        if method in ("numpy", "cuda", "to"):
            name = dotted_name(_receiver(cast(cst.Call, node)))
            if name is not None:
                (reads if method == "numpy" else moved).add(name)
        elif type(node) is cst.Assign:
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None and name.startswith("self."):
                    made[name] = made.get(name, True) and _made_on_cpu(node.value, name, names)
                else:  # unpacked (`self.log, n = ...`): not known to be made on the CPU
                    for inner in _root_dotted(target.target):
                        made[inner] = False
    return {name for name, cpu in made.items() if cpu and name in reads and name not in moved}


def _root_dotted(target: cst.BaseExpression) -> list[str]:
    """The dotted names an unpacking target binds."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _root_dotted(element.value)]
    name = dotted_name(target)
    return [name] if name is not None else []


def _made_on_cpu(value: cst.BaseExpression, name: str, names: ImportMap) -> bool:
    """`torch.zeros(1, 3)`, `torch.Tensor()`, `torch.cat((self.log, torch.zeros(1, 3)))`,
    `torch.load(path)` (the file's own save, read back): a value of ``name`` on the CPU."""
    if not isinstance(value, cst.Call):
        return False
    qualified = names.qualified_name(value.func) or ""
    if qualified == "torch.load":
        return True
    if qualified in ("torch.cat", "torch.stack") and value.args:
        joined = value.args[0].value
        if not isinstance(joined, (cst.Tuple, cst.List)):
            return False
        return all(
            dotted_name(item.value) == name or _made_on_cpu(item.value, name, names)
            for item in joined.elements
        )
    if qualified not in FACTORIES or qualified in _DATA_COPIES:
        return False
    # (`**options` may hold a device)
    return not any(_device_keyword(arg) or arg.star == "**" for arg in value.args)


def _local_made_on_cpu(value: cst.BaseExpression, scope: cst.CSTNode, names: ImportMap) -> bool:
    """A name ``scope`` binds only to tensors it makes on the CPU (see `_made_on_cpu`) and
    never moves: `logits = torch.empty(n, k)`, filled in place with `logits[i:j] = out.cpu()`
    (a copy into a CPU tensor stays there), then saved. (A default device the file sets is
    the caller's to rule out.)"""
    if not isinstance(value, cst.Name):
        return False
    name = value.value
    bound = False
    for node in descendants(scope):
        if type(node) is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name and target.target.value == name:
                    if not _made_on_cpu(node.value, name, names) or _loads_onto_a_device(
                        node.value, names
                    ):
                        return False
                    bound = True
                elif dotted_name(target.target) == f"{name}.data":
                    return False  # `logits.data = gpu_tensor`
                elif type(target.target) is not cst.Subscript and name in _root_dotted(
                    target.target
                ):
                    return False  # unpacked (`logits, n = ...`)
        elif isinstance(node, cst.WithItem):
            if isinstance(node.item, cst.Call) and names.qualified_name(node.item.func) == (
                "torch.device"
            ):
                return False  # (`with torch.device("cuda"):` factories make tensors there)
            if node.asname is not None and name in _root_dotted(node.asname.name):
                return False
        elif isinstance(node, (cst.For, cst.AnnAssign, cst.NamedExpr)):
            if name in _root_dotted(node.target):
                return False
        elif (
            _method(node) in ("cuda", "to", "set_")
            and dotted_name(_receiver(cast(cst.Call, node))) == name
        ):
            return False
    return bound


def _loads_onto_a_device(value: cst.BaseExpression, names: ImportMap) -> bool:
    """`torch.load(path, map_location="cuda")`: a load that places what it reads."""
    if not (isinstance(value, cst.Call) and names.qualified_name(value.func) == "torch.load"):
        return False
    where = argument(value, 1, "map_location")
    return where is not None and not _names_cpu(where.value)


def _receiver(call: cst.Call) -> cst.BaseExpression:
    """`self.log` in `self.log[:, i].detach().numpy()`: subscripts and views taken off."""
    value = cast(cst.Attribute, call.func).value
    while True:
        if isinstance(value, cst.Subscript):
            value = value.value
        elif _method(value) in ("detach", "clone", "float", "double", "squeeze"):
            value = cast(cst.Attribute, cast(cst.Call, value).func).value
        elif isinstance(value, cst.Attribute) and value.attr.value == "data":
            value = value.value
        else:
            return value


def _plain_method(function: cst.FunctionDef) -> bool:
    """A method called on an object `__init__` made: not `__init__` itself, not a static or
    class method."""
    decorators = {dotted_name(decorator.decorator) for decorator in function.decorators}
    params = function.params.params
    return (
        function.name.value != "__init__"
        and not decorators & CLASS_LEVEL_DECORATORS
        and bool(params)
        and params[0].name.value == "self"
    )


def _state_dicts_in(passed: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """What a `load_state_dict` argument may read: `sd` of `sd["params"]`, and either branch of
    `sd[key] if key in sd.keys() else sd`."""
    choices = (passed.body, passed.orelse) if isinstance(passed, cst.IfExp) else (passed,)
    for value in choices:
        yield value.value if isinstance(value, cst.Subscript) else value


def _restoring_receiver(node: cst.CSTNode, is_result: _Matcher) -> Optional[str]:
    """`self.actor` in `self.actor.load_state_dict(state)`, where ``state`` is the result."""
    if type(node) is not cst.Call or _method(node) != "load_state_dict":
        return None
    if not any(is_result(arg.value) for arg in node.args):
        return None
    return dotted_name(cast(cst.Attribute, node.func).value)


def _weights_receiver(node: cst.CSTNode, is_result: _Matcher) -> Optional[str]:
    """`model` in `model.load_state_dict(sd["params"] if "params" in sd else sd)`, where ``sd``
    is the result: what restores the weights read, by name."""
    return _restoring_receiver(
        node, lambda passed: any(is_result(value) for value in _state_dicts_in(passed))
    )


def _is_dataset(classes: Sequence[str]) -> bool:
    """A dataset class, by its own name or a base's (`ExpertDataset`, `data.Dataset`)."""
    return any(name.rpartition(".")[2].endswith("Dataset") for name in classes)


def _tensorless_receiver(call: cst.Call) -> Optional[str]:
    """`scheduler` in `scheduler.load_state_dict(...)`, where its name says its state holds no
    tensors."""
    receiver = dotted_name(cast(cst.Attribute, call.func).value)
    last = receiver.rpartition(".")[2] if receiver else ""
    return receiver if receiver and _TENSORLESS_STATE.search(last) else None


def _tensorless_use(node: cst.CSTNode, is_result: _Matcher) -> Optional[str]:
    """A use showing the file holds no tensor on a device: a state of numbers, or a
    generator's state (`torch.get_rng_state()` is a CPU tensor, even CUDA's). (Tensors read
    with `.numpy()` show only that the author's file held CPU tensors: `map_location="cpu"` is
    what lets a GPU-saved one be read so.)"""
    if type(node) is not cst.Call:
        return None
    method = _method(node)
    if method == "load_state_dict":  # `scheduler.load_state_dict(...)`, a method: a receiver
        receiver = _tensorless_receiver(node)
        if receiver is not None and any(is_result(arg.value) for arg in node.args):
            return f"the result goes into `{receiver}.load_state_dict`, a state of numbers"
    elif _sets_rng_state(node) and any(is_result(_unsubscripted(a.value)) for a in node.args):
        return "the result goes into a random generator's state setter"
    return None


def _sets_rng_state(call: cst.Call) -> bool:
    name = dotted_name(call.func) or ""
    return name.rpartition(".")[2] in _RNG_SETTER_METHODS or name in _RNG_SETTERS


def _unsubscripted(value: cst.BaseExpression) -> cst.BaseExpression:
    """`state` in `state["cpu"]` or `state["a"][0]`."""
    while isinstance(value, cst.Subscript):
        value = value.value
    return value


def _assigned_name(statement: cst.CSTNode, load: cst.Call) -> Optional[str]:
    """``state`` in ``state = torch.load(...)``."""
    if type(statement) is not cst.SimpleStatementLine:
        return None
    for small in statement.body:
        if isinstance(small, cst.Assign) and small.value is load and len(small.targets) == 1:
            return dotted_name(small.targets[0].target)
        if isinstance(small, cst.AnnAssign) and small.value is load:
            return dotted_name(small.target)
    return None
