"""Type tests that narrow a name: `isinstance(x, torch.Tensor)`, `torch.is_tensor(x)`.

Code that accepts a tensor or an array (`if isinstance(image, torch.Tensor): ... else:
np.expand_dims(image)`) proves on one branch that the name is no tensor, whatever its uses on
the other branch suggest; there its placement is unknown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from devlint.analysis.syntax import dotted_name


@dataclass(frozen=True)
class TypeTest:
    """A test of what ``name`` is: whether it can be a tensor where the test holds, and
    where it fails."""

    name: str
    tensor_if_true: bool
    tensor_if_false: bool


def type_test(test: ast.expr) -> Optional[TypeTest]:
    """The narrowing an `if` test makes, if it is a type test of a name or attribute."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = type_test(test.operand)
        if inner is None:
            return None
        return TypeTest(inner.name, inner.tensor_if_false, inner.tensor_if_true)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        # `isinstance(v, list) and ...`: where it all holds, `v` is a list; where it fails,
        # nothing is known.
        for operand in test.values:
            inner = type_test(operand)
            if inner is not None and not inner.tensor_if_true:
                return TypeTest(inner.name, False, True)
        return None
    if isinstance(test, ast.Compare):
        return _type_comparison(test)
    if not (isinstance(test, ast.Call) and not test.keywords):
        return None
    function = dotted_name(test.func) or ""
    if function.rpartition(".")[2] == "is_tensor" and len(test.args) == 1:
        name = dotted_name(test.args[0])
        return TypeTest(name, True, False) if name else None
    if function != "isinstance" or len(test.args) != 2:
        return None
    name = dotted_name(test.args[0])
    classes = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    class_names = [dotted_name(cls) or "" for cls in classes]
    if name is None or not all(class_names):
        return None
    if any(cls.rpartition(".")[2].endswith("Tensor") for cls in class_names):
        # Only a tensor passes: where the test fails, the name is something else.
        only_tensors = all(cls.rpartition(".")[2].endswith("Tensor") for cls in class_names)
        return TypeTest(name, True, not only_tensors)
    return TypeTest(name, False, True)


def _type_comparison(test: ast.Compare) -> Optional[TypeTest]:
    """`type(x) is Image`, `type(x) == list`: where it holds, `x` is that type."""
    if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Is, ast.Eq)):
        return None
    left, right = test.left, test.comparators[0]
    if not (
        isinstance(left, ast.Call)
        and dotted_name(left.func) == "type"
        and len(left.args) == 1
        and not left.keywords
    ):
        return None
    name, class_name = dotted_name(left.args[0]), dotted_name(right)
    if name is None or class_name is None:
        return None
    is_tensor = class_name.rpartition(".")[2].endswith("Tensor")
    return TypeTest(name, is_tensor, True)
