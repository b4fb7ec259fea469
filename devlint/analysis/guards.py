"""Which code runs only when a GPU is there, or only when the user asked for one.

Real code guards CUDA in many ways: ``if torch.cuda.is_available():``, a flag
computed from that test and checked later (``use_gpu``, ``args.cuda``), a flag
the user controls (``if args.cuda:``), an early exit (``if not ...: return``),
an ``assert``, a ternary, a GPU-only test decorator, a ``try`` that catches
the failure. :class:`GuardTracker` follows all of them during the single
traversal of a file and answers one question: is the node being visited now
guarded?

Precision comes first: a condition that merely *mentions* a device or GPU
flag guards both of its branches, because what it selects is the user's
deliberate choice.
"""

from __future__ import annotations

import ast
import enum
import re
from collections.abc import Iterator
from typing import ClassVar, Optional, Union

import libcst as cst

from devlint.analysis import syntax
from devlint.analysis.names import ImportMap, dotted_name
from devlint.traversal import child_nodes

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
_FLAG_PATTERN = re.compile(r"cuda|gpu|cpu|device|accel|nccl", re.IGNORECASE)
_EXIT_CALLS = frozenset({"exit", "quit", "_exit", "skip", "skipTest", "fail", "abort"})
_CATCHING_ERRORS = frozenset(
    {"Exception", "BaseException", "RuntimeError", "AssertionError", "AcceleratorError"}
)


class Polarity(enum.Enum):
    """What a condition being true tells about CUDA."""

    AVAILABLE = "available"  # true only when CUDA is available
    UNAVAILABLE = "unavailable"  # true only when CUDA is not available
    CHOICE = "choice"  # a device flag: both branches are deliberate


_FLIPPED = {
    Polarity.AVAILABLE: Polarity.UNAVAILABLE,
    Polarity.UNAVAILABLE: Polarity.AVAILABLE,
    Polarity.CHOICE: Polarity.CHOICE,
}


