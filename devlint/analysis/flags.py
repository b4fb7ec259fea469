"""Values moved to a device under a flag, and later branches on the same flag.

`if self.gpu_mode: self.G.cuda()` leaves `self.G` on a device on one path and on the CPU on the
other (`Where.MAYBE_DEVICE`). A later `if self.gpu_mode: ... else: samples.data.numpy()` runs
its `else` only where nothing moved: there `samples` is on the CPU, and `.numpy()` works. The
flag must be a name (or a dotted one, `args.cuda`) the whole file binds once at most, so that
its truth is the same at the move and at the test; its value is then remembered with the
placement (`Placement.flag`), and a branch where the flag says "not moved" forgets the
placement (precision first: nothing is claimed there, not even the CPU).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from typing import Optional

from devlint.analysis.syntax import dotted_name
from devlint.analysis.values import UNKNOWN_PLACE, Value, Where


def flag_tested(test: ast.expr) -> Optional[tuple[str, bool]]:
    """`if args.cuda:` -> ("args.cuda", True); `if not use_gpu:` -> ("use_gpu", False): the
    flag a test reads and its truth in the test's body."""
    truth = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    name = dotted_name(test) if isinstance(test, (ast.Name, ast.Attribute)) else None
    return (name, truth) if name else None


def flags_bound_once(module: ast.Module) -> frozenset[str]:
    """The dotted names the file binds once at most (an assignment, a parameter, a loop's
    target, an import): a flag among them holds one truth wherever it is tested."""
    bound: Counter[str] = Counter()
    for node in ast.walk(module):
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            bound[dotted_name(node) or ""] += 1
        elif isinstance(node, ast.arg):
            bound[node.arg] += 1
        elif isinstance(node, ast.alias):
            bound[(node.asname or node.name).partition(".")[0]] += 1
    return frozenset(name for name, count in bound.items() if name and count == 1)


def remember_flag(
    flag: tuple[str, bool],
    body: Optional[Mapping[str, Value]],
    orelse: Optional[Mapping[str, Value]],
    merged: MutableMapping[str, Value],
) -> None:
    """After `if flag:` met its `else`: the values on a device in one branch only are on a
    device where the flag has that branch's truth."""
    if body is None or orelse is None:
        return
    name, truth = flag
    for key, value in merged.items():
        placement = value.placement
        if placement.where is not Where.MAYBE_DEVICE or placement.flag:
            continue
        moved, stayed = body.get(key), orelse.get(key)
        if moved is None or stayed is None:
            continue
        if _on_device(moved) and stayed.where is Where.CPU:
            when = truth
        elif _on_device(stayed) and moved.where is Where.CPU:
            when = not truth
        else:
            continue
        merged[key] = value.placed(replace(placement, flag=name, moved_when=when))


def _on_device(value: Value) -> bool:
    return value.where is Where.DEVICE


def forget_unmoved(
    flag: tuple[str, bool],
    body_env: MutableMapping[str, Value],
    orelse_env: MutableMapping[str, Value],
) -> None:
    """In the branch of `if flag:` where the flag says a value was not moved, its placement is
    not known to be a device's."""
    name, truth = flag
    for env, branch_truth in ((body_env, truth), (orelse_env, not truth)):
        for key, value in env.items():
            placement = value.placement
            if placement.flag == name and placement.moved_when is not branch_truth:
                env[key] = value.placed(UNKNOWN_PLACE)
