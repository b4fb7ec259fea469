"""What a condition tells about CUDA: available or not, one GPU or several, or a choice.

:class:`ConditionClassifier` reads the test of an ``if``, a ternary, an ``assert`` or a
skip marker, and gives its :class:`Polarity`: true only when CUDA is there, only when it is
not, only when two or more GPUs are there, only when fewer are, or a device flag the user
controls (both branches deliberate). :func:`true_cover` and :func:`false_cover` turn a polarity
into what the code of each branch can count on (:class:`Cover`: one GPU, or several).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator
from typing import Optional

import libcst as cst

from devlint.analysis.names import ImportMap, dotted_name
from devlint.traversal import child_nodes, descendants

AVAILABILITY_CHECKS = frozenset(
    {
        "torch.cuda.is_available",
        "torch.cuda.device_count",
        "torch.cuda.is_initialized",
        "torch.backends.cuda.is_built",
        "torch.backends.cudnn.is_available",
        "torch.accelerator.is_available",
        "torch.accelerator.device_count",
    }
)

# Identifiers and strings that show a condition is about the device choice.
FLAG_PATTERN = re.compile(r"cuda|gpu|cpu|device|accel|nccl", re.IGNORECASE)
EXIT_CALLS = frozenset({"exit", "quit", "_exit", "skip", "skipTest", "fail", "abort"})
CATCHING_ERRORS = frozenset(
    {"Exception", "BaseException", "RuntimeError", "AssertionError", "AcceleratorError"}
)


class Polarity(enum.Enum):
    """What a condition being true tells about CUDA."""

    AVAILABLE = "available"  # true only when CUDA is available
    UNAVAILABLE = "unavailable"  # true only when CUDA is not available
    SEVERAL = "several"  # true only when two or more GPUs are there
    FEW = "few"  # true only when fewer than two GPUs are there
    CHOICE = "choice"  # a device flag: both branches are deliberate


_FLIPPED = {
    Polarity.AVAILABLE: Polarity.UNAVAILABLE,
    Polarity.UNAVAILABLE: Polarity.AVAILABLE,
    Polarity.SEVERAL: Polarity.FEW,
    Polarity.FEW: Polarity.SEVERAL,
    Polarity.CHOICE: Polarity.CHOICE,
}


class Cover(enum.IntEnum):
    """How many GPUs code under a guard can count on. ``is_available()`` promises one GPU, so
    ``"cuda:1"`` there still fails on a one-GPU machine; ``device_count() > 1`` promises several.
    A device flag or an unknown GPU-only marker is the user's deliberate choice: precision first,
    it covers every GPU index."""

    ONE = 1
    SEVERAL = 2


# What a guard's true branch (and, below, its false branch) can count on, by its polarity.
_TRUE_COVER = {Polarity.AVAILABLE: Cover.ONE, Polarity.SEVERAL: Cover.SEVERAL}
_FALSE_COVER = {Polarity.UNAVAILABLE: Cover.ONE, Polarity.FEW: Cover.SEVERAL}


def true_cover(polarity: Optional[Polarity]) -> Optional[Cover]:
    """What code that runs when a test of this polarity is true can count on."""
    return Cover.SEVERAL if polarity is Polarity.CHOICE else _TRUE_COVER.get(polarity)  # type: ignore[arg-type]


def false_cover(polarity: Optional[Polarity]) -> Optional[Cover]:
    """What code that runs when a test of this polarity is false can count on."""
    return Cover.SEVERAL if polarity is Polarity.CHOICE else _FALSE_COVER.get(polarity)  # type: ignore[arg-type]


def widest(covers: Iterable[Optional[Cover]]) -> Optional[Cover]:
    known = [cover for cover in covers if cover is not None]
    return max(known) if known else None


def sub_expressions(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in child_nodes(node):
        if not isinstance(child, cst.Lambda):
            yield from sub_expressions(child)


def _integer(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return None


class ConditionClassifier:
    """Classifies the test of an ``if``, ternary, ``assert`` or ``and``."""

    def __init__(self, names: ImportMap) -> None:
        self._names = names
        self.guard_variables: dict[str, Polarity] = {}

    def classify(self, test: cst.BaseExpression) -> Optional[Polarity]:
        definite = self.definite(test)
        if definite is not None:
            return definite
        named = _cpu_flag(test)
        if named is not None:
            return named
        return Polarity.CHOICE if self.mentions_device(test) else None

    def definite(self, test: cst.BaseExpression) -> Optional[Polarity]:
        """The polarity of a test built from availability checks, or None."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.definite(test.expression)
            return None if inner is None else _FLIPPED[inner]
        if isinstance(test, cst.BooleanOperation):
            return self._combine(test)
        if isinstance(test, cst.Comparison):
            return self._comparison(test)
        if isinstance(test, cst.Call):
            test = test.func
        if self._names.qualified_name(test) in AVAILABILITY_CHECKS:
            return Polarity.AVAILABLE
        dotted = dotted_name(test)
        return None if dotted is None else self.guard_variables.get(dotted)

    def _combine(self, test: cst.BooleanOperation) -> Optional[Polarity]:
        sides = [self.definite(test.left), self.definite(test.right)]
        known = [side for side in sides if side is not None]
        if not known:
            return None
        if isinstance(test.operator, cst.And):
            # Both sides hold when an `and` is true: the strongest promise wins.
            for strongest in (Polarity.SEVERAL, Polarity.AVAILABLE):
                if strongest in known:
                    return strongest
            return known[0]
        # Both sides are false when an `or` is false.
        for strongest in (Polarity.FEW, Polarity.UNAVAILABLE):
            if strongest in known:
                return strongest
        if len(known) == 2 and Polarity.CHOICE not in known:
            # Either side true: only the weaker promise holds.
            return Polarity.AVAILABLE if Polarity.AVAILABLE in known else Polarity.SEVERAL
        return Polarity.CHOICE

    def _comparison(self, test: cst.Comparison) -> Optional[Polarity]:
        left = self.definite(test.left)
        if left is None or len(test.comparisons) != 1:
            return None
        target = test.comparisons[0]
        operator, right = target.operator, target.comparator
        if isinstance(right, cst.Name) and right.value in ("True", "False"):
            same = isinstance(operator, (cst.Is, cst.Equal))
            keeps = same == (right.value == "True")
            return left if keeps else _FLIPPED[left]
        count = _integer(right)
        if count is None:
            return Polarity.CHOICE
        return _count_polarity(operator, count)

    def mentions_device(self, test: cst.CSTNode) -> bool:
        for node in sub_expressions(test):
            if isinstance(node, cst.Name) and FLAG_PATTERN.search(node.value):
                return True
            if isinstance(node, cst.SimpleString) and FLAG_PATTERN.search(node.value):
                return True
            if isinstance(node, cst.FormattedStringText) and FLAG_PATTERN.search(node.value):
                return True
        return False

    def record_assignment(
        self, targets: list[cst.BaseExpression], value: cst.BaseExpression
    ) -> None:
        polarity = self.definite(value)
        if polarity is None:
            return
        for target in targets:
            dotted = dotted_name(target)
            if dotted is not None:
                self.guard_variables[dotted] = polarity


