"""Text tests that prove a rule cannot fire, so a file need not be parsed for it.

Each test is a necessary condition read off the analysis: a flow rule reports
a tensor on a device, and the device-flow interpreter puts a value on a device
only at `.cuda(...)`, `.to(...)`, a `device=` argument, `torch.device(...)` or
a `"cuda"` string, so a file with none of those words cannot produce such a
finding. The tests are deliberately loose (a word in a comment passes): they
must never reject a file a rule would report on, and they must cost far less
than a parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from devlint.analysis.parameters import TENSOR_ONLY_ATTRIBUTES
from devlint.analysis.placers import PLACER_CLASSES
from devlint.analysis.torch_api import FACTORY_NAMES


class TextTest(Protocol):
    """What a rule's ``required_patterns`` hold: a compiled regex, or anything with ``search``."""

    def search(self, text: str) -> object: ...


@dataclass(frozen=True)
class AnyOf:
    """Passes where any needle occurs or any pattern matches (substring tests are the cheapest)."""

    needles: tuple[str, ...]
    patterns: tuple[TextTest, ...] = ()

    def search(self, text: str) -> bool:
        return any(needle in text for needle in self.needles) or any(
            pattern.search(text) for pattern in self.patterns
        )


@dataclass(frozen=True)
class Confirmed:
    """Passes where a loose test passes and then the exact one. A regex whose branches cannot
    start with a literal (`\\bdevice|\\.to`) is tried at every character of a file; regexes led
    by a literal are searched for quickly, and leave the exact test to the few files they pass."""

    loose: TextTest
    exact: TextTest

    def search(self, text: str) -> bool:
        return bool(self.loose.search(text)) and bool(self.exact.search(text))


def literal_led(*patterns: str) -> AnyOf:
    """A test passing where any of ``patterns`` (each beginning with a literal) matches."""
    return AnyOf((), tuple(re.compile(pattern) for pattern in patterns))


def _shortest(words: frozenset[str]) -> tuple[str, ...]:
    """The words no other word is part of: `rand` stands for `randn` too."""
    return tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))


_FACTORY_ALTERNATIVES = "|".join(sorted(FACTORY_NAMES))
# `.to(` with any spacing: the move whose target the analysis reads as a device.
_MOVE_TO = re.compile(r"\.\s*to\s*\(")


class _LoaderName:
    """A loader name as `looks_like_loader` matches it: `*loader`, `dl`, `*_dl`, in any case.
    (A case-insensitive regex has no literal to search for, and is slow on large files.)"""

    _dl = re.compile(r"(?<![a-z0-9])dl\b")

    def search(self, text: str) -> bool:
        lower = text.lower()
        return "loader" in lower or ("dl" in lower and bool(self._dl.search(lower)))


LOADER_NAME = _LoaderName()
# `torch.range` is a factory, but a bare `range` is not one unless imported from torch.
TORCH_RANGE = re.compile(
    r"\.\s*range\b"  # torch.range, th.range
    r"|\bimport\b[^\n]*(?:\\\n[^\n]*)*\brange\b"  # from torch import range (continued lines)
    r"|\bimport\s*\([^)]*\brange\b"  # from torch import (..., range)
)

