"""Helpers whose every caller moves what they return to a device: CPU-side code by use.

`inputs, labels = self.mask_tokens(inputs)` followed by `inputs.to(self.device)`, or
`targets = one_hot(labels).to(device)`: the caller moves the result, so the helper made it on
the CPU, from CPU data. Its tensor parameters are then no evidence of the caller's device.
Only calls the file writes count, each by its name (`helper(...)` for a function, `self.helper(
...)` for a method), and only where every one of them is moved: in the call's own expression,
or by one of the next two plain statements that run (in its block, then after the block),
which moves a name the call's result was assigned to.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from typing import Optional

from devlint.analysis.syntax import dotted_name, keyword_value, nodes_below, statement_blocks

_MOVES = frozenset({"to", "cuda"})
# How far after the assignment the move may come: `x, y = helper(x)` then `x, y = x.to(d), y.to(d)`.
_LOOKAHEAD = 2


def helpers_moved_by_callers(module: ast.Module) -> frozenset[str]:
    """The keys (`helper`, `self.helper`) of the helpers whose every call is moved."""
    calls: Counter[str] = Counter()
    moved: Counter[str] = Counter()
    for node in nodes_below(module):
        if isinstance(node, ast.Call):
            key = _helper_key(node)
            if key is not None:
                calls[key] += 1
            elif isinstance(node.func, ast.Attribute):
                calls[f"self.{node.func.attr}"] += 1  # `trainer.mask(x)`: a call, never moved
            receiver = _moved_receiver(node)
            if isinstance(receiver, ast.Call):
                key = _helper_key(receiver)
                if key is not None:
                    moved[key] += 1
    for statement, following in _with_what_follows(module.body, []):
        key = _assigned_call(statement)
        if key is None:
            continue
        names = _bound_names(statement)
        if names and any(_moves_any(later, names) for later in following):
            moved[key] += 1
    return frozenset(key for key, count in calls.items() if moved[key] == count)


def helper_key(function_name: str, method: bool) -> str:
    return f"self.{function_name}" if method else function_name


def _helper_key(call: ast.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and dotted_name(func.value) == "self":
        return f"self.{func.attr}"
    return None


def _moved_receiver(call: ast.Call) -> Optional[ast.expr]:
    """What `.cuda()` or `.to(device)` moves to a device; not `.to(x.dtype)`, `.to("cpu")`."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _MOVES:
        return None
    if func.attr == "to" and not _to_a_device(call):
        return None
    return func.value


def _to_a_device(call: ast.Call) -> bool:
    target = call.args[0] if call.args else keyword_value(call, "device")
    if target is None:
        return False  # `.to(dtype=...)`, `.to(memory_format=...)`
    written = (dotted_name(target) or "").lower()
    text = target.value if isinstance(target, ast.Constant) else None
    if isinstance(text, str):
        return text.lower() != "cpu" and not text.startswith("torch.")
    return "device" in written or written.endswith(("gpu", "cuda"))


def _assigned_call(statement: ast.stmt) -> Optional[str]:
    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
        return _helper_key(statement.value)
    return None


def _bound_names(statement: ast.stmt) -> set[str]:
    assert isinstance(statement, ast.Assign)
    names: set[str] = set()
    for target in statement.targets:
        elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        names.update(element.id for element in elements if isinstance(element, ast.Name))
    return names


def _moves_any(statement: ast.stmt, names: set[str]) -> bool:
    """A plain statement that moves one of ``names`` (not one that may not run: an `if`)."""
    if not isinstance(statement, (ast.Assign, ast.Expr, ast.AnnAssign, ast.Return)):
        return False
    for node in nodes_below(statement):
        if isinstance(node, ast.Call):
            receiver = _moved_receiver(node)
            if isinstance(receiver, ast.Name) and receiver.id in names:
                return True
    return False


def _with_what_follows(
    block: list[ast.stmt], after: list[ast.stmt]
) -> Iterator[tuple[ast.stmt, list[ast.stmt]]]:
    """Each statement with the statements that run next: the rest of its block, then what
    follows the block (`if flip: img = fliplr(img)` is followed by `x = img.cuda()`)."""
    for index, statement in enumerate(block):
        rest = (block[index + 1 : index + 1 + _LOOKAHEAD] + after)[:_LOOKAHEAD]  # all it needs
        yield statement, rest
        scope_starts = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        blocks = [
            *statement_blocks(statement),
            *(case.body for case in getattr(statement, "cases", ())),
        ]
        for inner in blocks:
            yield from _with_what_follows(list(inner), [] if scope_starts else rest)