def _cpu_flag(test: cst.BaseExpression) -> Optional[Polarity]:
    """A flag named for the CPU alone (`args.cpu`, `weight_on_cpu`): true on the CPU's path,
    which a machine without CUDA takes (`w.cuda() if weight_on_cpu else w` fails there); its
    other branch is the device's."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _cpu_flag(test.expression)
        return None if inner is None else _FLIPPED[inner]
    name = dotted_name(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
    last = name.rpartition(".")[2] if name else ""
    return Polarity.UNAVAILABLE if _ON_THE_CPU.fullmatch(last) else None


# Names saying the CPU is where things are or run (not `offload_to_cpu`, a request to move).
_ON_THE_CPU = re.compile(r"(?:\w+_)?(?:on|use|is|force)_cpu|cpu(?:_only|_mode)?", re.IGNORECASE)


def _count_polarity(operator: cst.BaseCompOp, count: int) -> Polarity:
    """``device_count() > 0`` means available, ``== 0`` means not; ``> 1`` means several GPUs,
    ``< 2`` fewer than two."""
    # The least number of GPUs a true test promises, where the operator promises one.
    if isinstance(operator, cst.GreaterThan):
        least: Optional[int] = count + 1
    elif isinstance(operator, (cst.GreaterThanEqual, cst.Equal)):
        least = count
    elif isinstance(operator, cst.NotEqual) and count == 0:
        least = 1
    else:
        least = None
    if least is not None and least >= 1:
        return Polarity.SEVERAL if least >= 2 else Polarity.AVAILABLE
    # The most GPUs a true test allows.
    if isinstance(operator, cst.LessThan):
        most: Optional[int] = count - 1
    elif isinstance(operator, (cst.LessThanEqual, cst.Equal)):
        most = count
    else:
        most = None
    if most is not None and most >= 0:
        return Polarity.UNAVAILABLE if most == 0 else Polarity.FEW
    return Polarity.CHOICE


def checks_availability(module: cst.Module, names: ImportMap) -> bool:
    """Whether the file calls an availability check anywhere (``torch.cuda.is_available()``)."""
    return any(
        type(node) is cst.Call and names.qualified_name(node.func) in AVAILABILITY_CHECKS
        for node in descendants(module)
    )


def suite_exits(suite: cst.BaseSuite) -> bool:
    """Whether a block always leaves: raise, return, continue, break, sys.exit, pytest.skip."""
    body = suite.body
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        statements: tuple[cst.CSTNode, ...] = tuple(last.body)
    elif isinstance(last, (cst.BaseSmallStatement,)):
        statements = (last,)
    else:
        return False
    final = statements[-1]
    if isinstance(final, (cst.Raise, cst.Return, cst.Continue, cst.Break)):
        return True
    if isinstance(final, cst.Expr) and isinstance(final.value, cst.Call):
        callee = dotted_name(final.value.func)
        return callee is not None and callee.rsplit(".", 1)[-1] in EXIT_CALLS
    return False
