"""The per-rule text tests only skip work: they never hide a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.analysis import prefilter
from devlint.config import ALL_CODES
from devlint.engine import RuleSet, lint_source
from devlint.rules import ALL_RULES, RULES_BY_CODE, Rule
from devlint.torch_floor import DeviceStyle, TorchFloor, parse_version

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
        (prefilter.TORCH_LOAD, "state = torch.load (path)"),
        (prefilter.TORCH_LOAD, "import numpy as np, torch as th\nstate = th.load(path)"),
        (prefilter.TORCH_LOAD, "from torch import (\n    save,\n    load as restore,\n)"),
        (prefilter.TORCH_LOAD, "from torch import (  # c\n    load,\n)"),
        (prefilter.TORCH_LOAD, "from  torch import \\\n    load"),
        (prefilter.TORCH_LOAD, "state = torch \\\n    .load(path)"),
        (prefilter.TORCH_LOAD, "state = (torch\n    .load)(path)"),
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
        (prefilter.TORCH_LOAD, "import json, torch\nstate = json.load(f)\nt = torch.ones(2)"),
        (prefilter.TORCH_LOAD, "from torch import nn\nimport json\nstate = json.load(f)"),
    ],
)
def test_text_tests_reject_files_without_the_words(test: prefilter.TextTest, text: str) -> None:
    assert not test.search(text)


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("DEV001", "x = x.cuda (\n)"),
        ("DEV001", "d = torch.device(f'cuda:{rank}')"),
        ("DEV001", "x = x.to(r'cuda')"),
        ("DEV010", "x = x.cuda(0x1)"),
        ("DEV010", "d = torch.device('cuda', index=1)"),
        ("DEV010", 'd = torch.device("cuda",\n    1)'),
        ("DEV010", "torch.cuda.set_device( 2 )"),
        ("DEV010", "x = x.to('cuda:10')"),
        ("DEV012", "x = x.to(\n    0)"),
        ("DEV012", "d = torch.device(0)"),
        ("DEV012", "y = x.new_zeros(3, device = 0)"),
        ("DEV014", "d = 'cuda' if torch.cuda.is_available () else \"cpu\"\nx.pin_memory()"),
        ("DEV016", "d = 'mps'\nx = x.to(d).double()"),
    ],
)
def test_rule_text_tests_accept_unusual_spellings(rule: str, text: str) -> None:
    assert RULES_BY_CODE[rule].may_fire(text)


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("DEV001", "x = x.to(device)  # was cuda"),
        ("DEV010", "x = x.to('cuda:0')\ny = y.cuda()"),
        ("DEV012", "x = x.to(device)"),
        ("DEV014", "torch.cuda.synchronize()"),  # no fallback to the CPU: DEV001's code
        ("DEV016", "x = x.to('mps')"),
    ],
)
def test_rule_text_tests_skip_files_the_rule_cannot_fire_on(rule: str, text: str) -> None:
    assert not RULES_BY_CODE[rule].may_fire(text)


def test_a_rule_that_reads_the_torch_floor_runs_only_where_one_is_declared() -> None:
    assert "DEV011" not in {rule.code for rule in RuleSet(ALL_CODES).rules}
    floor = DeviceStyle(TorchFloor(parse_version("2.0"), "pyproject.toml:3"))
    assert "DEV011" in {rule.code for rule in RuleSet(ALL_CODES, style=floor).rules}


@pytest.mark.parametrize(
    "text",
    [
        "x.to(0)",
        "x.to (\n    0)",
        "torch.device(0)",
        "t = torch.ones(2, device = 1)",
        "mydevice=0",
        "proto(3)",
        "subtype=2",
        "x.to(d)",
    ],
)
def test_a_confirmed_test_agrees_with_its_exact_test(text: str) -> None:
    integer_device = RULES_BY_CODE["DEV012"].required_patterns[0]
    assert isinstance(integer_device, prefilter.Confirmed)
    assert integer_device.search(text) == bool(integer_device.exact.search(text))
    assert not integer_device.exact.search(text) or integer_device.loose.search(text)
