"""Parameters a docstring documents as tensors (`analysis.docstrings`)."""

from __future__ import annotations

import ast

import pytest

from devlint.analysis.docstrings import documented_tensors
from tests.helpers import lint_snippet


def _documented(docstring: str) -> set[str]:
    source = f'def f(x, y, mask):\n    """{docstring}"""\n'
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    return documented_tensors(function)


@pytest.mark.parametrize(
    ("docstring", "expected"),
    [
        # NumPy and SpeechBrain sections.
        ("Sum.\n\nParameters\n----------\nx : torch.Tensor\n    The input.\ny : int\n", {"x"}),
        ("Sum.\n\nArguments\n---------\nx : torch.Tensor (batch, time)\n    Input.\n", {"x"}),
        ("Sum.\n\nArguments\n---------\nmask : torch.BoolTensor, optional\n", {"mask"}),
        # Google.
        (
            "Sum.\n\nArgs:\n    x (Tensor): the input.\n    y (torch.Tensor, optional): more.\n",
            {"x", "y"},
        ),
        ("Sum.\n\nArgs:\n    x (Tensor or np.ndarray): the input.\n", set()),
        ("Sum.\n\nArgs:\n    x (List[Tensor]): the inputs.\n", set()),
        # Sphinx.
        ("Sum.\n\n:param x: the input\n:type x: torch.Tensor\n", {"x"}),
        ("Sum.\n\n:param torch.Tensor y: the input\n", {"y"}),
        # Only the parameters' section counts; a tensor in words is no type.
        ("Sum.\n\nReturns\n-------\nx : torch.Tensor\n", set()),
        ("Sum.\n\nArguments\n---------\nx : tensor\n    Its size.\n", set()),
        ("Sum of x, a torch.Tensor.", set()),
    ],
)
def test_documented_tensors(docstring: str, expected: set[str]) -> None:
    assert _documented(docstring) == expected


@pytest.mark.parametrize(("documented", "expected"), [(True, [("DEV005", 8)]), (False, [])])
# In a file that places something on a device; elsewhere only annotations count (CPU-side code).
def test_a_documented_parameter_lives_on_the_callers_device(
    documented: bool, expected: list[tuple[str, int]]
) -> None:
    kind = "torch.Tensor" if documented else "the features"
    source = (
        "import torch\n"
        "def length_range(feats, len_dim):\n"
        f'    """Arguments\n    ---------\n    feats : {kind}\n        Features.\n    """\n'
        "    return feats + torch.arange(feats.shape[len_dim])\n"
        "def run(model, feats, device):\n"
        "    return model.to(device)(length_range(feats.to(device), 1))\n"
    )
    findings = lint_snippet(source, {"DEV005"})
    assert [(f.code, f.start.row) for f in findings] == expected
