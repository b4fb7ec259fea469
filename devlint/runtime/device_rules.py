"""Which device rule PyTorch applies to each operator on a CUDA device.

The rules come from the ``native_functions.yaml`` that torch ships inside ``torchgen``, the same
file PyTorch's code generator reads to write the CUDA kernels' wrappers:

- an operator with a CUDA kernel and the default ``device_check: ExactSame`` gets a generated
  check that every tensor argument (outputs first, then the positional ones) is on one device,
  which fails with "Expected all tensors to be on the same device, but got mat1 is on cpu,
  different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)";
- an operator marked ``device_check: NoCheck`` checks devices itself: most are TensorIterator
  kernels, where a 0-dim CPU tensor may mix with CUDA tensors and anything else fails with "...
  but found at least two devices, cuda:0 and cpu!"; a few (copies, indexing) move or index across
  devices on purpose and are listed in ``MIXING_ALLOWED``;
- an operator with no CUDA kernel of its own (``CompositeExplicitAutograd``) checks nothing
  itself: the operators it calls do, so the virtual GPU runs its composite kernel to reach them;
- an operator with no dispatch entry at all is ``CompositeImplicitAutograd``: the dispatcher
  usually decomposes it before a tensor subclass sees it, and where it does not (``isclose``),
  the virtual GPU decomposes it, so that the operators it calls check their devices.

Parsing is line-based (the file's layout is regular and generated), so this module needs neither
PyYAML nor torch. When the file is missing, ``fallback_rules`` gives a small explicit table and
every other operator is treated as ``exact``, the common case.
"""

from __future__ import annotations

import enum
import functools
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

YAML_PARTS = ("packaged", "ATen", "native", "native_functions.yaml")


class Check(str, enum.Enum):
    EXACT = "exact"  # generated check_and_update_common_device on every tensor argument
    ITERATOR = "iterator"  # TensorIterator: 0-dim CPU tensors may mix, nothing else
    COMPOSITE = "composite"  # no CUDA kernel: the operators it calls check
    DECOMPOSE = "decompose"  # CompositeImplicitAutograd: what it calls checks
    NONE = "none"  # devices may differ on purpose (copies, indexing)


# NoCheck operators that take tensors on different devices by design: copies between devices,
# and indexing, whose index tensors may stay on the CPU (the virtual GPU's `operator_checks`
# hold what indexing does refuse). The CTC loss reads its lengths on the host and moves its
# targets to the log-probabilities' device (checked on an H200, torch 2.11); its composite
# kernel takes another path for tensor subclasses, so it is not decomposed either.
MIXING_ALLOWED = frozenset(
    """copy_ _copy_from _copy_from_and_resize _to_copy to index index_put index_put_
    _index_put_impl_ _unsafe_index _unsafe_index_put set_ lift_fresh lift_fresh_copy
    _local_scalar_dense is_same_size _has_compatible_shallow_copy_type _pin_memory is_pinned
    ctc_loss _ctc_loss _ctc_loss_backward""".split()
)


@dataclass(frozen=True)
class OpRule:
    check: Check
    method: str = ""  # the generated wrapper's name, quoted in the exact check's message


@dataclass
class _Entry:
    schema: str
    fields: dict[str, str] = field(default_factory=dict)
    dispatch_keys: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.schema.split("(", 1)[0]


