"""Whether code needs CUDA anyway around a statement.

A statement that runs only after an unguarded `.cuda()` (or `.to("cuda")`) of the same function
or script never runs on a machine without CUDA: the move fails first. Only the statements on the
way to it count: those before it in its own block and in each block around it, up to the
function's body. A compound statement beside that way (an `if`, a loop, a `try`) may not run,
and neither may a move inside a conditional expression, a boolean operation, a lambda or a
comprehension; a `try` around the statement is passed through only from its body (a handler
runs because something failed).

Likewise after it: a move that the code always goes on to (later in the block, then in the
blocks around it, with no `return`, `raise`, `break` or `continue` that may stop it on the
way) fails on such a machine too, so the statement cannot make the code run there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Optional

import libcst as cst

from devlint.analysis.devices import cuda_literal

# Expressions whose parts may not run (`x.cuda() if gpu else x`, `gpu and x.cuda()`).
_LAZY = (cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
         cst.GeneratorExp)  # fmt: skip


# Code that runs one process per GPU, or picks one of several: `torch.cuda.set_device(rank)`,
# DDP, `model.cuda(args.gpu)`, `device_ids=[local_rank]`.
_SEVERAL_GPUS = re.compile(
    r"set_device\(|DistributedDataParallel|local_rank|device_ids\s*=|\.cuda\(\s*[A-Za-z_]"
)


def picks_among_gpus(code: str) -> bool:
    """Whether ``code`` (a function's, or a script's) picks one GPU among several: there a
    tensor saved from one GPU loads onto that GPU, whichever this process uses."""
    return _SEVERAL_GPUS.search(code) is not None


def needs_cuda_before(body: Sequence[cst.CSTNode], target: cst.CSTNode) -> bool:
    """Whether a statement on the way to ``target`` (a statement of ``body``, or inside one)
    puts something on CUDA unconditionally."""
    return bool(_walk(body, target))


def _walk(body: Sequence[cst.CSTNode], target: cst.CSTNode) -> Optional[bool]:
    """True: CUDA is needed before ``target``; False: it is not; None: ``target`` is not here."""
    needed = False
    for statement in body:
        if statement is target or (
            isinstance(statement, cst.SimpleStatementLine) and _contains(statement, target)
        ):
            return needed
        if isinstance(statement, cst.SimpleStatementLine):
            needed = needed or any(_moves_to_cuda(small) for small in statement.body)
            continue
        for block in _blocks_on_the_way(statement):
            found = _walk(block, target)
            if found is not None:
                return needed or found
    return None


def _blocks_on_the_way(statement: cst.CSTNode) -> list[Sequence[cst.CSTNode]]:
    """The blocks of a compound statement that a statement inside it may sit in, and come to
    only through the compound's own code: every block but a `try`'s handlers and `finally`."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return []  # another scope: what it does runs when it is called
    if isinstance(statement, cst.Try):
        return [statement.body.body]
    blocks: list[Sequence[cst.CSTNode]] = []
    for name in ("body", "orelse"):
        part = getattr(statement, name, None)
        while part is not None and not isinstance(part, cst.BaseSuite):
            part = getattr(part, "body", None)
        if isinstance(part, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            blocks.append(part.body)
    if isinstance(statement, cst.If) and isinstance(statement.orelse, cst.If):
        blocks.extend(_blocks_on_the_way(statement.orelse))
    return blocks


def _contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    finder = _Finder(target)
    node.visit(finder)
    return finder.found


class _Finder(cst.CSTVisitor):
    def __init__(self, target: cst.CSTNode) -> None:
        self.target = target
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.target:
            self.found = True
        return not self.found


def _moves_to_cuda(statement: cst.BaseSmallStatement) -> bool:
    if isinstance(statement, cst.Assert):
        return False  # `python -O` drops it
    mover = _CudaMove()
    statement.visit(mover)
    return mover.found


class _CudaMove(cst.CSTVisitor):
    """A `.cuda(...)` call or a `.to("cuda...")` outside lazy expressions."""

    def __init__(self) -> None:
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found or isinstance(node, _LAZY):
            return False
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            to_cuda = method == "to" and node.args and cuda_literal(node.args[0].value)
            self.found = (method == "cuda" and len(node.args) <= 1) or bool(to_cuda)
        return not self.found


def needs_cuda_after(body: Sequence[cst.CSTNode], target: cst.CSTNode) -> bool:
    """Whether the code always goes on from ``target`` to a statement that puts something on
    CUDA unconditionally."""
    return _after(body, target) == _MOVE


_MOVE, _STOP, _END = "move", "stop", "end"  # what comes after: a move, maybe an exit, nothing
_EXITS = (cst.Return, cst.Raise, cst.Break, cst.Continue)


def _after(body: Sequence[cst.CSTNode], target: cst.CSTNode) -> Optional[str]:
    """What ``body`` reaches after ``target`` (None: ``target`` is not in ``body``)."""
    for index, statement in enumerate(body):
        if statement is not target and not _contains(statement, target):
            continue
        if statement is not target and not isinstance(statement, cst.SimpleStatementLine):
            inner = next(
                (
                    found
                    for block in _blocks_on_the_way(statement)
                    if (found := _after(block, target)) is not None
                ),
                None,
            )
            if inner != _END:
                return inner if inner is not None else _STOP
        elif isinstance(statement, cst.SimpleStatementLine) and _exits(statement):
            return _STOP  # `return torch.load(path)`
        return _reaches_move(body[index + 1 :])
    return None


def _reaches_move(statements: Sequence[cst.CSTNode]) -> str:
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            if _exits(statement):
                return _STOP
            if any(_moves_to_cuda(small) for small in statement.body):
                return _MOVE
        elif not isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and _may_exit(statement):
            return _STOP
    return _END


def _exits(line: cst.SimpleStatementLine) -> bool:
    return any(isinstance(small, _EXITS) or _ends_process(small) for small in line.body)


def _ends_process(node: cst.CSTNode) -> bool:
    """`sys.exit(0)`, `exit()`, `quit()`, `os._exit(1)` (as a statement or inside one)."""
    if isinstance(node, cst.Expr):
        node = node.value
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Name):
        return func.value in ("exit", "quit")
    return isinstance(func, cst.Attribute) and func.attr.value in ("exit", "_exit")


def _may_exit(statement: cst.CSTNode) -> bool:
    finder = _ExitFinder()
    statement.visit(finder)
    return finder.found


class _ExitFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _EXITS) or _ends_process(node):
            self.found = True
        # another scope's exits are its own
        return not self.found and not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
