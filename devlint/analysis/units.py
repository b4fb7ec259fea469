"""The units the device flow interprets: a function (or the module script) and the facts of a
class, shared by the interpreter (`flow`), its expressions (`calls`) and its call contexts."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional, Union

from devlint.analysis.values import Value

Env = dict[str, Value]
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass(frozen=True)
class ModuleMembers:
    """The attributes a module's `__init__` sets, that no other method sets again."""

    # Torch layers that hold parameters, which run on the module's device (`self.embedding(
    # positions)` in `forward`).
    submodules: frozenset[str] = frozenset()
    # Plain numbers (`self.eps`), and lists or tuples (`self.freqs = [0.5, 1.0]`).
    numbers: frozenset[str] = frozenset()
    lists: frozenset[str] = frozenset()
    # Its buffers and parameters (`self.register_buffer("name", ...)`, `self.name =
    # nn.Parameter(...)`), by name, with which of the two each is.
    tensors: Mapping[str, str] = field(default_factory=dict)
    # Modules of classes of this file, by attribute: their `forward` runs where the module is
    # (`self.pos = PositionalEncoding(d)`, then `self.pos(steps)`).
    modules: Mapping[str, str] = field(default_factory=dict)
    # The parameters and buffers (by name, with which of the two) of each module `__init__`
    # sets, this file's or an imported project file's (`self.crf = CRF(...)`, then
    # `self.crf.transitions` on the module's device).
    member_tensors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


NO_MEMBERS = ModuleMembers()


@dataclass
class Unit:
    """One function (or the module script) being interpreted."""

    function: Optional[FunctionNode]
    module_class: bool = False  # a method of an nn.Module subclass
    forward: bool = False
    # A method of an nn.Module subclass that runs where the module is (not one `__init__`
    # runs, while the module is still on the CPU): its layers are on the module's device.
    on_module_device: bool = False
    # Parameters that are tensors on the caller's device (see `parameters`).
    tensor_parameters: frozenset[str] = frozenset()
    # Parameters the function unpacks into tensors of the caller's device, with which items
    # are (see `parameters.unpacked_tensor_items`).
    tensor_items: Mapping[str, tuple[bool, ...]] = field(default_factory=dict)
    # A parameter that a framework moved to the module's device before the call: the batch of
    # a LightningModule's `training_step`.
    moved_batch: str = ""
    # In a module's methods: what `__init__` made of its attributes (see `ModuleMembers`).
    members: ModuleMembers = field(default_factory=lambda: NO_MEMBERS)
    returns: list[Value] = field(default_factory=list)
    default_device_changed: int = 0  # inside `with torch.device(...)`


@dataclass(frozen=True)
class ClassFacts:
    node: ast.ClassDef
    bases: tuple[str, ...]
    methods: dict[str, FunctionNode]
