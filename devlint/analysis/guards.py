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

It also counts how many GPUs the guards promise (``is_available()`` one,
``device_count() > 1`` several), for a hard-coded GPU index. Conditions are
read in :mod:`devlint.analysis.conditions`, test markers and fixtures in
:mod:`devlint.analysis.test_markers`.
"""

from __future__ import annotations

import ast
from typing import ClassVar, Optional, Union

import libcst as cst

from devlint.analysis import syntax
from devlint.analysis.conditions import (
    AVAILABILITY_CHECKS,
    CATCHING_ERRORS,
    ConditionClassifier,
    Cover,
    Polarity,
    checks_availability,
    false_cover,
    sub_expressions,
    suite_exits,
    true_cover,
    widest,
)
from devlint.analysis.names import ImportMap, dotted_name
from devlint.analysis.test_markers import MarkerReader, setup_skips_without_cuda

# Re-exported: rules and the engine ask this module.
__all__ = [
    "AVAILABILITY_CHECKS",
    "ConditionClassifier",
    "Cover",
    "GuardTracker",
    "Polarity",
    "checks_availability",
    "expects_error",
    "expects_error_in_syntax",
    "suite_exits",
]

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
        for part in sub_expressions(handler.type):
            if isinstance(part, cst.Name) and part.value in CATCHING_ERRORS:
                return True
    return False


_BLOCKS = frozenset({cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite})


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
        return widest(
            [
                self.markers.definition_cover(node),
                setup_skips_without_cuda(node, self.classifier),
                *(self._gpu_only_classes.get(dotted_name(base.value) or "") for base in node.bases),
            ]
        )

    def _exit_cover(self, node: cst.If) -> Optional[Cover]:
        """What the rest of the block can count on after ``if <no GPU>: return``. Not after an
        option's validation (`if map_location not in [None, "cpu"]: raise TypeError(...)`):
        what passes it may be any of the values listed."""
        if _rejects_unlisted(node):
            return None
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


def _rejects_unlisted(node: cst.If) -> bool:
    """`if value not in (None, "cpu", ...): raise ...`: the values written out, the CPU's among
    them (`None` or `"cpu"`)."""
    test = node.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    listed = target.comparator
    if not (
        isinstance(target.operator, cst.NotIn)
        and isinstance(listed, (cst.List, cst.Tuple, cst.Set))
    ):
        return False
    cpu_listed = any(
        (isinstance(item.value, cst.Name) and item.value.value == "None")
        or (isinstance(item.value, cst.SimpleString) and item.value.evaluated_value == "cpu")
        for item in listed.elements
    )
    body = node.body.body
    last = body[-1] if body else None
    raises = isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise)
    return cpu_listed and raises
