"""The abstract values of the device-flow analysis: what a name holds, and where it lives."""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Optional


class Where(enum.Enum):
    CPU = "cpu"
    DEVICE = "device"  # moved with .to(D)/.cuda(), or created with device=D
    INPUT = "input"  # inside forward(): wherever the module's inputs are
    # On a device on some paths, on the CPU on others (`if use_gpu: x = x.cuda()`): enough for
    # what needs host memory (`.numpy()`), never for a mismatch, which needs both sides known.
    MAYBE_DEVICE = "maybe device"
    UNKNOWN = "unknown"


class Kind(enum.Enum):
    TENSOR = "tensor"
    MODULE = "module"  # an nn.Module: its .to() works in place
    LOADER = "loader"  # iterating it yields batches (on the CPU, unless prepared: `placers`)
    PLACER = "placer"  # an `Accelerator` or a `Fabric`, placing what it prepares (`placers`)
    BATCH = "batch"  # a container of tensors (a DataLoader batch, a dict of moved tensors)
    DEVICE_OBJECT = "device object"  # a torch.device or device string
    SCALAR = "scalar"  # a Python number
    SEQUENCE = "sequence"  # a tuple or list, with its elements when known
    CALLABLE = "callable"  # a function or class defined in the file
    NOT_TENSOR = "not a tensor"  # what a failed type test proves, and nothing more
    NONE = "None"  # a parameter left at its default `None` by the call analysed (`device=None`)
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Placement:
    """Where a value lives, and the evidence for it (cited in messages with its line)."""

    where: Where
    device: str = ""  # how the device is written, for DEVICE
    evidence: str = ""  # "from the DataLoader", "moved to `device`"
    origin: Optional[ast.AST] = None  # the node (of CPython's tree) the evidence points at
    # For MAYBE_DEVICE: the flag whose truth moved it (`if self.gpu_mode: self.G.cuda()`), and
    # that truth (see `flags`).
    flag: str = ""
    moved_when: bool = True

    def same_place(self, other: Placement) -> bool:
        return self.where is other.where and self.device == other.device


UNKNOWN_PLACE = Placement(Where.UNKNOWN)


@dataclass(frozen=True)
class Value:
    kind: Kind
    placement: Placement = UNKNOWN_PLACE
    # A Python number or a 0-dim tensor: a CPU one mixes legally with tensors on any device.
    scalar: bool = False
    # For modules: activations, dropout and losses without weights hold no tensors.
    has_parameters: bool = True
    is_loss: bool = False
    scatters: bool = False  # DataParallel and DDP move their inputs themselves
    cpu_weight: Optional[Value] = None  # a loss built with weight= on the CPU
    cpu_targets: bool = False  # a loss whose targets may stay on the CPU (`nn.CTCLoss`)
    elements: tuple[Value, ...] = ()  # for sequences of known length
    item: Optional[Value] = None  # what iterating it yields, when known
    # What calling a module returned: a tensor for a layer, but a pipeline's images or a model's
    # output object may be numpy arrays or containers; only a tensor's own method proves it.
    module_output: bool = False
    # For modules: a torch layer whose forward returns one tensor (`nn.Linear`, `nn.Conv2d`;
    # not `nn.LSTM`'s tuple, not a container of other layers), so its output is no array.
    returns_tensor: bool = False
    empty: bool = False  # an empty list or tuple literal: it holds nothing yet
    # For modules of a class of this file: its name (what `model.init_hidden(n)` runs).
    class_name: str = ""
    # What a callable of unknown kind returned from two tensors on a device (a metric of an
    # output and a target): a tensor there, or a Python number. A tensor-only method proves a
    # tensor, and so does a loss taking it; until then it is no side of a mismatch.
    unproven: bool = False
    # A tensor made on the CPU on one of the paths that met here (`total = torch.zeros(1)` in
    # a logging branch, resetting a sum on the device): what a loop's next iteration reads
    # after that path, whatever the other paths hold (see `loops.later_iteration_value`).
    reset: Optional[Value] = None

    @property
    def where(self) -> Where:
        return self.placement.where

    def placed(self, placement: Placement) -> Value:
        return replace(self, placement=placement)

    def is_cpu_tensor(self) -> bool:
        """Definitely a non-scalar tensor on the CPU: it cannot mix with a tensor elsewhere."""
        return self.kind is Kind.TENSOR and self.where is Where.CPU and not self.scalar

    def is_on_device(self) -> bool:
        return self.where is Where.DEVICE and self.kind in (Kind.TENSOR, Kind.BATCH, Kind.UNKNOWN)


