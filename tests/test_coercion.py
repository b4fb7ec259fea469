"""`coercion`: names coerced into tensors, and the positions helpers return them at."""

from __future__ import annotations

import ast
import textwrap

import pytest

from devlint.analysis.coercion import (
    ALONE,
    coerced_name,
    coerced_returns,
    coerced_value,
    tensor_from,
)
from devlint.analysis.names import ImportMap


def _parsed(code: str) -> tuple[ast.Module, ImportMap]:
    tree = ast.parse(textwrap.dedent(code))
    names = ImportMap()
    names.add_syntax_statements(tree.body)
    return tree, names


def _function(code: str) -> tuple[ast.FunctionDef, ImportMap]:
    tree, names = _parsed(code)
    function = tree.body[-1]
    assert isinstance(function, ast.FunctionDef)
    return function, names


@pytest.mark.parametrize(
    ("statement", "coerced"),
    [
        ("if not isinstance(v, torch.Tensor):\n    v = torch.tensor(v)", "v"),
        ("if not torch.is_tensor(v):\n    v = torch.as_tensor(v, dtype=torch.float32)", "v"),
        # a device given: not on the CPU
        ("if not isinstance(v, torch.Tensor):\n    v = torch.tensor(v, device=d)", None),
        # an `else` may rebind it
        ("if not isinstance(v, torch.Tensor):\n    v = torch.tensor(v)\nelse:\n    v = 1", None),
        # the test proves nothing where it holds
        ("if isinstance(v, torch.Tensor):\n    v = torch.tensor(v)", None),
        # another name rebound
        ("if not isinstance(v, torch.Tensor):\n    w = torch.tensor(v)", None),
        ("if not isinstance(v, torch.Tensor):\n    v = np.asarray(v)", None),
    ],
)
def test_coerced_name(statement: str, coerced: str | None) -> None:
    tree, names = _parsed("import torch\nimport numpy as np\n" + statement)
    assert coerced_name(tree.body[-1], names) == coerced


def test_tensor_from_allows_conversions_in_place_only() -> None:
    function, names = _function(
        """
        import torch
        def f(v, w):
            if not isinstance(v, torch.Tensor):
                v = torch.tensor(v)
            if not v.dtype.is_floating_point:
                v = v.float()
            use(v)
            v = w
            use(v)
        """
    )
    assert tensor_from(function.body, "v", 3, names)
    assert not tensor_from(function.body, "v", 5, names)
    assert not tensor_from(function.body, "v", 0, names)
    assert not tensor_from(function.body, "w", 3, names)


def test_coerced_returns_positions_and_none_paths() -> None:
    function, names = _function(
        """
        import torch
        def check_val(val, eps):
            if val is None:
                return None, None, eps
            if not isinstance(val, torch.Tensor):
                val = torch.tensor(val)
            return val, eps, eps
        """
    )
    assert coerced_returns(function, names) == {0}


def test_coerced_returns_alone_and_refusals() -> None:
    alone, names = _function(
        """
        import torch
        def as_tensor(v):
            if not torch.is_tensor(v):
                v = torch.tensor(v)
            return v
        """
    )
    assert coerced_returns(alone, names) == {ALONE}
    early, names = _function(
        """
        import torch
        def f(v):
            if isinstance(v, list):
                return v
            if not torch.is_tensor(v):
                v = torch.tensor(v)
            return v
        """
    )
    assert coerced_returns(early, names) == frozenset()
    nested, names = _function(
        """
        import torch
        def f(v):
            if not torch.is_tensor(v):
                v = torch.tensor(v)
            for _ in range(2):
                return v
        """
    )
    assert coerced_returns(nested, names) == frozenset()


def test_coerced_value_through_a_helper_or_an_unpacking() -> None:
    tree, names = _parsed(
        """
        import torch
        def check(v):
            if not torch.is_tensor(v):
                v = torch.tensor(v)
            return v, 1.0
        def init(low, high):
            low, eps = check(low)
            high = 2
            use(low, high)
        """
    )
    check, init = tree.body[1], tree.body[2]
    assert isinstance(check, ast.FunctionDef) and isinstance(init, ast.FunctionDef)
    functions = {"check": check}
    low, high = init.body[2].value.args  # type: ignore[attr-defined]
    assert coerced_value(low, init, 2, names, functions)
    assert not coerced_value(high, init, 2, names, functions)  # rebound to a number
    assert not coerced_value(low, init, 2, names, {})  # the helper out of sight
