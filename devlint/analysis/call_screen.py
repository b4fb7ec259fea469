"""Structural facts, read off CPython's syntax tree, that prove a LibCST rule cannot fire.

The text tests of `prefilter` pass a third of PyTorch's own source for DEV001 alone: "cuda"
is written all over code that only asks whether CUDA is there (`torch.cuda.is_available()`,
`device.type == "cuda"`). What the LibCST rules report is narrower: a call that puts
something on CUDA, passes a device ordinal, names a deprecated API, and so on. CPython parses
a file several times faster than LibCST, so one walk of its tree, read against each rule's
necessary condition (`Rule.may_fire_in_tree`), spares LibCST the files no rule can report on.

The facts are deliberately loose: a literal counts wherever a call passes it, whatever the
call is, and a name counts whatever it is bound to. They must never reject a file a rule
would report on; each rule's examples are checked against its test (tests/test_call_screen).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Union, cast

from devlint.analysis.devices import ORDINAL_STRING
from devlint.analysis.syntax import (
    cuda_literal,
    dotted_name,
    keyword_value,
    last_name,
    nodes_below,
)
from devlint.analysis.torch_api import DEVICE_MOVES

# Where a call may take a device: its first two arguments and these keywords.
_DEVICE_KEYWORDS = frozenset({"device", "type", "index"})
# Calls whose first arguments name a device: moves, `torch.device`, `torch.cuda.set_device`.
_DEVICE_CALLS = frozenset({"to", "cuda", "device", "set_device"})


@dataclass(frozen=True)
class CallFacts:
    """What a file's calls, literals and imports hold. A function imported under another name
    (`from torch.cuda import synchronize as sync`) counts under its own name too, among the
    functions called, the callees of literals and ordinals, and the calls through `cuda`."""

    # The methods it calls (`x.cuda()`: "cuda") and the functions (`f()`: "f").
    called_methods: frozenset[str]
    called_functions: frozenset[str]
    # Attribute names and the names imports bind or come from (`torch.cuda.amp`: "cuda",
    # "amp"); bare names (`x`) are left out: a bare name stands for a qualified one
    # only through an import, which the file names here.
    attribute_names: frozenset[str]
    # The last names of the calls that reach through a `cuda` module (`torch.cuda.synchronize()`,
    # `tc.synchronize()` after `import torch.cuda as tc`, `sync()` after `from torch.cuda import
    # synchronize as sync`: "synchronize"): what may resolve to `torch.cuda.<name>`.
    cuda_calls: frozenset[str]
    # The last name of each receiver of `.to()`, `.cuda()` or `.cpu()` written as a dotted
    # name (`self.optimizer.to(d)`: "optimizer").
    moved_receivers: frozenset[str]
    # The last names of the calls passing "cuda", "cuda:N" or an f-string led by "cuda:" first,
    # or as `type=` or `default=` (`torch.device("cuda")`: "device").
    cuda_literal_callees: frozenset[str]
    cuda_device_keyword: bool  # `device="cuda"` passed to any call
    # An integer of 1 or more, or "cuda:N" with N of 1 or more, passed where a device goes (in
    # those places of a move, `torch.device`, `set_device`, or a call taking `device=`), or
    # inside a call passed there (`.to(torch.device("cuda", 1))`); or "cuda:N" with N of 1 or
    # more assigned to a name (`device = "cuda:1"`).
    ordinal_argument: bool
    # "mps" or "mps:N" (alone, in a conditional expression, or in a call such as
    # `torch.device("mps")`) assigned to a name or passed where a device goes.
    mps_device: bool


def call_facts(tree: ast.Module) -> CallFacts:
    facts = _Reading()
    for node in nodes_below(tree):
        kind = type(node)
        if kind is ast.Call:
            facts.read_call(cast(ast.Call, node))
        elif kind is ast.Attribute:
            facts.attributes.add(cast(ast.Attribute, node).attr)
        elif kind is ast.Assign:
            value = cast(ast.Assign, node).value
            facts.mps = facts.mps or _holds_mps(value)
            if isinstance(value, ast.Constant) and type(value.value) is str:
                facts.ordinal_assigned = facts.ordinal_assigned or _names_ordinal(value)
        elif kind is ast.ImportFrom or kind is ast.Import:
            facts.read_import(cast(Union[ast.ImportFrom, ast.Import], node))
    return facts.finish()


@dataclass
class _Reading:
    """The facts as the walk gathers them; names are resolved through aliases at the end."""

    methods: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)
    receivers: set[str] = field(default_factory=set)
    # `as` name -> every name imported under it (imports in functions and branches differ)
    aliases: dict[str, set[str]] = field(default_factory=dict)
    cuda_calls: set[str] = field(default_factory=set)
    # The last names of the calls headed by each name (`a.b.f()`: "a" -> "f"), and the names
    # imports bind to something under a `cuda` module.
    calls_by_head: dict[str, set[str]] = field(default_factory=dict)
    cuda_heads: set[str] = field(default_factory=set)
    cuda_callees: set[str] = field(default_factory=set)
    ordinal_callees: set[str] = field(default_factory=set)  # "device" for `device=`
    cuda_keyword: bool = False
    ordinal_assigned: bool = False  # `device = "cuda:1"`
    mps: bool = False

    def read_call(self, call: ast.Call) -> None:
        func = call.func
        last = last_name(func)
        if type(func) is ast.Attribute:
            self.methods.add(last)
            if last in DEVICE_MOVES:
                receiver = dotted_name(func.value)
                if receiver is not None:
                    self.receivers.add(receiver.rpartition(".")[2])
        elif type(func) is ast.Name:
            self.functions.add(last)
        self._read_callee(func, last)
        if call.args and cuda_literal(call.args[0]) is not None:
            self.cuda_callees.add(last)
        for keyword in call.keywords:
            if keyword.arg in ("type", "default", "device") and cuda_literal(keyword.value):
                if keyword.arg == "device":
                    self.cuda_keyword = True
                else:
                    self.cuda_callees.add(last)
        placed = _device_arguments(call)
        if any(_names_ordinal(value) for value in placed):
            takes_device = keyword_value(call, "device") is not None
            self.ordinal_callees.add("device" if takes_device else last)
        self.mps = self.mps or any(_holds_mps(value) for value in placed)

    def _read_callee(self, func: ast.expr, last: str) -> None:
        """File a call of a dotted name under its head, or as reaching through `cuda`."""
        through_cuda = False
        while isinstance(func, ast.Attribute):
            func = func.value
            through_cuda = through_cuda or (isinstance(func, ast.Attribute) and func.attr == "cuda")
        if not isinstance(func, ast.Name):
            return
        if through_cuda or (func.id == "cuda" and last != "cuda"):
            self.cuda_calls.add(last)
        else:
            self.calls_by_head.setdefault(func.id, set()).add(last)

    def read_import(self, node: Union[ast.ImportFrom, ast.Import]) -> None:
        module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
        from_cuda = "cuda" in module.split(".")
        self.attributes.update(module.split("."))
        for alias in node.names:
            path = alias.name.split(".")
            self.attributes.update(path)
            bound = alias.asname or path[0]
            if alias.asname is not None:
                self.attributes.add(alias.asname)
                self.aliases.setdefault(alias.asname, set()).add(path[-1])
            if from_cuda or (alias.asname is not None and "cuda" in path) or bound == "cuda":
                self.cuda_heads.add(bound)

    def finish(self) -> CallFacts:
        def resolved(names: set[str]) -> frozenset[str]:
            return frozenset(names).union(*(self.aliases.get(name, ()) for name in names))

        for head in self.cuda_heads.intersection(self.calls_by_head):
            called = self.calls_by_head[head]
            self.cuda_calls.update(called)
            self.cuda_calls.update(*(self.aliases.get(last, ()) for last in called))
        return CallFacts(
            called_methods=frozenset(self.methods),
            called_functions=resolved(self.functions),
            attribute_names=frozenset(self.attributes),
            cuda_calls=frozenset(self.cuda_calls),
            moved_receivers=frozenset(self.receivers),
            cuda_literal_callees=resolved(self.cuda_callees),
            cuda_device_keyword=self.cuda_keyword,
            ordinal_argument=self.ordinal_assigned
            or not resolved(self.ordinal_callees).isdisjoint(_DEVICE_CALLS),
            mps_device=self.mps,
        )


def _device_arguments(call: ast.Call) -> list[ast.expr]:
    placed = list(call.args[:2])
    placed += [k.value for k in call.keywords if k.arg in _DEVICE_KEYWORDS]
    return placed


def _names_ordinal(node: ast.expr, inside: bool = False) -> bool:
    """An integer of 1 or more, "cuda:N" with N of 1 or more, or a call passing one (one level
    in: `torch.device("cuda", 1)` passed to a move)."""
    if isinstance(node, ast.Call):
        return not inside and any(_names_ordinal(v, True) for v in _device_arguments(node))
    if not isinstance(node, ast.Constant):
        return False
    value = node.value
    if type(value) is int:
        return value >= 1
    match = ORDINAL_STRING.match(value) if type(value) is str else None
    return match is not None and int(match.group(1)) >= 1


def _holds_mps(node: ast.expr, depth: int = 0) -> bool:
    """ "mps" or "mps:N", alone, as a branch of a conditional expression, or first in a call."""
    if isinstance(node, ast.Constant):
        value = node.value
        return type(value) is str and (value == "mps" or value.startswith("mps:"))
    if depth > 8:
        return True  # nested past reading: say it may
    if isinstance(node, ast.IfExp):
        return _holds_mps(node.body, depth + 1) or _holds_mps(node.orelse, depth + 1)
    if isinstance(node, ast.Call):
        first = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "type")]
        return any(_holds_mps(value, depth + 1) for value in first)
    return False