UNKNOWN = Value(Kind.UNKNOWN)
NOT_A_TENSOR = Value(Kind.NOT_TENSOR)
NONE = Value(Kind.NONE)
SCALAR = Value(Kind.SCALAR, scalar=True)


def input_item(container: Value) -> Optional[Value]:
    """An item of a module's input (`batch[0]`, `clean, lengths = batch`): a tensor where the
    input is, or a number. None for any other container."""
    if container.kind is Kind.UNKNOWN and container.where is Where.INPUT:
        return Value(Kind.UNKNOWN, container.placement, scalar=True)
    return None


def cpu_loader(evidence: str, origin: ast.AST) -> Value:
    """A data loader: iterating it yields batches on the CPU."""
    placement = Placement(Where.CPU, evidence=evidence, origin=origin)
    return Value(Kind.LOADER, placement, item=Value(Kind.BATCH, placement))


def join(first: Value, second: Value) -> Value:
    """The value after two paths meet: kept where both agree, unknown where they differ; a
    tensor made on the CPU on either path is remembered as its ``reset``."""
    if first is second:
        return first
    joined = _join(first, second)
    if joined.kind is not Kind.TENSOR:
        return joined  # (`UNKNOWN` stays the one unknown value the analysis tests for)
    reset = first.reset or second.reset or _cpu_path(first, second) or _cpu_path(second, first)
    return joined if joined.reset is reset else replace(joined, reset=reset)


def _cpu_path(made: Value, other: Value) -> Optional[Value]:
    """``made``, where a factory made it on the CPU and ``other`` is a tensor elsewhere."""
    if not _cpu_made(made):
        return None
    elsewhere = other.where in (Where.DEVICE, Where.INPUT, Where.MAYBE_DEVICE)
    return made if other.kind is Kind.TENSOR and elsewhere else None


def _join(first: Value, second: Value) -> Value:
    if first.kind is Kind.SEQUENCE and second.kind is Kind.SEQUENCE:
        return _join_sequences(first, second)
    kind = first.kind if first.kind is second.kind else Kind.UNKNOWN
    if not first.placement.same_place(second.placement):
        maybe = _maybe_on_device(first, second)
        if maybe is not None and first.kind is Kind.MODULE:
            # `if use_gpu: model.cuda()`: what it computes may be on a device
            both_return_tensors = first.returns_tensor and second.returns_tensor
            same_class = first.class_name if first.class_name == second.class_name else ""
            return Value(
                Kind.MODULE, maybe, returns_tensor=both_return_tensors, class_name=same_class
            )
        if maybe is not None:
            return Value(first.kind, maybe)
        return Value(kind, scalar=first.scalar and second.scalar)
    if (first.placement.flag, first.placement.moved_when) != (
        second.placement.flag,
        second.placement.moved_when,
    ):  # moved under two flags (or two truths of one): under neither
        first = first.placed(replace(first.placement, flag=""))
    if (
        kind is first.kind
        and first.scalar == second.scalar
        and first.cpu_weight == second.cpu_weight
        and first.unproven == second.unproven
    ):
        return first
    return Value(
        kind,
        first.placement,
        scalar=first.scalar and second.scalar,
        unproven=first.unproven or second.unproven,
        class_name=first.class_name if first.class_name == second.class_name else "",
    )


