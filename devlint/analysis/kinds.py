"""Evidence-based kinds: which names hold data (tensors), from what the code around them does.

`for a, b in pairs: a = a.to(dev); b.to(dev)`: the loop unpacks `a` and `b` together and moves
`a` the way only a tensor is moved (its result assigned back), so `b` is data too, and its
discarded `.to()` is a bug. A sibling that the code calls, or uses the way only a module is used
(`.parameters()`, `.eval()`), or whose name says it is a model, stays of unknown kind.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Optional

from devlint.analysis.names import ImportMap
from devlint.analysis.parameters import module_used
from devlint.analysis.syntax import dotted_name

_MOVES = frozenset({"to", "cuda", "cpu"})
_MODEL_WORDS = (
    "model net module encoder decoder layer policy critic actor optim pipe tokenizer processor "
    "scheduler head"
).split()


def data_siblings(target: ast.expr, body: Sequence[ast.stmt]) -> frozenset[str]:
    """The names of an unpacking ``target`` that are data, by their siblings' moves in ``body``."""
    if not isinstance(target, (ast.Tuple, ast.List)):
        return frozenset()
    names = [element.id for element in target.elts if isinstance(element, ast.Name)]
    if len(names) < 2:
        return frozenset()
    reassigned, module_like = _uses(body, set(names))
    if not reassigned:
        return frozenset()
    return frozenset(
        name
        for name in names
        if name not in module_like and not any(word in name.lower() for word in _MODEL_WORDS)
    )


def _uses(body: Sequence[ast.stmt], names: set[str]) -> tuple[set[str], set[str]]:
    """The names moved with `x = x.to(d)`, and those used as modules (called, or a method only
    a module has)."""
    reassigned: set[str] = set()
    module_like: set[str] = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = dotted_name(node.targets[0])
                if target in names and _moves(node.value, target):
                    reassigned.add(target)
            elif isinstance(node, ast.Call):
                used = module_used(node)
                if used is not None:
                    module_like.add(used)
    return reassigned, module_like


def _moves(value: ast.expr, name: str) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _MOVES
        and dotted_name(value.func.value) == name
    )


def tensor_tested(test: ast.expr, names: ImportMap) -> Optional[tuple[str, bool]]:
    """`isinstance(x, torch.Tensor)` (or `torch.FloatTensor`...): the name it proves a tensor,
    and whether it does where the test holds (False for `not isinstance(...)`)."""
    holds = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and not test.keywords
    ):
        return None
    name = dotted_name(test.args[0])
    classes = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    if name is None or not all(_is_tensor_class(names.qualified_syntax_name(c)) for c in classes):
        return None
    return name, holds


def _is_tensor_class(qualified: Optional[str]) -> bool:
    """`torch.Tensor`, `torch.FloatTensor`, `torch.cuda.LongTensor`, `torch.nn.Parameter`."""
    if qualified is None or not qualified.startswith("torch."):
        return False
    return qualified.endswith("Tensor") or qualified in ("torch.nn.Parameter",)
