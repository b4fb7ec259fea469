"""Objects that place what they prepare: accelerate's `Accelerator`, Lightning's `Fabric`.

`model, loader = accelerator.prepare(model, loader)` moves the model to the accelerator's
device and makes the loader yield batches there, with no `.to(device)` written;
`fabric.setup(model)` and `fabric.setup_dataloaders(loader)` do the same. The device is the
one the object chose: a GPU where there is one, unless the code asks for the CPU
(`Accelerator(cpu=True)`, `Fabric(accelerator="cpu")`). Asked through a flag
(`Accelerator(cpu=args.cpu)`), it is a device on some runs only (`MAYBE_DEVICE`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Optional

from devlint.analysis.syntax import keyword_value, last_name, string_value
from devlint.analysis.values import UNKNOWN, Kind, Placement, Value, Where

ACCELERATORS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
FABRICS = frozenset(
    {
        "lightning.Fabric",
        "lightning.fabric.Fabric",
        "lightning.fabric.fabric.Fabric",
        "lightning_fabric.Fabric",
        "lightning_fabric.fabric.Fabric",
    }
)
PLACERS = ACCELERATORS | FABRICS
# Their names, for the text and syntax screens, which read no imports.
PLACER_CLASSES = ("Accelerator", "Fabric")

# The methods that prepare their arguments: each module goes to the device, each loader's
# batches follow it; the rest (optimizers, schedulers) are wrapped, not placed.
_PREPARING = frozenset({"prepare", "setup", "setup_module", "setup_dataloaders"})
_PREPARING_ONE = frozenset({"prepare_model", "prepare_data_loader"})
# Methods that return their tensor (or module) where it is: collectives, unwrapping.
_KEEPING = frozenset(
    {"gather", "gather_for_metrics", "reduce", "pad_across_processes", "all_gather"}
    | {"all_reduce", "broadcast", "unwrap_model"}
)
_CPU_ACCELERATOR_NAMES = frozenset({"cpu"})
_PLACING_KEYWORDS = frozenset({"device_placement", "move_to_device"})


def placer(call: ast.Call, qualified: str) -> Value:
    """The object `Accelerator(...)` or `Fabric(...)` makes: where it will place things."""
    if qualified in ACCELERATORS:
        asked = keyword_value(call, "cpu")
        placing = keyword_value(call, "device_placement")
        if _is_false(placing):
            return UNKNOWN  # it places nothing: the code moves what it wants itself
        return Value(Kind.PLACER, _placement(call, asked, on_cpu=_is_true(asked)))
    asked = keyword_value(call, "accelerator")
    name = string_value(asked) if asked is not None else None
    on_cpu = name is not None and name.lower() in _CPU_ACCELERATOR_NAMES
    return Value(Kind.PLACER, _placement(call, asked if name is None else None, on_cpu))


def places_off_the_cpu(call: ast.Call) -> bool:
    """Whether an `Accelerator(...)` or `Fabric(...)` may place what it prepares off the CPU:
    not asked for the CPU nor to place nothing."""
    kind = "accelerate.Accelerator" if last_name(call.func) == "Accelerator" else "lightning.Fabric"
    made = placer(call, kind)
    return made.kind is Kind.PLACER and made.where is not Where.CPU


def _placement(call: ast.Call, flag: Optional[ast.expr], on_cpu: bool) -> Placement:
    if on_cpu:
        return Placement(Where.CPU, evidence="prepared for the CPU", origin=call)
    if flag is not None and not isinstance(flag, ast.Constant):
        return Placement(Where.MAYBE_DEVICE, origin=call)
    return Placement(Where.DEVICE, origin=call)


def _is_false(node: Optional[ast.expr]) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _is_true(node: Optional[ast.expr]) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def placer_method(
    call: ast.Call, placer_value: Value, receiver: str, arguments: Sequence[Value]
) -> Optional[Value]:
    """What `receiver.method(...)` returns, for a placer ``receiver`` (`accelerator`); None
    for a method of no concern here."""
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if method in _KEEPING:
        return arguments[0] if arguments else UNKNOWN
    if method not in _PREPARING and method not in _PREPARING_ONE:
        return None
    for keyword in call.keywords:  # `prepare_model(model, device_placement=False)`
        if keyword.arg in _PLACING_KEYWORDS and _is_false(keyword.value):
            return UNKNOWN
    arguments = arguments[: len(call.args)]  # (options by keyword are not what it prepares)
    placement = placer_value.placement
    if placement.where is not Where.CPU:
        placement = Placement(
            placement.where,
            device=f"{receiver}.device",
            evidence=f"prepared by `{receiver}`",
            origin=call,
        )
    prepared = [_prepared(value, placement) for value in arguments]
    if method in _PREPARING_ONE or len(prepared) == 1:
        return prepared[0] if prepared else UNKNOWN
    return Value(Kind.SEQUENCE, elements=tuple(prepared))


def _prepared(value: Value, placement: Placement) -> Value:
    if value.kind is Kind.MODULE:
        return value.placed(placement)
    if value.kind is Kind.LOADER:
        return Value(Kind.LOADER, placement, item=Value(Kind.BATCH, placement))
    return UNKNOWN