# Where a value can land on a device: `.cuda(`, `.to(`, `device=`, `torch.device(`, "cuda:0",
# an `Accelerator` or `Fabric`.
DEVICE_SOURCE = AnyOf(("cuda", "device", *PLACER_CLASSES), (_MOVE_TO,))
# `forward`, or a LightningModule's step, whose batch the Trainer moved to the module's device.
FORWARD_METHOD = re.compile(
    r"def\s+(?:forward|training_step|validation_step|test_step|predict_step)\b"
)
# The same, a `Tensor` annotation (a typed parameter, on its caller's device), or a `forward`
# (what its layers compute is where the module is).
DEVICE_SOURCE_OR_TENSOR_TYPE = AnyOf(
    ("cuda", "device", "Tensor", *PLACER_CLASSES), (_MOVE_TO, FORWARD_METHOD)
)
# A parameter that is a tensor, and so lives on the caller's device (see `parameters`).
TENSOR_PARAMETER = re.compile(
    r"\.\s*(?:" + "|".join(sorted(TENSOR_ONLY_ATTRIBUTES, key=len, reverse=True)) + r")\b"
)
# Where a value can be on a device, on the device of `forward`'s inputs or on the caller's.
# (`.parameters()`: a module's parameters, on its device)
DEVICE_OR_INPUT_SOURCE = AnyOf(
    ("cuda", "device", "Tensor", "parameters(", "buffers(", *PLACER_CLASSES),
    (_MOVE_TO, FORWARD_METHOD, TENSOR_PARAMETER),
)
# Where a tensor can be on the CPU: a factory, `.cpu()`, "cpu", a data loader's batch.
CPU_TENSOR_SOURCE = AnyOf(
    ("cpu", *_shortest(FACTORY_NAMES - {"range"})), (LOADER_NAME, TORCH_RANGE)
)
# A call of `.to`, `.cuda` or `.cpu`.
MOVE_CALL = re.compile(r"\.\s*(?:to|cuda|cpu)\s*\(")


_FACTORY_ALIAS = re.compile(rf"\b(?:{_FACTORY_ALTERNATIVES})\s+as\s")


def imports_factory_alias(text: str) -> bool:
    """`from torch import zeros as z`: a factory under another name."""
    # A regex without a literal start is slow; look for aliases only around each " as ".
    start = text.find(" as ")
    while start >= 0:
        if _FACTORY_ALIAS.search(text, max(0, start - 40), start + 4):
            return True
        start = text.find(" as ", start + 4)
    return False


@dataclass(frozen=True)
class _SelfFactoryAssignment:
    """`self.x = torch.zeros(...)` (or a factory anywhere in the assigned value, as in
    `self.mask = torch.tril(torch.ones(n, n))`), or a factory imported under another name."""

    assignment: re.Pattern[str] = re.compile(
        rf"self\s*\.\s*\w+\s*=(?!=)[^;]{{0,200}}?\b(?:{_FACTORY_ALTERNATIVES})\s*\("
    )

    def search(self, text: str) -> bool:
        return bool(self.assignment.search(text)) or imports_factory_alias(text)


SELF_FACTORY_ASSIGNMENT = _SelfFactoryAssignment()
# A value coerced into a tensor where it is none (see `coercion`).
TENSOR_COERCION = AnyOf(("is_tensor(",), (re.compile(r"isinstance\(\s*\w+\s*,[^()]*Tensor\b"),))


class _TorchLoad:
    """Where `torch.load` can be called: written out (`torch.load(`, spaced or continued over
    lines), through an alias of torch (`import torch as th`, then `th.load(`), or imported from
    torch by name (`from torch import load`). Not `json.load(` or `pickle.load(` alone: most
    files with a `load(` never call torch's. (Every regex here starts with a literal.)"""

    _written = re.compile(r"torch[\s\\]*\.[\s\\]*load\b")
    _alias = re.compile(r"torch\s+as\s+(\w+)")
    _from_torch = re.compile(r"from\s+torch\s+import\b")
    _load = re.compile(r"\bload\b")

    def search(self, text: str) -> bool:
        if "torch" not in text:
            return False
        if self._written.search(text):
            return True
        for alias in self._alias.findall(text):
            if re.search(rf"\b{alias}[\s\\]*\.[\s\\]*load\b", text):
                return True
        return any(
            self._load.search(_statement_from(text, found.end()))
            for found in self._from_torch.finditer(text)
        )


def _statement_from(text: str, start: int) -> str:
    """The rest of the statement from ``start``: to its closing parenthesis, or to the end of
    its line and of the lines a backslash continues it over."""
    rest = text[start:].lstrip(" \t")
    if rest.startswith("("):
        close = rest.find(")")
        return rest if close < 0 else rest[:close]
    end = 0
    while True:
        newline = rest.find("\n", end)
        if newline < 0:
            return rest
        if not rest[:newline].rstrip(" \t").endswith("\\"):
            return rest[:newline]
        end = newline + 1


TORCH_LOAD = _TorchLoad()
