"""The device-flow rules read CPython's tree: positions, fixes, noqa and failures stay exact."""

from __future__ import annotations

import ast

import pytest

from devlint.analysis.syntax import SourceText, argument, cuda_literal
from devlint.diagnostics import Position
from devlint.engine import RuleSet, lint_source
from devlint.fixing import apply_fixes
from devlint.rules.discarded_device_move import DiscardedDeviceMove

from .helpers import lint_snippet


def test_columns_count_characters_not_utf8_bytes() -> None:
    # CPython counts UTF-8 bytes: "é" and "€" are 2 and 3 of them, but one column each.
    source = "import torch\nx = torch.zeros(3); s = 'é€'; x.cuda()\n"
    (finding,) = lint_snippet(source, {"DEV004"})
    column = source.splitlines()[1].index("x.cuda()") + 1
    assert (finding.start, finding.end) == (Position(2, column), Position(2, column + 8))


def test_ranges_over_several_lines_and_line_endings() -> None:
    source = "a = 1\r\nb = f(\r\n  'é', x)\rc = 2\n"
    tree = ast.parse(source)
    call = tree.body[1].value  # type: ignore[attr-defined]
    span = SourceText(source).range_of(call)
    assert (span.start.line, span.start.column, span.end.line, span.end.column) == (2, 4, 3, 9)
    assert SourceText(source).code_of(call) == "f('é', x)"  # a multi-line call quoted on one line
    assert SourceText(source).line(4) == "c = 2"


@pytest.mark.parametrize(
    ("call", "position", "keyword", "expected"),
    [
        ("f(a, b)", 1, "k", "b"),
        ("f(a, k=b)", 1, "k", "b"),
        ("f(*rest, b)", 1, "k", None),  # past a `*args`, positions are unknown
        ("f(a)", 1, "k", None),
        ("f(a, **kw)", -1, "k", None),
    ],
)
def test_argument(call: str, position: int, keyword: str, expected: str | None) -> None:
    node = ast.parse(call).body[0].value  # type: ignore[attr-defined]
    found = argument(node, position, keyword)
    assert (ast.unparse(found) if found is not None else None) == expected


@pytest.mark.parametrize(
    ("literal", "expected"),
    [("'cuda'", "cuda"), ("'cuda:1'", "cuda:1"), ("f'cuda:{rank}'", "cuda:{...}"),
     ("'cpu'", None), ("b'cuda'", None), ("f'{kind}:0'", None)],
)  # fmt: skip
def test_cuda_literal(literal: str, expected: str | None) -> None:
    assert cuda_literal(ast.parse(literal).body[0].value) == expected  # type: ignore[attr-defined]


def test_a_noqa_on_the_last_line_of_a_statement_silences_a_flow_finding() -> None:
    source = "import torch\nx = torch.zeros(3)\nx.to(\n    'cuda'\n)  # noqa: DEV004\n"
    assert lint_snippet(source, {"DEV004"}) == []
    assert [f.code for f in lint_snippet(source.replace("  # noqa: DEV004", ""), {"DEV004"})] == [
        "DEV004"
    ]


def test_inside_pytest_raises_nothing_is_reported_but_after_it_is() -> None:
    source = (
        "import pytest, torch\nx = torch.zeros(3)\nwith pytest.raises(RuntimeError):\n"
        "    x + x.cuda()\nx + x.cuda()\n"
    )
    # reported at the factory, citing the operation after the block, not the one inside it
    [found] = lint_snippet(source, {"DEV006"})
    assert (found.code, found.start.row, found.cited[0]) == ("DEV006", 2, Position(5, 1))


def test_grammar_newer_than_cpython_leaves_the_flow_rules_silent_and_the_others_working() -> None:
    # LibCST parses `type` aliases (Python 3.12) on any Python; CPython before 3.12 does not.
    source = "import torch\ntype Batch = list\nx = torch.zeros(3)\nx.cuda()\n"
    try:
        ast.parse(source)
    except SyntaxError:
        assert [f.code for f in lint_snippet(source, {"DEV001", "DEV004"})] == ["DEV001"]
    else:
        assert sorted(f.code for f in lint_snippet(source, {"DEV001", "DEV004"})) == [
            "DEV001",
            "DEV004",
        ]


def test_a_crashing_flow_rule_is_reported_and_the_others_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def explode(self: DiscardedDeviceMove, node: ast.Expr) -> None:
        raise ValueError("boom")

    monkeypatch.setattr(DiscardedDeviceMove, "visit_Expr", explode)
    source = b"import torch\nx = torch.zeros(3)\nx.cuda()\ny = x.cuda() + x\n"
    result = lint_source("a.py", source, RuleSet({"DEV004", "DEV006"}))
    assert [f.code for f in result.findings] == ["DEV006"]
    assert [error.detail.split(":")[0] for error in result.errors] == ["DEV004 crashed"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # The statement starts at its outer parenthesis: the assignment goes before it.
        (
            "import torch\nx = torch.zeros(3)\n(x.cuda())\n",
            "import torch\nx = torch.zeros(3)\nx = (x.cuda())\n",
        ),
        # `.cpu()` goes after the receiver's closing parenthesis, not inside it.
        (
            "import torch\na = torch.zeros(3).cuda()\nn = (a + a).numpy()\n",
            "import torch\na = torch.zeros(3).cuda()\nn = (a + a).cpu().numpy()\n",
        ),
    ],
)
def test_fixes_around_parentheses(source: str, expected: str) -> None:
    (finding,) = lint_snippet(source, {"DEV004", "DEV007"})
    assert finding.fix is not None
    assert apply_fixes(source, [finding.fix]) == (expected, 1)
