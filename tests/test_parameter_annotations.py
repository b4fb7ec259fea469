"""What a parameter's annotation says it holds: a tensor, or a sequence of tensors."""

from __future__ import annotations

import ast

import pytest

from devlint.analysis.parameters import annotated_as_tensor, annotated_as_tensors


def _annotation(text: str) -> ast.expr:
    expression = ast.parse(text, mode="eval").body
    assert isinstance(expression, ast.expr)
    return expression


@pytest.mark.parametrize(
    ("annotation", "tensor", "tensors"),
    [
        ("Tensor", True, False),
        ("torch.Tensor", True, False),
        ("Optional[Tensor]", True, False),
        ("'torch.Tensor'", True, False),
        ("torch.BoolTensor", True, False),
        ("tp.Optional[torch.Tensor]", True, False),
        ("Union[Tensor, None]", True, False),
        ("Tensor | None", True, False),
        ("'Optional[torch.LongTensor]'", True, False),
        ("Union[Tensor, np.ndarray]", False, False),
        ("Tensor | int | None", False, False),
        ("'not an annotation ('", False, False),
        ("List[torch.Tensor]", False, True),
        ("list[Tensor]", False, True),
        ("typing.Sequence[Tensor]", False, True),
        ("Tuple[Tensor, ...]", False, True),
        ("tuple[Tensor, torch.Tensor]", False, True),
        ("List[Optional[Tensor]]", False, False),  # items may be None
        ("Tuple[Tensor, int]", False, False),
        ("Dict[str, Tensor]", False, False),
        ("List[float]", False, False),
        ("np.ndarray", False, False),
    ],
)
def test_annotations(annotation: str, tensor: bool, tensors: bool) -> None:
    assert annotated_as_tensor(_annotation(annotation)) is tensor
    assert annotated_as_tensors(_annotation(annotation)) is tensors
