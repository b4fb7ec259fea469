"""Parameters a function's docstring documents as tensors.

A documented type is the author's word, as an annotation is: `x : torch.Tensor` under a NumPy
or SpeechBrain "Parameters"/"Arguments" section, `x (Tensor): ...` under Google's "Args:",
or Sphinx's `:type x: torch.Tensor` and `:param torch.Tensor x:`. Only a type that is a tensor
and nothing else counts (`torch.Tensor`, `Tensor`, `torch.LongTensor`, followed at most by a
shape in parentheses or ", optional"): `Tensor or ndarray` and `list of Tensor` do not.
"""

from __future__ import annotations

import ast
import re

from devlint.analysis.units import FunctionNode

_TENSOR_TYPE = re.compile(
    r"(?:torch\.)?(?:Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)?Tensor"
    r"\s*(?:\([^()]*\))?\s*(?:,\s*optional)?\s*$"
)
# `x : torch.Tensor`, `x: Tensor (batch, time)`: a NumPy-style entry.
_NUMPY_ENTRY = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*$")
# `x (torch.Tensor): the input`, `x (Tensor, optional): ...`: a Google-style entry.
_GOOGLE_ENTRY = re.compile(r"^\s*(\w+)\s*\(([^()]*(?:\([^()]*\))?[^()]*)\)\s*:")
# `:type x: torch.Tensor` and `:param torch.Tensor x: ...`.
_SPHINX_TYPE = re.compile(r"^\s*:type\s+(\w+)\s*:\s*(.+?)\s*$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(.+?)\s+(\w+)\s*:")
_PARAMETER_HEADINGS = frozenset({"parameters", "arguments", "args", "params", "inputs"})
_OTHER_HEADINGS = frozenset(
    {
        "returns",
        "return",
        "yields",
        "raises",
        "example",
        "examples",
        "note",
        "notes",
        "outputs",
        "attributes",
        "see also",
        "references",
        "warning",
        "warnings",
    }
)


def documented_tensors(function: FunctionNode) -> set[str]:
    """The names the docstring of ``function`` documents as tensors (parameters or not: the
    caller keeps the parameters)."""
    docstring = ast.get_docstring(function, clean=True)
    if not docstring or "Tensor" not in docstring:
        return set()
    found: set[str] = set()
    in_parameters = False
    for line in docstring.splitlines():
        heading = line.strip().rstrip(":").lower()
        if heading in _PARAMETER_HEADINGS:
            in_parameters = True
            continue
        if heading in _OTHER_HEADINGS:
            in_parameters = False
            continue
        for pattern in (_SPHINX_TYPE, _SPHINX_PARAM):
            match = pattern.match(line)
            if match is not None:
                name, written = (
                    match.groups() if pattern is _SPHINX_TYPE else reversed(match.groups())
                )
                if _TENSOR_TYPE.match(written):
                    found.add(name)
        if in_parameters:
            match = _GOOGLE_ENTRY.match(line) or _NUMPY_ENTRY.match(line)
            if match is not None and _TENSOR_TYPE.match(match.group(2)):
                found.add(match.group(1))
    return found
