"""The per-rule text tests only skip work: they never hide a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.analysis import prefilter
from devlint.config import ALL_CODES
from devlint.engine import RuleSet, lint_source
from devlint.rules import ALL_RULES, Rule

from .helpers import FIXTURES


class _Unfiltered(RuleSet):
    """Every enabled rule runs on every file: what the prefilter must agree with."""

    def active(self, source: str) -> list[Rule]:
        return list(self.rules)


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: p.name)
def test_fixtures_give_the_same_findings_with_and_without_the_prefilter(path: Path) -> None:
    data = path.read_bytes()
    filtered = lint_source(str(path), data, RuleSet(ALL_CODES))
    unfiltered = lint_source(str(path), data, _Unfiltered(ALL_CODES))
    assert filtered.findings == unfiltered.findings


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.INVALID], ids=lambda r: r.code)
def test_every_invalid_example_passes_its_rules_prefilter(rule: type[Rule]) -> None:
    for example in rule.INVALID:
        assert rule.may_fire(example.code), example.code


@pytest.mark.parametrize(
    ("test", "text"),
    [
        (prefilter.DEVICE_SOURCE, "x = x.to (device)"),
        (prefilter.DEVICE_SOURCE, "x = x.to(\n    d)"),
        (prefilter.DEVICE_SOURCE, "from torch import device as D\nd = D(name)"),
        (prefilter.DEVICE_SOURCE, "x = torch.zeros(3, device=d)"),
        (prefilter.DEVICE_OR_INPUT_SOURCE, "class M(nn.Module):\n    def  forward(self, x):"),
        (prefilter.CPU_TENSOR_SOURCE, "from torch import zeros as z\nm = z(3)"),
        (prefilter.CPU_TENSOR_SOURCE, "import torch as t\nr = t.range(3)"),
        (prefilter.CPU_TENSOR_SOURCE, "from torch import (\n    cat,\n    range,\n)"),
        (prefilter.CPU_TENSOR_SOURCE, "for x, y in train_dl:\n    pass"),
        (prefilter.CPU_TENSOR_SOURCE, "for x, y in self.valLoader:\n    pass"),
        (prefilter.CPU_TENSOR_SOURCE, "y = x.cpu()"),
        (prefilter.MOVE_CALL, "optimizer.cuda ()"),
        (prefilter.SELF_FACTORY_ASSIGNMENT, "self.scale = torch.ones(4)"),
        (prefilter.SELF_FACTORY_ASSIGNMENT, "self.scale = \\\n    th.FloatTensor([1])"),
        (prefilter.SELF_FACTORY_ASSIGNMENT, "from torch import ones as o\nself.s = o(4)"),
    ],
)
def test_text_tests_accept_unusual_spellings(test: prefilter.TextTest, text: str) -> None:
    assert test.search(text)


@pytest.mark.parametrize(
    ("test", "text"),
    [
        (prefilter.DEVICE_SOURCE, "x = x.float()\ny = len(x)"),
        (prefilter.CPU_TENSOR_SOURCE, "import os\nfor i in range(3):\n    print(i)"),
        (prefilter.SELF_FACTORY_ASSIGNMENT, "self.scale = scale\nimport numpy as np"),
    ],
)
def test_text_tests_reject_files_without_the_words(test: prefilter.TextTest, text: str) -> None:
    assert not test.search(text)
