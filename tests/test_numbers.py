"""Which attributes of a module's `__init__` hold plain numbers (`analysis.numbers`)."""

from __future__ import annotations

import ast

import pytest

from devlint.analysis.numbers import is_number, number_attributes


def _attributes(init_body: str, numeric: frozenset[str] = frozenset()) -> frozenset[str]:
    source = "def __init__(self, a, b=2):\n" + "".join(
        f"    {line}\n" for line in init_body.split("\n")
    )
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    return number_attributes(function, numeric)


@pytest.mark.parametrize(
    ("body", "numeric", "expected"),
    [
        ("self.eps = 1e-5", frozenset(), {"eps"}),
        ("self.scale = b ** -0.5", frozenset({"b"}), {"scale"}),
        ("head = b // 4\nself.scale = math.sqrt(head)", frozenset({"b"}), {"scale"}),
        ("self.scale = a", frozenset(), set()),  # nothing shows `a` is a number
        ("self.eps = 1e-5\nself.eps = torch.ones(3)", frozenset(), set()),
        ("self.eps = 1e-5\nif a:\n    self.eps = a", frozenset(), set()),
        ("self.eps = 1e-5\nself.eps, self.k = a", frozenset(), set()),
        ("self.eps = 1e-5\nself.eps += a", frozenset(), set()),
        ("n = 3\nn = a\nself.n = n", frozenset(), set()),
        ("self.flag = not a", frozenset(), set()),
    ],
)
def test_number_attributes(body: str, numeric: frozenset[str], expected: set[str]) -> None:
    assert _attributes(body, numeric) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 - 9", True),
        ("-x * 2", True),
        ("max(x, 3)", True),
        ("max(x, key=len)", False),
        ("torch.tensor(1.0)", False),
        ("'text'", False),
        ("y + 1", False),
    ],
)
def test_is_number(expression: str, expected: bool) -> None:
    node = ast.parse(expression, mode="eval").body
    assert is_number(node, {"x"}) is expected
