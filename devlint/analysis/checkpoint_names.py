"""What an author's names say a ``torch.load`` reads: a checkpoint, or numpy arrays.

A load that shows no checkpoint use may still be named one: its path (`args.ckpt_path`,
`"model_best.pth"`), the name the result is assigned to (`state_dict = torch.load(f)`), the
object storing it (`states.append(torch.load(f))`), or a loader function returning it (`def
load_checkpoint(path): return torch.load(path)`). Names are read as words (`ckptPath` is `ckpt`
and `path`), whole, so `statement` or `subnet` say nothing; compounds that name data
(`random_state`, `class_weights`, `hidden_states`) are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Optional, Union

import libcst as cst

from devlint.analysis.names import ImportMap, dotted_name
from devlint.traversal import child_nodes

Scope = Union[cst.Module, cst.FunctionDef]

# Words naming a checkpoint or its parts, in a path or a name (`ckpt_path`, `model_state`).
CHECKPOINT_WORD = re.compile(
    r"ckpts?|checkpoints?|states?|sd|models?|optims?|optimizers?|weights?|params?|parameters"
    r"|snapshots?|pretrained|resume|ema|nets?|networks?|encoder|decoder|backbone|generator"
    r"|discriminator|teacher|student|lora|adapters?|actor|critic|policy"
)
# Words before a checkpoint word that make the pair name data: `random_state`, `class_weights`.
_DATA_PREFIXES = {
    "state": {"random", "rng", "hidden", "cell", "env", "game", "init", "initial"},
    "states": {"random", "rng", "hidden", "cell", "env", "game", "init", "initial"},
    "weight": {"class", "sample", "loss", "pos"},
    "weights": {"class", "sample", "loss", "pos"},
}
# Methods that store their argument: the receiver's name says what it holds.
_STORING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "set_state"})
# An identifier or a string of a piece of code (its comments left out).
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\"[^\"]*\"|'[^']*'")
_COMMENT = re.compile(r"#[^\n]*")
_ARRAY_TYPES = frozenset({"numpy.ndarray", "numpy.typing.NDArray"})
_OPTIONAL = frozenset({"typing.Optional", "Optional"})
_ARRAY_TEXT = re.compile(r"(np|numpy|npt|numpy\.typing)\.(ndarray|NDArray)\b")


def words(text: str) -> list[str]:
    """The words of identifiers and strings: `ckptPath` and `"model_best.pth"` give `ckpt`,
    `path`, `model`, `best`, `pth`."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return [word for word in re.split(r"[^a-z]+", spaced.lower()) if word]


def naming_token(code: str) -> Optional[str]:
    """The first identifier or string of ``code`` that names a checkpoint (`weight_bytes` in
    `io.BytesIO(weight_bytes)`)."""
    for token in _tokens(code):
        parts = words(token)
        for before, word in zip(["", *parts], parts):
            if CHECKPOINT_WORD.fullmatch(word) and not _data_pair(before, word):
                return token
    return None


def names_data(code: str) -> bool:
    """Whether a name in ``code`` says data with a checkpoint's word and no other (`random_states`,
    `hidden_state`, `class_weights`; not `init_state_dict`, `load_checkpoint_and_rng_state`):
    what such a name holds is no checkpoint, whatever else names it."""
    return any(_names_data_only(words(token)) for token in _tokens(code))


def _tokens(code: str) -> list[str]:
    """The identifiers and strings of a piece of code, its comments left out."""
    return _TOKEN.findall(_COMMENT.sub("", code))


def _data_pair(before: str, word: str) -> bool:
    """`random` before `state`, `class` before `weights`: the pair names data."""
    return before in _DATA_PREFIXES.get(word, ())


def _names_data_only(parts: list[str]) -> bool:
    data = {
        index
        for index in range(1, len(parts))
        if _data_pair(parts[index - 1], parts[index]) and parts[index + 1 : index + 2] != ["dict"]
    }
    others = (
        index
        for index, word in enumerate(parts)
        if index not in data and CHECKPOINT_WORD.fullmatch(word)
    )
    return bool(data) and next(others, None) is None


def names_checkpoint_key(key: str) -> bool:
    """Whether a key the result is read with names a checkpoint's part (`"evaluation/policy"`,
    `"encoder"`); not `"states"`, which a dataset of trajectories also has."""
    return any(
        CHECKPOINT_WORD.fullmatch(word) and word not in ("state", "states", "sd")
        for word in words(key)
    )


def _own_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes below ``node`` outside the functions, classes and lambdas it defines."""
    for child in child_nodes(node):
        yield child
        if not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            yield from _own_nodes(child)


def _holds(node: cst.CSTNode, load: cst.Call) -> bool:
    return node is load or any(part is load for part in _own_nodes(node))


def assigned_names(scope: Scope, load: cst.Call) -> list[str]:
    """The names the result is assigned to, wherever it sits in the value (`checkpoint =
    torch.load(p) if p else None`, `sd = dict(torch.load(p))`, a one-line suite's)."""
    found: list[str] = []
    for node in _own_nodes(scope):
        if isinstance(node, cst.Assign) and _holds(node.value, load):
            found.extend(dotted_name(target.target) or "" for target in node.targets)
        elif (
            isinstance(node, cst.AnnAssign) and node.value is not None and _holds(node.value, load)
        ):
            found.append(dotted_name(node.target) or "")
    return [name for name in found if name]


def storing_receivers(scope: Scope, load: cst.Call) -> list[str]:
    """The objects storing the result: ``states`` in ``states.append(torch.load(f))``,
    ``optim`` in ``optim.set_state(torch.load(path))``, ``self.encoder`` in
    ``self.encoder.load_weights(torch.load(path))``."""
    return [
        dotted_name(node.func.value) or ""
        for node in _own_nodes(scope)
        if isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and (node.func.attr.value in _STORING_METHODS or node.func.attr.value.startswith("load"))
        and any(arg.value is load for arg in node.args)
    ]


def returns_result(scope: Scope, load: cst.Call, loaded: list[str]) -> bool:
    """Whether ``scope`` returns the result: the load itself, or what one of the names it is
    assigned to roots (`return states.reshape(1, -1)`); not a nested function's `return`."""
    for node in _own_nodes(scope):
        if not isinstance(node, cst.Return) or node.value is None:
            continue
        root = node.value
        while isinstance(root, (cst.Attribute, cst.Call, cst.Subscript)):
            root = root.func if isinstance(root, cst.Call) else root.value
        if node.value is load or (isinstance(root, cst.Name) and root.value in loaded):
            return True
    return False


def annotated_array(annotation: cst.BaseExpression, names: ImportMap) -> bool:
    """`np.ndarray`, `npt.NDArray[np.float32]`, `Optional[np.ndarray]`, `np.ndarray | None`,
    or any of them written as a string."""
    if isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        return isinstance(text, str) and bool(_ARRAY_TEXT.match(text.strip()))
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        sides = [annotation.left, annotation.right]
        arrays = [side for side in sides if not _is_none(side)]
        return len(arrays) == 1 and annotated_array(arrays[0], names)
    if isinstance(annotation, cst.Subscript):
        if names.qualified_name(annotation.value) in _OPTIONAL and len(annotation.slice) == 1:
            inner = annotation.slice[0].slice
            return isinstance(inner, cst.Index) and annotated_array(inner.value, names)
        annotation = annotation.value  # `npt.NDArray[np.float32]`
    return names.qualified_name(annotation) in _ARRAY_TYPES


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
