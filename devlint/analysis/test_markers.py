"""What test markers and fixtures promise: a GPU, several GPUs, or nothing.

``@pytest.mark.skipif(not torch.cuda.is_available(), ...)`` and ``@unittest.skipUnless(...)``
on a test or its class, a marker kept in a variable (``requires_gpu = pytest.mark.skipif(...)``)
used as a decorator or in ``pytest.param(..., marks=...)``, ``usefixtures``, and fixtures of
the file that call ``pytest.skip`` without CUDA, taken by the test as a parameter. A test's name
is no guard.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Optional, Union

import libcst as cst

from devlint.analysis.conditions import (
    ConditionClassifier,
    Cover,
    false_cover,
    suite_exits,
    true_cover,
    widest,
)
from devlint.analysis.devices import argument, string_value
from devlint.analysis.names import dotted_name

_SETUP_METHODS = frozenset({"setUp", "setUpClass", "setup_method", "setup_class"})
# A helper named for the GPU (`train_gpu`, `_cuda_kernel`, `init_nccl`) is GPU-only code.
GPU_NAME = re.compile(r"cuda|gpu|nccl", re.IGNORECASE)
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
            return widest(self.marker_cover(element.value) for element in marker.elements)
        dotted = dotted_name(marker)
        if dotted is not None and dotted in self.marker_variables:
            return self.marker_variables[dotted]
        cover = self._skip_cover(marker)
        if cover is not None:
            return cover
        if isinstance(marker, cst.Call) and _last_name(marker) == "usefixtures":
            names = (string_value(arg.value) for arg in marker.args)
            return widest(self.skipping_fixtures.get(name or "") for name in names)
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
        # `get_gpu_device()` is where a device gets chosen, not GPU-only code; `to_cpu()` or
        # `load_accelerator_state()` works on any device.
        named_for_gpu = bool(GPU_NAME.search(name)) and "device" not in name.lower()
        if named_for_gpu and not name.startswith(("__", "test", "Test")):
            return Cover.SEVERAL
        covers = [self.marker_cover(decorator.decorator) for decorator in node.decorators]
        if isinstance(node, cst.FunctionDef):
            covers.extend(map(self.skipping_fixtures.get, _parameter_names(node)))
        return widest(covers)

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
    return widest(covers)


def setup_skips_without_cuda(
    node: cst.ClassDef, classifier: ConditionClassifier
) -> Optional[Cover]:
    """A test class whose ``setUp`` skips (or fails) when CUDA is missing."""
    return widest(
        _setup_cover(statement, classifier)
        for statement in node.body.body
        if isinstance(statement, cst.FunctionDef) and statement.name.value in _SETUP_METHODS
    )
