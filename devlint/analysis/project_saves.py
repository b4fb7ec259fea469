"""Across files: how the project saves its weights (DEV008's evidence).

Some projects write every checkpoint through one saver that moves the weights to the CPU
first, BasicSR's `save_network` for one:

    state_dict = net.state_dict()
    for key, param in state_dict.items():
        state_dict[key] = param.cpu()
    torch.save(save_dict, save_path)

The project's loads of weights then read CPU tensors, whatever machine trained them, and
its releases were written the same way. The convention holds where some `torch.save` of the
project saves weights moved to the CPU (the loop above, a comprehension `{k: v.cpu() for k, v
in sd.items()}`, `model.cpu().state_dict()`, or a helper named for it around the whole value:
`weights_to_cpu(...)`, `move_to_cpu(...)`) and none saves a `.state_dict()` as it is
(`torch.save(model.state_dict(), path)`, `{"model": model.state_dict()}`, a name the function
fills with one, a module it moved): one direct save of weights may write a GPU's. An
optimizer's state saved alone as it is (KAIR's `save_optimizer`) leaves the weights'
convention standing, for loads that restore no optimizer. A file with
no device word (a conversion script) is taken to save on the CPU; a saving file that does not
parse voids the convention. `torch.save` is read through the file's imports (`T.save`, `save`).

The project also records the file names its functions save into a folder their caller gives
(`path + "/" + "checkpoint.pth"`), with the names a call reaches them through, for DEV008's
"written earlier in this run".

The files read are those whose text mentions `save`, recorded with the cached result (see
`callers`): a new saver, or a changed one, re-lints the loading file.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from devlint.analysis.callers import (
    depend_on_mentions,
    files_mentioning,
    moved_to_cpu,
    parsed,
    project_folder,
    source_text,
)
from devlint.analysis.cpu_only import DEVICE_WORDS
from devlint.analysis.syntax import (
    dotted_name,
    keyword_value,
    last_name,
    nodes_below,
    string_value,
)


@dataclass(frozen=True)
class SaveConvention:
    """Where the project moves the weights it saves to the CPU (`file:line`), if it always
    does; and the file names its functions save into a folder their caller gives, each with
    where (`"checkpoint.pth"`: `torch.save(model.state_dict(), path + "/" + "checkpoint.pth")`
    in `save_checkpoint(self, val_loss, model, path)`)."""

    cpu_saver: Optional[str]
    into_callers_folders: dict[str, SavedInto] = field(default_factory=dict)
    # Whether some save writes an optimizer's state as it is (`torch.save(optimizer.
    # state_dict(), path)`): its moments live where the weights trained, whatever the weights'
    # saver does, so the convention says nothing of a load restoring an optimizer.
    optimizer_saved_as_is: bool = False


@dataclass(frozen=True)
class SavedInto:
    """A save into the folder a function's caller gives: where, and the names a call reaches
    it through (the function's; a method of its class calling it, `__call__` included, with
    the class's own name for an instance called: `early_stopping(loss, model, path)`)."""

    where: str
    reached_through: frozenset[str]


_MEMO: dict[str, tuple[str, SaveConvention]] = {}  # root -> (digest, convention)


def save_convention(linted: str) -> SaveConvention:
    """How the project of ``linted`` saves weights."""
    root = project_folder(linted)
    digest = depend_on_mentions(linted, root, "save")
    known = _MEMO.get(str(root))
    if known is None or known[0] != digest:
        known = _MEMO[str(root)] = (digest, _convention(root))
    return known[1]


def _convention(root: Path) -> SaveConvention:
    cpu_saver: Optional[str] = None
    direct = optimizer_as_is = False
    into: dict[str, SavedInto] = {}
    for path, text in files_mentioning(root, "", "save"):
        tree = parsed(path, text)
        if tree is None:
            if path.endswith(".py"):
                direct = True  # (a saver out of sight may save anything)
            continue
        # (a file with no device word, a conversion script, saves weights on the CPU)
        device_words = bool(DEVICE_WORDS.search(source_text(path) or "cuda"))
        for save, scope in _torch_saves(tree, tree, _save_names(tree)):
            where = f"{os.path.relpath(path, root)}:{save.lineno}"
            name = _name_in_callers_folder(save, scope)
            if name is not None:  # (several savers of one name: a call may reach any)
                known = into.get(name)
                through = _reached_through(tree, scope)
                into[name] = SavedInto(
                    known.where if known else where,
                    through | known.reached_through if known else through,
                )
            value = save.args[0] if save.args else keyword_value(save, "obj")
            if value is None:
                continue
            if _weights_moved(value, scope):
                cpu_saver = cpu_saver or where
            elif device_words and _saves_optimizer_state(value):
                optimizer_as_is = True
            elif device_words and _saves_weights_as_they_are(value, scope):
                direct = True
    return SaveConvention(None if direct else cpu_saver, into, optimizer_as_is)


def _save_names(tree: ast.Module) -> frozenset[str]:
    """How the file calls `torch.save`: `torch.save`, `T.save` after `import torch as T`,
    `save` after `from torch import save`."""
    names = {"torch.save"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(f"{a.asname}.save" for a in node.names if a.name == "torch" and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "torch":
            names.update(a.asname or a.name for a in node.names if a.name == "save")
    return frozenset(names)


def _reached_through(tree: ast.Module, saver: ast.AST) -> frozenset[str]:
    """The names a call reaches ``saver`` through: its own, and for a method, those of the
    methods of its class that call `self.<saver>(...)`, with the class's name where one of
    them is `__call__`."""
    name = getattr(saver, "name", "")
    names = {name}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ClassDef) and saver in node.body):
            continue
        for method in node.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(call, ast.Call) and dotted_name(call.func) == f"self.{name}"
                for call in ast.walk(method)
            ):
                names.add(method.name)
                if method.name == "__call__":
                    names.add(node.name)
    return frozenset(names)


