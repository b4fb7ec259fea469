"""Device values written in the code: ``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"``."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

CUDA_STRING = re.compile(r"cuda(:\d+)?\Z")  # "cuda", "cuda:0": a CUDA device, written out
ORDINAL_STRING = re.compile(r"cuda:(\d+)\Z")  # "cuda:1": the GPU index, as a group


def string_value(node: cst.BaseExpression) -> Optional[str]:
    """The value of a plain string literal (no f-string, no bytes), else None."""
    if isinstance(node, cst.SimpleString) and "b" not in node.prefix.lower():
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def cuda_literal(node: cst.BaseExpression) -> Optional[str]:
    """``"cuda"``, ``"cuda:0"``, or the ``cuda:`` prefix of an f-string, as written; else None."""
    value = string_value(node)
    if value is not None:
        return value if CUDA_STRING.match(value) else None
    if isinstance(node, cst.FormattedString) and node.parts:
        first = node.parts[0]
        if isinstance(first, cst.FormattedStringText) and first.value == "cuda:":
            return "cuda:{...}"
    return None


def argument(call: cst.Call, position: int, keyword: str) -> Optional[cst.Arg]:
    """The argument passed at ``position`` or as ``keyword=``, if any."""
    positional = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg
        elif arg.star:
            return None
        elif positional == position:
            return arg
        else:
            positional += 1
    return None


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)
