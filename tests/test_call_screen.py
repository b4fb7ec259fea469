"""The structural tests of the LibCST rules only skip work: they never hide a finding."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from devlint import engine
from devlint.analysis.call_screen import CallFacts, call_facts
from devlint.config import ALL_CODES
from devlint.engine import RuleSet, lint_source
from devlint.rules import ALL_RULES, RULES_BY_CODE, Rule

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SCREENING_RULES = [rule for rule in ALL_RULES if rule.screens_tree()]


def facts_of(source: str) -> CallFacts:
    return call_facts(ast.parse(source))


def test_the_rules_with_a_structural_test() -> None:
    expected = {"DEV001", "DEV002", "DEV003", "DEV010", "DEV013", "DEV014", "DEV016"}
    assert {rule.code for rule in SCREENING_RULES} == expected


@pytest.mark.parametrize("rule", SCREENING_RULES, ids=lambda rule: rule.code)
def test_every_invalid_example_passes_its_rules_test(rule: type[Rule]) -> None:
    for example in rule.INVALID:
        assert rule.may_fire_in_tree(facts_of(example.code), example.code), example.code


@pytest.mark.parametrize(
    ("code", "source"),
    [
        # what the rules report, written as the examples do not write it
        ("DEV001", "from torch import device as dev\nd = dev(f'cuda:{rank}')"),
        ("DEV001", "parser.add_argument('--device', default='cuda')"),
        ("DEV001", "m = Net().cuda()"),
        ("DEV002", "from torch.cuda import amp\nwith amp.autocast():\n    pass"),
        ("DEV002", "import torch.cuda.amp as A\nscaler = A.GradScaler()"),
        ("DEV003", "class Lion(Optimizer):\n    pass\nopt = Lion(params)\nopt.cuda()"),
        ("DEV003", "import torch\nopt = torch.optim.Rprop(params)\nopt.to(device)"),
        ("DEV010", "from torch.cuda import set_device as sd\nsd(1)"),
        ("DEV010", "x = x.to(torch.device('cuda', 2))"),
        ("DEV010", "x = torch.zeros(3, device='cuda:1')"),
        ("DEV014", "from torch.cuda import synchronize as sync\nsync()"),
        # one `as` name, two imports: the later one is what the call runs
        (
            "DEV013",
            "def other():\n    from contextlib import nullcontext as use\n"
            "from torch import set_default_device as use\nuse('cuda')",
        ),
        ("DEV016", "import torch\nx = torch.zeros(3, dtype=torch.float64, device='mps:0')"),
        (
            "DEV016",
            "import torch\nd = torch.device('mps' if ok else 'cpu')\nx = x.to(d, torch.float64)",
        ),
    ],
)
def test_forms_the_examples_do_not_cover_pass(code: str, source: str) -> None:
    assert RULES_BY_CODE[code].may_fire_in_tree(facts_of(source), source)


@pytest.mark.parametrize(
    ("code", "source"),
    [
        # "cuda" written only where code asks about CUDA: nothing put on it
        ("DEV001", "if torch.cuda.is_available() and x.device.type == 'cuda':\n    pass"),
        ("DEV001", "x = x.to(device)"),
        ("DEV001", "backend = getattr(torch, 'cuda')\nok = is_enabled('cuda')"),
        ("DEV002", "import torch\nwith torch.autocast('cuda'):\n    pass"),
        ("DEV003", "model.to(device)\noptimizer = make(model)"),
        ("DEV010", "y = x.view(1, -1)\nz = x.to(1.5)"),
        ("DEV010", "x = x.to('cuda:0')"),
        ("DEV014", "if torch.cuda.is_available():\n    n = torch.cuda.device_count()"),
        ("DEV016", "x = torch.zeros(3, dtype=torch.float64)  # not on mps"),
        ("DEV016", "if x.device.type == 'mps':\n    y = x.double()"),
    ],
)
def test_files_the_rules_cannot_report_on_fail(code: str, source: str) -> None:
    assert not RULES_BY_CODE[code].may_fire_in_tree(facts_of(source), source)


def test_facts() -> None:
    facts = facts_of(
        "import torch.cuda as tc\nfrom torch.cuda import synchronize as sync\n"
        "sync()\nself.opt.to(d)\nmake().cpu()\nx = f'mps'\ny = 'mps:0' if a else 'cpu'\n"
    )
    assert facts.called_functions == {"sync", "synchronize", "make"}
    assert facts.called_methods == {"to", "cpu"}
    assert facts.moved_receivers == {"opt"}  # a call's result is no dotted name
    assert {"torch", "cuda", "tc", "synchronize", "sync", "opt"} <= facts.attribute_names
    assert facts.cuda_calls == {"sync", "synchronize"}  # the alias, and what it stands for
    assert facts.mps_device and not facts.ordinal_argument
    assert not facts.cuda_device_keyword and not facts.cuda_literal_callees


def _findings_both_ways(paths: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    rules = RuleSet(ALL_CODES)
    screened = {path: lint_source(str(path), path.read_bytes(), rules).findings for path in paths}
    monkeypatch.setattr(Rule, "screens_tree", classmethod(lambda cls: False))
    for path in paths:
        assert lint_source(str(path), path.read_bytes(), rules).findings == screened[path], path


def test_the_fixtures_give_the_same_findings_with_and_without_the_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _findings_both_ways(sorted(p for p in FIXTURES.iterdir() if p.is_file()), monkeypatch)


@pytest.mark.slow
def test_pytorch_source_gives_the_same_findings_with_and_without_the_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = pytest.importorskip("torch")
    root = Path(os.path.dirname(torch.__file__))
    chosen = [p for p in sorted(root.rglob("*.py")) if "cuda" in p.read_text("utf-8", "replace")]
    _findings_both_ways(chosen[:: max(1, len(chosen) // 80)], monkeypatch)


def test_a_file_no_libcst_rule_can_report_on_is_not_parsed_by_libcst(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(source: str) -> None:
        raise AssertionError("LibCST parsed a file no LibCST rule can report on")

    monkeypatch.setattr(engine, "_parse", refuse)
    # "cuda" is written (the text tests pass), but only where the code asks about it
    source = b"import torch\nif x.device.type == 'cuda':\n    print(torch.cuda.device_count())\n"
    assert any(rule.may_fire(source.decode()) for rule in RuleSet(ALL_CODES).rules)
    assert lint_source("check.py", source, RuleSet(ALL_CODES)).findings == []


def test_a_file_with_a_candidate_is_still_parsed_and_reported() -> None:
    source = b"import torch\nx = torch.zeros(3).cuda()\n"
    findings = lint_source("move.py", source, RuleSet(ALL_CODES)).findings
    assert [finding.code for finding in findings] == ["DEV001"]