def _name_in_callers_folder(save: ast.Call, scope: ast.AST) -> Optional[str]:
    """The file name a save writes into a folder its function is given: `"checkpoint.pth"` in
    `torch.save(x, path + "/" + "checkpoint.pth")` or `os.path.join(path, "checkpoint.pth")`,
    `path` a parameter."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    target = save.args[1] if len(save.args) > 1 else keyword_value(save, "f")
    folder: Optional[ast.expr] = None
    name: Optional[str] = None
    if isinstance(target, ast.Call) and len(target.args) == 2:
        folder, name = target.args[0], string_value(target.args[1])
    elif isinstance(target, ast.BinOp) and isinstance(target.op, ast.Add):
        name = string_value(target.right)
        left = target.left
        if isinstance(left, ast.BinOp) and string_value(left.right) == "/":
            folder = left.left
        elif name is not None and name.startswith("/"):
            folder, name = left, name[1:]
    parameters = {argument.arg for argument in (*scope.args.args, *scope.args.kwonlyargs)}
    named = isinstance(folder, ast.Name) and folder.id in parameters
    return name if named and name and "/" not in name and "." in name else None


def _torch_saves(
    node: ast.AST, scope: ast.AST, names: frozenset[str]
) -> Iterator[tuple[ast.Call, ast.AST]]:
    """Each `torch.save(...)` call below ``node`` (as ``names`` spell it), with the function it
    is made in."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _torch_saves(child, child, names)
            continue
        if isinstance(child, ast.Call) and dotted_name(child.func) in names:
            yield child, scope
        yield from _torch_saves(child, scope, names)