def yaml_path() -> Optional[Path]:
    """The native_functions.yaml of the installed torch, found without importing torch."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*YAML_PARTS)
    return path if path.is_file() else None


def _entries(lines: Iterator[str]) -> Iterator[_Entry]:
    entry: Optional[_Entry] = None
    in_dispatch = False
    for line in lines:
        if line.startswith("- func:"):
            if entry is not None:
                yield entry
            entry = _Entry(line[len("- func:") :].strip())
            in_dispatch = False
        elif entry is None or not line.strip() or line.lstrip().startswith("#"):
            continue
        elif line.startswith("    ") and in_dispatch:
            keys = line.split(":", 1)[0]
            entry.dispatch_keys.update(key.strip() for key in keys.split(","))
        elif line.startswith("  ") and not line.startswith("   "):
            key, _, value = line.strip().partition(":")
            value = value.split("#", 1)[0].strip()
            entry.fields[key] = value
            in_dispatch = key == "dispatch" and not value
            if key == "dispatch" and value:  # `dispatch: {CPU: k}` on one line, rarely
                entry.dispatch_keys.update(k.strip(" {") for k in value.split(",") if ":" in k)
    if entry is not None:
        yield entry


def _split_arguments(schema: str) -> tuple[list[str], list[str]]:
    """Positional and keyword-only argument texts of a schema, split at the top-level commas."""
    inner = schema[schema.index("(") + 1 : schema.rindex(") ->")]
    parts, depth, current = [], 0, ""
    for char in inner:
        depth += char in "(["
        depth -= char in ")]"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    if "*" in parts:
        star = parts.index("*")
        return parts[:star], parts[star + 1 :]
    return parts, []


def _is_out_fn(schema: str) -> bool:
    _, keyword_only = _split_arguments(schema)
    return any("!" in argument.split(" ", 1)[0] for argument in keyword_only)


def wrapper_name(schema: str, structured: bool) -> str:
    """The name torchgen gives the CUDA wrapper (``register_dispatch_key.py``)."""
    full = schema.split("(", 1)[0]
    name, _, overload = full.partition(".")
    out = "_out" if _is_out_fn(schema) else ""
    if structured:  # NativeSignature: native.name(func)
        return f"wrapper_CUDA_{name}{out}" + (f"_{overload}" if overload else "")
    return f"wrapper_CUDA_{overload}_{name}{out}"  # DispatcherSignature: cpp.name(func)


def _own_cuda(entry: _Entry) -> bool:
    # ufunc operators (add, mul, ...) get their CUDA kernel generated from `ufunc_inner_loop`.
    return "CUDA" in entry.dispatch_keys or "ufunc_inner_loop" in entry.fields


def _has_cuda(entry: _Entry, by_name: dict[str, _Entry]) -> bool:
    delegate = by_name.get(entry.fields.get("structured_delegate", ""))
    return _own_cuda(entry) or (delegate is not None and _own_cuda(delegate))


def _rule(entry: _Entry, by_name: dict[str, _Entry]) -> OpRule:
    base = entry.name.split(".", 1)[0]
    if base in MIXING_ALLOWED:
        return OpRule(Check.NONE)
    delegated = {"structured_delegate", "ufunc_inner_loop"} & entry.fields.keys()
    if not entry.dispatch_keys and not delegated:
        return OpRule(Check.DECOMPOSE)
    if not _has_cuda(entry, by_name):
        composite = entry.dispatch_keys & {
            "CompositeExplicitAutograd",
            "CompositeExplicitAutogradNonFunctional",
        }
        return OpRule(Check.COMPOSITE if composite else Check.NONE)
    if entry.fields.get("device_check") == "NoCheck":
        return OpRule(Check.ITERATOR)
    structured = entry.fields.get("structured") == "True" or "structured_delegate" in entry.fields
    return OpRule(Check.EXACT, wrapper_name(entry.schema, structured))


def parse_rules(text: str) -> dict[str, OpRule]:
    """Rules keyed like ``OpOverload`` names without the namespace: ``addmm``, ``add.Tensor``."""
    entries = list(_entries(iter(text.splitlines())))
    by_name = {entry.name: entry for entry in entries}
    return {entry.name: _rule(entry, by_name) for entry in entries}


# Used only when torchgen's yaml is absent: the TensorIterator operators a training loop meets
# most, so that a 0-dim CPU tensor mixing with CUDA tensors is not reported.
_ITERATOR_FALLBACK = """add sub mul div true_divide floor_divide remainder pow where clamp clamp_min
clamp_max maximum minimum eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and
bitwise_or bitwise_xor masked_fill lerp addcmul addcdiv mse_loss l1_loss smooth_l1_loss
huber_loss binary_cross_entropy_with_logits fmod atan2 hypot sigmoid tanh relu exp log neg abs
sqrt rsqrt fill_ zero_ mul_ add_ sub_ div_""".split()


def fallback_rules() -> dict[str, OpRule]:
    """The explicit table used when native_functions.yaml cannot be found."""
    rules = {name: OpRule(Check.ITERATOR) for name in _ITERATOR_FALLBACK}
    rules.update({name: OpRule(Check.NONE) for name in MIXING_ALLOWED})
    return rules


@functools.lru_cache(maxsize=1)
def load_rules() -> tuple[dict[str, OpRule], str]:
    """The rule table and where it came from (the yaml's path, or "fallback table")."""
    path = yaml_path()
    if path is None:
        return fallback_rules(), "fallback table"
    return parse_rules(path.read_text(encoding="utf-8")), str(path)


def rule_for(op_name: str) -> OpRule:
    """The rule for ``add.Tensor``; an operator the table lacks gets the exact check by name."""
    rules, source = load_rules()
    rule = rules.get(op_name) or rules.get(op_name.split(".", 1)[0])
    if rule is not None:
        return rule
    if source == "fallback table":
        return OpRule(Check.EXACT, f"wrapper_CUDA__{op_name.split('.', 1)[0]}")
    return OpRule(Check.NONE)  # autogenerated or custom operators: no CUDA wrapper to speak of
