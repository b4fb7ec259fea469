"""How a message advises a move: code that names only what exists where the finding is.

A placement remembers its device as written: a variable (`device`, `args.device`),
or a literal (`cuda`, from `.cuda()` or `"cuda:0"`). Advice quotes `.to(device)`
only for a variable in scope at the finding (used in the same function, or at
module level, or an attribute of `self` inside a method); otherwise it names the
device of the value already there (`.to(out.device)`), or says it in words.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from devlint.analysis.devices import CUDA_STRING
from devlint.analysis.values import Placement

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def enclosing_function(tree: ast.AST, node: ast.AST) -> Optional[ast.AST]:
    """The innermost function whose lines hold ``node``; None at module level."""
    line = getattr(node, "lineno", None)
    if line is None:
        return None
    found: Optional[ast.AST] = None
    for candidate in ast.walk(tree):
        if isinstance(candidate, _FUNCTIONS):
            end = getattr(candidate, "end_lineno", None) or candidate.lineno
            if candidate.lineno <= line <= end and (
                found is None or candidate.lineno >= getattr(found, "lineno", 0)
            ):
                found = candidate
    return found


def device_in_scope(tree: ast.AST, placement: Placement, at: ast.AST) -> Optional[str]:
    """The placement's device as code to paste at ``at``, where it is a variable in scope."""
    device = placement.device
    if not _DOTTED.match(device) or CUDA_STRING.match(device) or placement.origin is None:
        return None
    here = enclosing_function(tree, at)
    if device.startswith("self."):
        arguments = getattr(here, "args", None)
        first = arguments.args[0].arg if arguments is not None and arguments.args else None
        return device if first == "self" else None
    there = enclosing_function(tree, placement.origin)
    return device if there is None or there is here else None


def move_advice(tree: ast.AST, placement: Placement, at: ast.AST, holder: Optional[str]) -> str:
    """The advice: with `.to(<device>)` for a device variable in scope; else with
    `.to(<holder>.device)`
    where the value already on the device is a name; else in words."""
    device = device_in_scope(tree, placement, at)
    if device is not None:
        return f"with `.to({device})`"
    if holder is not None and _DOTTED.match(holder):
        return f"with `.to({holder}.device)`"
    return f"to the device of `{holder}`" if holder else "to the same device"