def _maybe_on_device(first: Value, second: Value) -> Optional[Placement]:
    """Two tensors (or two modules) meeting, one on a device (or maybe), the other on the CPU
    (or maybe): the device side's placement, as `MAYBE_DEVICE`."""
    if first.kind is not second.kind or first.kind not in (Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN):
        return None
    if first.kind is Kind.MODULE and not (first.has_parameters and second.has_parameters):
        return None
    if first.scalar or second.scalar:
        return None
    sides = {first.where, second.where}
    if Where.UNKNOWN in sides and sides & {Where.DEVICE, Where.MAYBE_DEVICE}:
        # `if cuda_device >= 0: self.model = self.model.cuda()`, the model a parameter: on a
        # device on that path, wherever it was on the other
        sides = sides - {Where.UNKNOWN} | {Where.CPU}
    elif first.kind is Kind.UNKNOWN:
        return None
    if not sides <= _MAYBE_SIDES or sides in ({Where.CPU}, {Where.DEVICE}):
        return None  # (two devices: still a device, but which one is unknown)
    if any(side.where is Where.CPU and _moved_back(side) for side in (first, second)):
        return None  # `if cuda: x = x.cpu()`, undoing an earlier `if cuda: x = x.cuda()`
    device_side = first if first.where in (Where.DEVICE, Where.MAYBE_DEVICE) else second
    # Moved under a flag on one path, and on the other not moved: still under that flag.
    flags = {
        (side.placement.flag, side.placement.moved_when)
        for side in (first, second)
        if side.where not in (Where.CPU, Where.UNKNOWN)
    }
    flag = device_side.placement.flag if len(flags) == 1 else ""
    return replace(device_side.placement, where=Where.MAYBE_DEVICE, flag=flag)


def _moved_back(value: Value) -> bool:
    return value.placement.evidence.startswith("moved to the CPU")


_MAYBE_SIDES = frozenset({Where.DEVICE, Where.CPU, Where.MAYBE_DEVICE})


def _join_sequences(first: Value, second: Value) -> Value:
    """Lists meeting: an empty one adds nothing; others keep what their elements agree on."""
    if first.empty:
        return second
    if second.empty:
        return first
    if first.elements and len(first.elements) == len(second.elements):
        return Value(Kind.SEQUENCE, elements=tuple(map(join, first.elements, second.elements)))
    first_items, second_items = sequence_items(first), sequence_items(second)
    if not first_items or not second_items:
        return Value(Kind.SEQUENCE)  # one side's contents are unknown
    return Value(Kind.SEQUENCE, item=join_all((*first_items, *second_items)))


def sequence_items(value: Value) -> tuple[Value, ...]:
    """What a sequence may hold: its elements, or its item (nothing where neither is known)."""
    if value.elements:
        return value.elements
    return (value.item,) if value.item is not None else ()


def appended(sequence: Value, element: Value) -> Value:
    """A list after `append(element)`: its items joined with the new one."""
    if sequence.empty:
        return Value(Kind.SEQUENCE, item=element)
    held = sequence_items(sequence)
    return Value(Kind.SEQUENCE, item=join_all((*held, element)) if held else None)


def join_all(values: Iterable[Value]) -> Value:
    result: Optional[Value] = None
    for value in values:
        result = value if result is None else join(result, value)
    return result if result is not None else UNKNOWN


