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
from collections.abc import Iterable, Iterator, Sequence
from typing import ClassVar, Optional, Union

import libcst as cst

from devlint.analysis import syntax
from devlint.analysis.devices import argument, string_value
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
_FLAG_PATTERN = re.compile(r"cuda|gpu|cpu|device|accel|nccl", re.IGNORECASE)
_EXIT_CALLS = frozenset({"exit", "quit", "_exit", "skip", "skipTest", "fail", "abort"})
_CATCHING_ERRORS = frozenset(
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


def _widest(covers: Iterable[Optional[Cover]]) -> Optional[Cover]:
    known = [cover for cover in covers if cover is not None]
    return max(known) if known else None


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
# Markers that skip a test when their condition is true (`skipIf`) or false (`skipUnless`).
_SKIP_WHEN_TRUE = frozenset({"skipIf", "skipif"})
_SKIP_WHEN_FALSE = frozenset({"skipUnless"})


def _last_name(node: cst.BaseExpression) -> Optional[str]:
    dotted = dotted_name(node.func if isinstance(node, cst.Call) else node)
    return None if dotted is None else dotted.rpartition(".")[2]


def _parameter_names(node: cst.FunctionDef) -> list[str]:
    params = node.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    return [param.name.value for param in every]


class MarkerReader:
    """What test markers promise: ``@pytest.mark.skipif(not torch.cuda.is_available(), ...)``,
    ``@unittest.skipUnless(...)``, a marker kept in a variable (``requires_gpu = ...``) and used
    as a decorator or in ``pytest.param(..., marks=...)``, and fixtures that skip without CUDA."""

    def __init__(self, classifier: ConditionClassifier) -> None:
        self.classifier = classifier
        self.marker_variables: dict[str, Cover] = {}
        self.skipping_fixtures: dict[str, Cover] = {}

    def marker_cover(self, marker: cst.BaseExpression) -> Optional[Cover]:
        """What a decorator, a `pytestmark` value or a `marks=` value promises the test."""
        if isinstance(marker, (cst.List, cst.Tuple)):
            return _widest(self.marker_cover(element.value) for element in marker.elements)
        dotted = dotted_name(marker)
        if dotted is not None and dotted in self.marker_variables:
            return self.marker_variables[dotted]
        cover = self._skip_cover(marker)
        if cover is not None:
            return cover
        if isinstance(marker, cst.Call) and _last_name(marker) == "usefixtures":
            names = (string_value(arg.value) for arg in marker.args)
            return _widest(self.skipping_fixtures.get(name or "") for name in names)
        # An unknown GPU-only marker (`@requires_cuda`, `@RunIf(min_cuda_gpus=2)`).
        return Cover.SEVERAL if self.classifier.mentions_device(marker) else None

    def _skip_cover(self, marker: cst.BaseExpression) -> Optional[Cover]:
        """`skipIf(not torch.cuda.is_available())` promises one GPU, `skipIf(device_count() < 2)`
        several; None where the condition is not a definite availability test."""
        if not isinstance(marker, cst.Call) or not marker.args:
            return None
        method = _last_name(marker)
        if method not in _SKIP_WHEN_TRUE and method not in _SKIP_WHEN_FALSE:
            return None
        polarity = self.classifier.definite(marker.args[0].value)
        return false_cover(polarity) if method in _SKIP_WHEN_TRUE else true_cover(polarity)

    def record_marker(
        self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression
    ) -> None:
        """`requires_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason=...)`."""
        cover = self._skip_cover(value)
        if cover is None:
            return
        for target in targets:
            dotted = dotted_name(target)
            if dotted is not None:
                self.marker_variables[dotted] = cover

    def definition_cover(self, node: Union[cst.FunctionDef, cst.ClassDef]) -> Optional[Cover]:
        """A GPU-only test (a skip marker, a fixture that skips) or a ``*_cuda``/``*gpu*``
        helper. A test's name is no guard: ``test_forward_cuda`` with no skip marker is
        exactly what fails on a CPU-only CI runner."""
        name = node.name.value
        # `get_device()` is where a device gets chosen, not GPU-only code: only the name test
        # skips it.
        named_for_gpu = bool(_FLAG_PATTERN.search(name)) and "device" not in name.lower()
        if named_for_gpu and not name.startswith(("__", "test", "Test")):
            return Cover.SEVERAL
        covers = [self.marker_cover(decorator.decorator) for decorator in node.decorators]
        if isinstance(node, cst.FunctionDef):
            covers.extend(map(self.skipping_fixtures.get, _parameter_names(node)))
        return _widest(covers)

    def param_cover(self, node: cst.Call) -> Optional[Cover]:
        """`pytest.param(torch.device("cuda"), marks=pytest.mark.skipif(...))`: the values
        exist only for the test case the marks let run."""
        func = node.func
        called = func.attr.value if isinstance(func, cst.Attribute) else None
        if called != "param" and not (isinstance(func, cst.Name) and func.value == "param"):
            return None
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "marks":
                return self.marker_cover(arg.value)
        return None

    def find_fixtures(self, body: Iterable[cst.CSTNode]) -> None:
        """Fixtures of the file (at module level or in a class) that skip without CUDA."""
        for statement in body:
            if isinstance(statement, cst.ClassDef):
                self.find_fixtures(statement.body.body)
            if not isinstance(statement, cst.FunctionDef):
                continue
            name = self._fixture_name(statement)
            cover = None if name is None else _setup_cover(statement, self.classifier)
            if name is not None and cover is not None:
                self.skipping_fixtures[name] = cover

    @staticmethod
    def _fixture_name(node: cst.FunctionDef) -> Optional[str]:
        for decorator in node.decorators:
            marker = decorator.decorator
            if _last_name(marker) != "fixture":
                continue
            renamed = argument(marker, -1, "name") if isinstance(marker, cst.Call) else None
            named = None if renamed is None else string_value(renamed.value)
            return named or node.name.value
        return None


def _setup_cover(node: cst.FunctionDef, classifier: ConditionClassifier) -> Optional[Cover]:
    """What the rest of a test can count on when this function (a ``setUp``, a fixture) skips
    or fails, at its top level, when CUDA is missing."""
    covers: list[Optional[Cover]] = []
    for inner in node.body.body:
        if isinstance(inner, cst.If) and suite_exits(inner.body):
            covers.append(false_cover(classifier.classify(inner.test)))
    return _widest(covers)


def _setup_skips_without_cuda(
    node: cst.ClassDef, classifier: ConditionClassifier
) -> Optional[Cover]:
    """A test class whose ``setUp`` skips (or fails) when CUDA is missing."""
    return _widest(
        _setup_cover(statement, classifier)
        for statement in node.body.body
        if isinstance(statement, cst.FunctionDef) and statement.name.value in _SETUP_METHODS
    )


class GuardTracker:
    """Keeps, during one traversal, the count of guards around the current node: every guard,
    and those that promise several GPUs (which a hard-coded GPU index 1 or more needs)."""

    def __init__(self, classifier: ConditionClassifier) -> None:
        self.classifier = classifier
        self.markers = MarkerReader(classifier)
        self._depth = 0
        self._several_depth = 0
        # Guards that hold for the rest of a block (after an early exit), one entry per open
        # block: [every guard, guards promising several GPUs].
        self._block_guards: list[list[int]] = []
        self._polarities: dict[int, Optional[Polarity]] = {}
        self._gpu_only_classes: dict[str, Cover] = {}

    @property
    def guarded(self) -> bool:
        """Whether code here runs only where CUDA is there (or the user chose the device)."""
        return self._depth > 0

    @property
    def guarded_for_several_gpus(self) -> bool:
        """Whether code here runs only where two or more GPUs are there (or the user chose)."""
        return self._several_depth > 0

    # Exact types below: faster than isinstance (ABCMeta), and LibCST's classes are final.
    def enter(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind in _BLOCKS:
            self._block_guards.append([0, 0])
            if kind is cst.Module:
                self.markers.find_fixtures(node.body)  # type: ignore[attr-defined]
        elif kind is cst.ClassDef:
            cover = self._class_cover(node)  # type: ignore[arg-type]
            if cover is not None:
                self._gpu_only_classes[node.name.value] = cover  # type: ignore[attr-defined]
        elif kind is cst.If or kind is cst.IfExp:
            self._polarities[id(node)] = self.classifier.classify(node.test)  # type: ignore[attr-defined]
        elif kind is cst.BooleanOperation:
            self._polarities[id(node)] = self.classifier.classify(node.left)  # type: ignore[attr-defined]

    def leave(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind in _BLOCKS:
            every, several = self._block_guards.pop()
            self._depth -= every
            self._several_depth -= several
        elif kind is cst.If:
            self._guard_rest_of_block(self._exit_cover(node))  # type: ignore[arg-type]
            self._polarities.pop(id(node), None)
        elif kind is cst.IfExp or kind is cst.BooleanOperation:
            self._polarities.pop(id(node), None)
        elif isinstance(node, cst.Assert):
            self._guard_rest_of_block(true_cover(self.classifier.classify(node.test)))
        elif isinstance(node, cst.Assign):
            targets: list[cst.BaseExpression] = [t.target for t in node.targets]
            self.classifier.record_assignment(targets, node.value)
            self.markers.record_marker(targets, node.value)
            if any(dotted_name(target) == "pytestmark" for target in targets):
                self._guard_rest_of_block(self.markers.marker_cover(node.value))
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            self.classifier.record_assignment([node.target], node.value)
            self.markers.record_marker([node.target], node.value)

    def enter_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        cover = self._attribute_cover(node, attribute)
        if cover is not None:
            self._depth += 1
            self._several_depth += cover is Cover.SEVERAL

    def leave_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        cover = self._attribute_cover(node, attribute)
        if cover is not None:
            self._depth -= 1
            self._several_depth -= cover is Cover.SEVERAL

    # The attributes `_attribute_cover` can answer for: traversals announce only these.
    ATTRIBUTES: ClassVar[dict[type, frozenset[str]]] = {
        cst.If: frozenset({"body", "orelse"}),
        cst.IfExp: frozenset({"body", "orelse"}),
        cst.BooleanOperation: frozenset({"right"}),
        cst.FunctionDef: frozenset({"body"}),
        cst.ClassDef: frozenset({"body"}),
        cst.Try: frozenset({"body"}),
        cst.Call: frozenset({"args"}),
    }

    def _attribute_cover(self, node: cst.CSTNode, attribute: str) -> Optional[Cover]:
        kind = type(node)
        if kind is cst.Call:  # the most frequent: `param_cover` rejects most calls at once
            return self.markers.param_cover(node)  # type: ignore[arg-type]
        if kind is cst.If or kind is cst.IfExp:
            polarity = self._polarities.get(id(node))
            if attribute == "body":
                return true_cover(polarity)
            return false_cover(polarity) if attribute == "orelse" else None
        if kind is cst.BooleanOperation:
            polarity = self._polarities.get(id(node))
            if isinstance(node.operator, cst.And):  # type: ignore[attr-defined]
                return true_cover(polarity)
            return false_cover(polarity)
        if kind is cst.FunctionDef:
            return self.markers.definition_cover(node)  # type: ignore[arg-type]
        if kind is cst.ClassDef:
            return self._gpu_only_classes.get(node.name.value)  # type: ignore[attr-defined]
        if kind is cst.Try:
            return Cover.SEVERAL if _catches_errors(node) else None  # type: ignore[arg-type]
        return None

    def _class_cover(self, node: cst.ClassDef) -> Optional[Cover]:
        """Decorated or named for the GPU, skipping in ``setUp``, or derived from such a class."""
        return _widest(
            [
                self.markers.definition_cover(node),
                _setup_skips_without_cuda(node, self.classifier),
                *(self._gpu_only_classes.get(dotted_name(base.value) or "") for base in node.bases),
            ]
        )

    def _exit_cover(self, node: cst.If) -> Optional[Cover]:
        """What the rest of the block can count on after ``if <no GPU>: return``."""
        polarity = self._polarities.get(id(node))
        if suite_exits(node.body):
            return false_cover(polarity)
        if isinstance(node.orelse, cst.Else) and suite_exits(node.orelse.body):
            return true_cover(polarity)
        return None

    def _guard_rest_of_block(self, cover: Optional[Cover]) -> None:
        if cover is not None and self._block_guards:
            self._block_guards[-1][0] += 1
            self._depth += 1
            if cover is Cover.SEVERAL:
                self._block_guards[-1][1] += 1
                self._several_depth += 1
