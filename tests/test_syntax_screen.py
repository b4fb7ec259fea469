"""The structural screen on CPython's tree only skips work: it never hides a flow finding."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from devlint.analysis.syntax import SourceText
from devlint.analysis.syntax_screen import SyntaxFacts, syntax_facts
from devlint.config import ALL_CODES
from devlint.engine import RuleSet, lint_source
from devlint.flow_context import FlowContext
from devlint.rules import ALL_RULES, RULES_BY_CODE, FlowRule, Rule

from .helpers import lint_snippet
from .test_flow_patterns import BUGGY, HEADER

SCREENING_RULES = [rule for rule in ALL_RULES if issubclass(rule, FlowRule)]


def facts_of(source: str) -> SyntaxFacts:
    return syntax_facts(ast.parse(source), source)


def test_the_device_flow_rules_screen_and_the_core_rules_do_not() -> None:
    flow_rules = {"DEV004", "DEV005", "DEV006", "DEV007", "DEV009", "DEV017"}
    assert {rule.code for rule in SCREENING_RULES} == flow_rules


@pytest.mark.parametrize("rule", SCREENING_RULES, ids=lambda rule: rule.code)
def test_every_invalid_example_passes_its_rules_screen(rule: type[Rule]) -> None:
    for example in rule.INVALID:
        assert rule.may_fire_in(facts_of(example.code)), example.code


@pytest.mark.parametrize("case", sorted(BUGGY))
def test_buggy_training_code_passes_the_screen_of_every_rule_reporting_it(case: str) -> None:
    source = HEADER + BUGGY[case][0]
    codes = {code for code, _, _ in BUGGY[case][1]}
    for code in codes & {rule.code for rule in SCREENING_RULES}:
        assert RULES_BY_CODE[code].may_fire_in(facts_of(source)), code


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = x.to(device)", SyntaxFacts(device_source=True)),
        ("x = x.cuda(1)", SyntaxFacts(device_source=True)),
        ("d = 'cuda:0'", SyntaxFacts(device_source=True)),
        ("x = torch.zeros(3, device=d)", SyntaxFacts(device_source=True)),
        ("x = torch.zeros(3, device=None)", SyntaxFacts()),
        ("x = torch.ones(3, **factory_kwargs)", SyntaxFacts()),
        ("x = x.to()", SyntaxFacts()),
        ("x = torch.zeros(3)", SyntaxFacts(cpu_tensor_source=True)),
        ("x = th.from_numpy(a)", SyntaxFacts(cpu_tensor_source=True)),
        ("x = torch.zeros(3, device='cpu')", SyntaxFacts(cpu_tensor_source=True)),
        ("y = x.cpu()", SyntaxFacts(cpu_tensor_source=True)),
        ("from torch import zeros as z\nm = z(3)", SyntaxFacts(cpu_tensor_source=True)),
        ("from torch import range\nr = range(3)", SyntaxFacts(cpu_tensor_source=True)),
        ("for x, y in train_dl:\n    pass", SyntaxFacts(cpu_tensor_source=True)),
        ("for i in range(3):\n    pass", SyntaxFacts()),
        (
            "class M:\n    async def forward(self, x):\n        pass",
            SyntaxFacts(forward_method=True),
        ),
        ("x.cuda()", SyntaxFacts(device_source=True, discarded_move=True)),
        ("x.cpu()", SyntaxFacts(cpu_tensor_source=True, discarded_move=True)),
        ("print('no device here, says the cpu')", SyntaxFacts()),
    ],
)
def test_facts(source: str, expected: SyntaxFacts) -> None:
    assert facts_of(source) == expected


def test_model_code_with_factory_keywords_is_not_parsed_for_the_flow_rules() -> None:
    # timm's shape: every tensor created with `**dd` (device and dtype), so nothing is surely CPU.
    source = (
        "import torch\nfrom torch import nn\nclass Block(nn.Module):\n"
        "    def __init__(self, dim, device=None, dtype=None):\n"
        "        dd = {'device': device, 'dtype': dtype}\n"
        "        self.scale = nn.Parameter(torch.ones(dim, **dd))\n"
        "    def forward(self, x):\n        return x * self.scale\n"
    )
    rules = RuleSet(ALL_CODES)
    flow = [rule for rule in rules.active(source) if isinstance(rule, FlowRule)]
    assert flow, "the text tests admit it"
    facts = rules.screen(ast.parse(source), source)
    assert facts is not None and not any(rule.may_fire_in(facts) for rule in flow)


def test_a_file_cpython_cannot_parse_is_left_to_libcst() -> None:
    source = "import torch\nx = torch.zeros(3).to(d)\nx.cpu(\n"
    assert [f.code for f in lint_snippet(source, {"DEV000", "DEV004"})] == ["DEV000"]


class _Unscreened(RuleSet):
    def screen(self, tree: ast.Module, source: str) -> None:
        return None  # every file and every function analysed


def _torch_sample(count: int) -> list[Path]:
    torch = pytest.importorskip("torch")
    root = Path(os.path.dirname(torch.__file__))
    candidates = sorted(root.rglob("*.py"))
    chosen = [path for path in candidates if "device" in path.read_text(errors="replace")]
    return chosen[:: max(1, len(chosen) // count)]


@pytest.mark.slow
def test_pytorch_source_gives_the_same_findings_with_and_without_the_screen() -> None:
    screened, unscreened = RuleSet(ALL_CODES), _Unscreened(ALL_CODES)
    for path in _torch_sample(150):
        data = path.read_bytes()
        expected = lint_source(str(path), data, unscreened).findings
        assert lint_source(str(path), data, screened).findings == expected, path


def _examples() -> list[str]:
    snippets = [HEADER + code for code, _ in BUGGY.values()]
    for rule in SCREENING_RULES:
        snippets.extend(example.code for example in rule.INVALID)
        snippets.extend(rule.VALID)
    return snippets


def test_every_example_gives_the_same_findings_with_and_without_the_screen() -> None:
    # The screen skips files and functions; the examples reach them through globals, helpers,
    # `__init__` attributes and `forward`.
    screened, unscreened = RuleSet(ALL_CODES), _Unscreened(ALL_CODES)
    for snippet in _examples():
        data = snippet.encode()
        expected = lint_source("example.py", data, unscreened).findings
        assert lint_source("example.py", data, screened).findings == expected, snippet


@pytest.mark.parametrize(
    ("source", "reported"),
    [
        # The device comes from a global, the CPU tensor from the function.
        (
            "import torch\nmodel = torch.nn.Linear(3, 3).to('cuda')\n"
            "def f():\n    return model(torch.zeros(3, 3))\n",
            True,
        ),
        # The device comes from a helper the function calls.
        (
            "import torch\ndef moved():\n    return torch.ones(3).cuda()\n"
            "def f():\n    return moved() + torch.zeros(3)\n",
            True,
        ),
        # Nothing in reach puts anything on a device: the function is not analysed.
        (
            "import torch\ndef moved():\n    return torch.ones(3)\n"
            "def f():\n    return moved() + torch.zeros(3)\n",
            False,
        ),
    ],
)
def test_functions_are_analysed_where_a_rule_could_report(source: str, reported: bool) -> None:
    tree = ast.parse(source)
    facts = syntax_facts(tree, source)
    context = FlowContext("a.py", tree, SourceText(source), facts)
    context.run({ast.BinOp: lambda node: None, ast.Call: lambda node: None})
    function = tree.body[-1]
    assert isinstance(function, ast.FunctionDef)
    analysed = any(statement is function.body[0] for _, statement in context.flow.visits)
    assert analysed == reported