def combine(operands: Iterable[Value], arithmetic: bool = False) -> Value:
    """The result of an elementwise operation: on the device of its non-scalar tensor operands.

    An operand of unknown placement makes the result unknown, precision first, except beside a
    tensor on a device: if the operation succeeds at all, its result is there (a CPU tensor
    with elements, a numpy array or a list beside it fails at this line; only a CPU scalar
    mixes, and it leaves the result on the device). So, too, for an ``arithmetic`` operator
    (`t * scale`) beside a tensor a factory made on the CPU with elements: whatever the unknown
    is (a number, an array, a CPU tensor), the result is on the CPU, and a tensor on a device
    (even a 0-dim one) fails at this line. Not for calls: `torch.index_put` and indexing take
    CPU indices for a tensor on a device.
    """
    operands = list(operands)
    if operands and all(operand.kind is Kind.SCALAR for operand in operands):
        return SCALAR  # `(1 - 9)`: arithmetic of numbers is a number
    placements: list[Placement] = []
    scalar = True
    module_output = unproven = False
    unknown = anchored = False
    cpu_scalar: Optional[Value] = None
    for operand in operands:
        if operand.kind is Kind.SCALAR:
            continue
        module_output = module_output or operand.module_output
        if operand.where is Where.UNKNOWN:
            unknown = True
            continue
        if operand.where is Where.CPU and operand.scalar:
            cpu_scalar = cpu_scalar or operand
            continue
        placements.append(operand.placement)
        unproven = unproven or operand.unproven
        scalar = scalar and operand.scalar
        anchored = anchored or _anchors(operand) or (arithmetic and _cpu_made(operand))
    if not placements and cpu_scalar is not None and cpu_scalar.kind is Kind.TENSOR and not unknown:
        return replace(cpu_scalar, module_output=module_output)  # 0-dim CPU tensors alone
    if not placements or (unknown and not anchored):
        return UNKNOWN
    first = placements[0]
    if any(not first.same_place(other) for other in placements[1:]):
        return UNKNOWN  # a device mismatch: reported where it happens, not downstream
    return Value(Kind.TENSOR, first, scalar=scalar, module_output=module_output, unproven=unproven)


def _anchors(operand: Value) -> bool:
    """An operand whose place an operation's result takes, whatever its unknown operands are:
    a tensor on a device or on the inputs' device, or what `.to(device)` returned (arithmetic
    fails on a module or a batch, and a module compared, to a bool, is no mask that anything
    uses)."""
    if operand.kind is Kind.TENSOR and operand.where in (Where.DEVICE, Where.INPUT):
        return True
    return operand.kind is Kind.UNKNOWN and operand.where is Where.DEVICE


def _cpu_made(operand: Value) -> bool:
    return operand.is_cpu_tensor() and made_by_factory(operand)


def mismatch(operands: Iterable[Value], proven: bool = False) -> Optional[tuple[Value, Value]]:
    """A tensor on a device and a non-scalar tensor on the CPU among the operands, if any;
    ``proven``: the operation itself proves its operands tensors (a loss)."""
    on_device: Optional[Value] = None
    on_cpu: Optional[Value] = None
    for operand in operands:
        if operand.unproven and not proven:
            continue
        if operand.is_on_device() and on_device is None:
            on_device = operand
        elif operand.is_cpu_tensor() and on_cpu is None:
            on_cpu = operand
    if on_device is not None and on_cpu is not None:
        return on_device, on_cpu
    return None


def made_by_factory(value: Value) -> bool:
    """A tensor created by a torch factory, not converted from numpy or moved with `.cpu()`:
    code that converts or moves to the CPU on purpose is CPU code by design."""
    evidence = value.placement.evidence
    return evidence.startswith("created on the CPU by") and "from_numpy" not in evidence


def as_compared_by_device(value: Value) -> Value:
    """A tensor as an assertion that checks devices sees it: a 0-dim one is no scalar there."""
    return replace(value, scalar=False) if value.kind is Kind.TENSOR else value


def cannot_meet(cpu_tensor: Value, partner: Value) -> bool:
    """Whether a CPU tensor cannot meet ``partner`` in one operation: a tensor on a device, or
    on the device a module's or a function's inputs are on. A tensor parameter's device is the
    caller's: only a factory's tensor is evidence against it (as in a helper's own code)."""
    if partner.unproven:
        return False
    if partner.is_on_device():
        return True
    return follows_input(partner) and (partner.kind is Kind.UNKNOWN or made_by_factory(cpu_tensor))


def follows_input(value: Value) -> bool:
    """A tensor where a module's or a function's inputs are. A 0-dim one counts: only a CPU
    scalar mixes with other devices. An item of an input that may be a number does not."""
    if value.where is not Where.INPUT:
        return False
    return value.kind is Kind.TENSOR or (value.kind is Kind.UNKNOWN and not value.scalar)