def _sub_expressions(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in child_nodes(node):
        if not isinstance(child, cst.Lambda):
            yield from _sub_expressions(child)


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
            # Both sides hold when an `and` is true.
            return Polarity.AVAILABLE if Polarity.AVAILABLE in known else known[0]
        # Both sides are false when an `or` is false.
        if Polarity.UNAVAILABLE in known:
            return Polarity.UNAVAILABLE
        return Polarity.AVAILABLE if len(known) == 2 else Polarity.CHOICE

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
        for node in _sub_expressions(test):
            if isinstance(node, cst.Name) and _FLAG_PATTERN.search(node.value):
                return True
            if isinstance(node, cst.SimpleString) and _FLAG_PATTERN.search(node.value):
                return True
            if isinstance(node, cst.FormattedStringText) and _FLAG_PATTERN.search(node.value):
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


def _count_polarity(operator: cst.BaseCompOp, count: int) -> Polarity:
    """``device_count() > 0`` means available, ``== 0`` means not."""
    if isinstance(operator, cst.GreaterThan) and count >= 0:
        return Polarity.AVAILABLE
    if isinstance(operator, (cst.GreaterThanEqual, cst.Equal)) and count >= 1:
        return Polarity.AVAILABLE
    if isinstance(operator, cst.NotEqual) and count == 0:
        return Polarity.AVAILABLE
    if isinstance(operator, cst.Equal) and count == 0:
        return Polarity.UNAVAILABLE
    if isinstance(operator, cst.LessThan) and count <= 1:
        return Polarity.UNAVAILABLE
    if isinstance(operator, cst.LessThanEqual) and count <= 0:
        return Polarity.UNAVAILABLE
    return Polarity.CHOICE


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
        return callee is not None and callee.rsplit(".", 1)[-1] in _EXIT_CALLS
    return False


_RAISES_CONTEXTS = frozenset(
    {"pytest.raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"}
)


def expects_error(node: cst.With, names: ImportMap) -> bool:
    """`with pytest.raises(...)` or `with self.assertRaises(...)`: a test expects the body to
    fail, so an error there (a device mismatch on purpose) is the point, not a bug."""
    return any(
        isinstance(item.item, cst.Call) and _raises(names, dotted_name(item.item.func))
        for item in node.items
    )


def expects_error_in_syntax(node: Union[ast.With, ast.AsyncWith], names: ImportMap) -> bool:
    """The same, on CPython's tree."""
    return any(
        isinstance(item.context_expr, ast.Call)
        and _raises(names, syntax.dotted_name(item.context_expr.func))
        for item in node.items
    )


def _raises(names: ImportMap, called: Optional[str]) -> bool:
    method = (called or "").rpartition(".")[2]
    return names.resolve(called) in _RAISES_CONTEXTS or method in _RAISES_CONTEXTS


def _catches_errors(node: cst.Try) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        for part in _sub_expressions(handler.type):
            if isinstance(part, cst.Name) and part.value in _CATCHING_ERRORS:
                return True
    return False


_BLOCKS = frozenset({cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite})
_SETUP_METHODS = frozenset({"setUp", "setUpClass", "setup_method", "setup_class"})


def _is_gpu_only_definition(
    node: Union[cst.FunctionDef, cst.ClassDef], classifier: ConditionClassifier
) -> bool:
    """A GPU-only test (``@skipIf(not cuda)``, ``@requires_cuda``) or a ``*_cuda``/``*gpu*``
    helper. A test's name is no guard: ``test_forward_cuda`` with no skip marker is exactly
    what fails on a CPU-only CI runner."""
    name = node.name.value
    # `get_device()` is where a device gets chosen, not GPU-only code: only the name test skips it.
    named_for_gpu = bool(_FLAG_PATTERN.search(name)) and "device" not in name.lower()
    if named_for_gpu and not name.startswith(("__", "test", "Test")):
        return True
    return any(classifier.mentions_device(decorator) for decorator in node.decorators)


def _setup_skips_without_cuda(node: cst.ClassDef, classifier: ConditionClassifier) -> bool:
    """A test class whose ``setUp`` skips (or fails) when CUDA is missing."""
    for statement in node.body.body:
        if not isinstance(statement, cst.FunctionDef) or statement.name.value not in _SETUP_METHODS:
            continue
        for inner in statement.body.body:
            if not isinstance(inner, cst.If) or not suite_exits(inner.body):
                continue
            if classifier.classify(inner.test) in (Polarity.UNAVAILABLE, Polarity.CHOICE):
                return True
    return False


class GuardTracker:
    """Keeps, during one traversal, the count of guards around the current node."""

    def __init__(self, classifier: ConditionClassifier) -> None:
        self.classifier = classifier
        self._depth = 0
        # Guards that hold for the rest of a block (after an early exit), one entry per open block.
        self._block_guards: list[int] = []
        self._polarities: dict[int, Optional[Polarity]] = {}
        self._gpu_only_classes: set[str] = set()

    @property
    def guarded(self) -> bool:
        return self._depth > 0

    # Exact types below: faster than isinstance (ABCMeta), and LibCST's classes are final.
    def enter(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind in _BLOCKS:
            self._block_guards.append(0)
        elif kind is cst.ClassDef:
            if self._class_is_gpu_only(node):  # type: ignore[arg-type]
                self._gpu_only_classes.add(node.name.value)  # type: ignore[attr-defined]
        elif kind is cst.If or kind is cst.IfExp:
            self._polarities[id(node)] = self.classifier.classify(node.test)  # type: ignore[attr-defined]
        elif kind is cst.BooleanOperation:
            self._polarities[id(node)] = self.classifier.classify(node.left)  # type: ignore[attr-defined]

    def leave(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind in _BLOCKS:
            self._depth -= self._block_guards.pop()
        elif kind is cst.If:
            if self._exits_without_cuda(node):  # type: ignore[arg-type]
                self._guard_rest_of_block()
            self._polarities.pop(id(node), None)
        elif kind is cst.IfExp or kind is cst.BooleanOperation:
            self._polarities.pop(id(node), None)
        elif isinstance(node, cst.Assert):
            if self.classifier.classify(node.test) in (Polarity.AVAILABLE, Polarity.CHOICE):
                self._guard_rest_of_block()
        elif isinstance(node, cst.Assign):
            self.classifier.record_assignment([t.target for t in node.targets], node.value)
            marks = any(dotted_name(t.target) == "pytestmark" for t in node.targets)
            if marks and self.classifier.mentions_device(node.value):
                self._guard_rest_of_block()
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            self.classifier.record_assignment([node.target], node.value)

    def enter_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if self._guards_attribute(node, attribute):
            self._depth += 1

    def leave_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if self._guards_attribute(node, attribute):
            self._depth -= 1

    # The attributes `_guards_attribute` can answer yes for: traversals announce only these.
    ATTRIBUTES: ClassVar[dict[type, frozenset[str]]] = {
        cst.If: frozenset({"body", "orelse"}),
        cst.IfExp: frozenset({"body", "orelse"}),
        cst.BooleanOperation: frozenset({"right"}),
        cst.FunctionDef: frozenset({"body"}),
        cst.ClassDef: frozenset({"body"}),
        cst.Try: frozenset({"body"}),
    }

    def _guards_attribute(self, node: cst.CSTNode, attribute: str) -> bool:
        if isinstance(node, (cst.If, cst.IfExp)):
            polarity = self._polarities.get(id(node))
            if attribute == "body":
                return polarity in (Polarity.AVAILABLE, Polarity.CHOICE)
            if attribute == "orelse":
                return polarity in (Polarity.UNAVAILABLE, Polarity.CHOICE)
            return False
        if isinstance(node, cst.BooleanOperation) and attribute == "right":
            polarity = self._polarities.get(id(node))
            if isinstance(node.operator, cst.And):
                return polarity in (Polarity.AVAILABLE, Polarity.CHOICE)
            return polarity in (Polarity.UNAVAILABLE, Polarity.CHOICE)
        if isinstance(node, cst.FunctionDef) and attribute == "body":
            return _is_gpu_only_definition(node, self.classifier)
        if isinstance(node, cst.ClassDef) and attribute == "body":
            return node.name.value in self._gpu_only_classes
        if isinstance(node, cst.Try) and attribute == "body":
            return _catches_errors(node)
        return False

    def _class_is_gpu_only(self, node: cst.ClassDef) -> bool:
        """Decorated or named for the GPU, skipping in ``setUp``, or derived from such a class."""
        if _is_gpu_only_definition(node, self.classifier):
            return True
        if _setup_skips_without_cuda(node, self.classifier):
            return True
        return any(dotted_name(base.value) in self._gpu_only_classes for base in node.bases)

    def _exits_without_cuda(self, node: cst.If) -> bool:
        polarity = self._polarities.get(id(node))
        if polarity in (Polarity.UNAVAILABLE, Polarity.CHOICE) and suite_exits(node.body):
            return True
        if polarity is Polarity.AVAILABLE and isinstance(node.orelse, cst.Else):
            return suite_exits(node.orelse.body)
        return False

    def _guard_rest_of_block(self) -> None:
        if self._block_guards:
            self._block_guards[-1] += 1
            self._depth += 1
