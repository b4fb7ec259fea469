"""Values moved to a device under a flag, and later branches on the same flag.

`if self.gpu_mode: self.G.cuda()` leaves `self.G` on a device on one path and on the CPU on the
other (`Where.MAYBE_DEVICE`). A later `if self.gpu_mode: ... else: samples.data.numpy()` runs
its `else` only where nothing moved: there `samples` is on the CPU, and `.numpy()` works. The
flag must hold one truth at both tests (see `flags_bound_once`); its name and the truth that
moved the value are remembered with the placement (`Placement.flag`), and a branch where the
flag says "not moved" forgets the placement (precision first: nothing is claimed there, not
even the CPU).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Mapping, MutableMapping
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
    """The flags that hold one truth wherever the file tests them: a module-level name or a
    dotted name one assignment outside any loop binds (`use_gpu = torch.cuda.is_available()`,
    `self.gpu_mode = args.gpu_mode`), or a dotted name never bound whose root is such a name
    (`args.cuda` of `args = parser.parse_args()`). Not a parameter, a function's local or a
    loop's target: each call or iteration may bind another truth, while what a move left in an
    attribute or a global stays."""
    bound: Counter[str] = Counter()
    outside_loops: set[str] = set()
    tested: set[str] = set()
    pending: list[tuple[ast.AST, bool, bool]] = [(module, False, False)]
    while pending:
        node, in_loop, in_function = pending.pop()
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            name = dotted_name(node) or ""
            bound[name] += 1
            # (a function's local is bound again at each call, as a loop's is)
            if not in_loop and (isinstance(node, ast.Attribute) or not in_function):
                outside_loops.add(name)
        elif isinstance(node, ast.arg):
            bound[node.arg] += 1
        elif isinstance(node, ast.alias):
            bound[(node.asname or node.name).partition(".")[0]] += 1
        elif isinstance(node, ast.If) and (flag := flag_tested(node.test)) is not None:
            tested.add(flag[0])
        looping = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        calling = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        pending.extend((child, looping, calling) for child in ast.iter_child_nodes(node))
    stable = {name for name in outside_loops if name and bound[name] == 1}
    attributes = {
        name
        for name in tested
        if "." in name and bound[name] == 0 and name.partition(".")[0] in stable
    }
    return frozenset(stable | attributes)


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
        if _on_device(moved) and stayed.where in _UNMOVED:
            when = truth
        elif _on_device(stayed) and moved.where in _UNMOVED:
            when = not truth
        else:
            continue
        merged[key] = value.placed(replace(placement, flag=name, moved_when=when))


# Where a value the flag did not move is: on the CPU, or where the caller put it (a parameter).
_UNMOVED = frozenset({Where.CPU, Where.UNKNOWN})


def _on_device(value: Value) -> bool:
    return value.where is Where.DEVICE


Forgotten = dict[str, tuple[Value, Value]]  # name -> (what it held, what the branch holds)


def forget_unmoved(
    flag: tuple[str, bool],
    body_env: MutableMapping[str, Value],
    orelse_env: MutableMapping[str, Value],
    stable: Callable[[str], bool],
) -> tuple[Forgotten, Forgotten]:
    """In the branch of `if flag:` where the flag says a value was not moved, its placement is
    not known to be a device's; only if the flag holds one truth (``stable``, asked only when
    a value was moved under it). What each branch forgot, to be given back after it (see
    `give_back`)."""
    name, truth = flag
    forgotten: tuple[Forgotten, Forgotten] = ({}, {})
    for env, branch_truth, lost in (
        (body_env, truth, forgotten[0]),
        (orelse_env, not truth, forgotten[1]),
    ):
        for key, value in env.items():
            placement = value.placement
            if placement.flag == name and placement.moved_when is not branch_truth:
                lost[key] = (value, value.placed(UNKNOWN_PLACE))
    if (forgotten[0] or forgotten[1]) and not stable(name):
        return {}, {}
    for env, lost in zip((body_env, orelse_env), forgotten):
        env.update((key, blank) for key, (_, blank) in lost.items())
    return forgotten


def give_back(env: Optional[MutableMapping[str, Value]], forgotten: Forgotten) -> None:
    """After a branch that the other branch meets again: what it left as forgotten holds what
    it held before, so that the forgetting stays inside the branch (a later `if flag:
    print(...)` leaves `self.G` as it was). Where the other branch leaves (`if flag: return
    x.cpu().numpy()`), the code after the `if` is this branch's, and keeps its word."""
    if env is None:
        return
    for key, (held, blank) in forgotten.items():
        if env.get(key) is blank:
            env[key] = held