def _weights_moved(value: ast.expr, scope: ast.AST) -> bool:
    """What ``scope`` saves as ``value`` is weights it moved to the CPU: the whole value
    (`weights_to_cpu(model.state_dict())`, `model.cpu().state_dict()`, `{k: v.cpu() for k, v
    in sd.items()}`), or a container whose every item it moved before the save, in it."""
    if isinstance(value, ast.Call):
        func = value.func
        called = func.attr if isinstance(func, ast.Attribute) else dotted_name(func) or ""
        if called.endswith("to_cpu") and value.args:
            return True  # `weights_to_cpu(model.state_dict())`, `utils.move_to_cpu(state)`
        if called == "state_dict" and _moved(func):
            return True  # `model.cpu().state_dict()`
    if isinstance(value, ast.DictComp) and moved_to_cpu(value.value):
        return True  # `{k: v.cpu() for k, v in sd.items()}`
    saved = {node.id for node in ast.walk(value) if isinstance(node, ast.Name)}
    return _items_moved_in(scope, saved, value)


def _items_moved_in(scope: ast.AST, saved: set[str], before: ast.expr) -> bool:
    """`for key, param in state_dict.items(): state_dict[key] = param.cpu()` in ``scope``,
    before ``before``, on a container the save reads (`state_dict`, or one holding it:
    `save_dict[param_key] = state_dict`)."""
    holders = set(saved)
    for node in nodes_below(scope):  # (what the saved names are filled with)
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            base = target.value if isinstance(target, ast.Subscript) else target
            if isinstance(base, ast.Name) and base.id in saved:
                holders.update(n.id for n in ast.walk(node.value) if isinstance(n, ast.Name))
    for node in nodes_below(scope):
        if not (isinstance(node, ast.For) and isinstance(node.target, ast.Tuple)):
            continue
        if (node.lineno, node.col_offset) > (before.lineno, before.col_offset):
            continue
        container = (dotted_name(node.iter.func) if isinstance(node.iter, ast.Call) else "") or ""
        container = container.removesuffix(".items")
        if container not in holders:
            continue
        for statement in ast.walk(node):
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Subscript)
                and dotted_name(statement.targets[0].value) == container
                and moved_to_cpu(statement.value)
            ):
                return True
    return False


def _moved(func: ast.expr) -> bool:
    """`x.cpu().state_dict`: the receiver chain moved to the CPU."""
    receiver = func.value if isinstance(func, ast.Attribute) else None
    return isinstance(receiver, ast.Call) and moved_to_cpu(receiver)


def _saves_weights_as_they_are(value: ast.expr, scope: ast.AST) -> bool:
    """`torch.save(model.state_dict(), path)`, `{"model": model.state_dict()}`, a name the
    function fills with one (`state = {"model": model.state_dict()}`, `ckpt["sd"] =
    model.state_dict()`), or a module it moved (`model.cuda()`, then `torch.save(model, p)`):
    weights where they live."""
    if _has_state_dict(value):
        return True
    names = {node.id for node in ast.walk(value) if isinstance(node, ast.Name)}
    for node in nodes_below(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            base = target.value if isinstance(target, ast.Subscript) else target
            if isinstance(base, ast.Name) and base.id in names and _has_state_dict(node.value):
                return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("cuda", "to")
            and isinstance(value, ast.Name)
            and dotted_name(node.func.value) == value.id
        ):
            return True  # `model.cuda()`, then `torch.save(model, path)`
    return False


# The names of optimizers as written (`optimizer`, `self.optim_g`, `opt`, `d_opt`,
# `optimizers`), not `optimized_model` or `option`.
OPTIMIZER_NAME = re.compile(
    r"^(?:\w+_)?(?:optim|optimizer|optimiser|opt)(?:s|\d+|_\w+)?$", re.IGNORECASE
)


def _saves_optimizer_state(value: ast.expr) -> bool:
    """`torch.save(optimizer.state_dict(), path)`: an optimizer's state alone, as it is."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "state_dict"
        and bool(OPTIMIZER_NAME.search(last_name(value.func.value)))
    )


def _has_state_dict(value: ast.expr) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "state_dict"
        and not _moved(node.func)
        for node in ast.walk(value)
    )
