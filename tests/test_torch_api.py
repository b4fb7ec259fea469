"""The torch API table: generated from torch's declarations, shipped, read without torch."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from devlint.analysis import torch_api
from devlint.analysis.generate_torch_api import DATA_FILE, generate, render
from tests.helpers import REPO_ROOT
from tests.test_flow_patterns import flow_findings

SHIPPED = json.loads(DATA_FILE.read_text(encoding="utf-8"))
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="generating the table reads torch's stubs"
)


@needs_torch
def test_the_shipped_table_is_what_the_installed_torch_declares() -> None:
    # Regenerate with `python -m devlint.analysis.generate_torch_api` after a torch upgrade.
    assert render(generate()) == DATA_FILE.read_text(encoding="utf-8")


def test_the_table_records_the_torch_it_came_from() -> None:
    assert SHIPPED["format"] == 1
    assert SHIPPED["torch"] == torch_api.TORCH_VERSION
    assert SHIPPED["torch"][:2].rstrip(".").isdigit()


@pytest.mark.parametrize(
    ("group", "name"),
    [
        ("factories", "zeros"),
        ("factories", "arange"),
        ("factories", "hann_window"),
        ("like_factories", "zeros_like"),
        ("keeping_functions", "cat"),
        ("keeping_functions", "log"),
        ("operand_functions", "matmul"),
        ("keeping_methods", "float"),
        ("keeping_methods", "log"),
        ("keeping_methods", "sum"),
        ("operand_methods", "add"),
        ("new_methods", "new_zeros"),
        ("host_methods", "item"),
        ("host_methods", "tolist"),
    ],
)
def test_the_generator_classifies(group: str, name: str) -> None:
    assert name in SHIPPED[group]


@pytest.mark.parametrize(
    ("group", "name"),
    [
        ("factories", "normal"),  # a factory only when given numbers
        ("factories", "zeros_like"),
        ("keeping_functions", "zeros"),
        ("operand_functions", "embedding_bag"),  # offsets and lengths may stay on the CPU
        ("keeping_methods", "to"),  # moves: `device=`
        ("keeping_methods", "item"),
        ("host_methods", "numpy"),  # an array, not a number
    ],
)
def test_the_generator_leaves_out(group: str, name: str) -> None:
    assert name not in SHIPPED[group]


def test_hand_overrides_keep_what_declarations_cannot_tell() -> None:
    assert "torch.from_numpy" in torch_api.FACTORIES
    assert "torch.einsum" in torch_api.COMBINING_FUNCTIONS
    assert "copy_" not in torch_api.OPERAND_METHODS  # copies across devices
    assert "values" not in torch_api.PLACEMENT_KEEPING_METHODS  # a dict's, too


def test_linting_imports_no_torch() -> None:
    code = (
        "import sys\n"
        "from devlint.engine import RuleSet, lint_source\n"
        "from devlint.rules import ALL_RULES\n"
        "rules = RuleSet({rule.code for rule in ALL_RULES})\n"
        "source = b'import torch\\nx = torch.zeros(2).cuda()\\ny = x + torch.ones(2)\\n'\n"
        "assert lint_source('t.py', source, rules).findings\n"
        "assert 'torch' not in sys.modules, 'linting imported torch'\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr


def test_generated_entries_carry_placements() -> None:
    # `hann_window` (a factory) and `log1p`/`logaddexp` (keeping) come from the table alone.
    body = (
        'model = nn.Linear(10, 2).to("cuda")\n'
        "w = torch.hann_window(2)\n"
        "v = torch.hann_window(2)\n"
        'out = model(torch.ones(3, 10, device="cuda"))\n'
        "y = out + w.log1p()\n"
        "z = out + torch.logaddexp(v, v)\n"
        "n = out + w.numel()\n"
    )
    # each reported at its factory, citing the operation that mixes it with `out`
    assert flow_findings(body) == [("DEV006", 2, 5), ("DEV006", 3, 5)]
