"""Tensors on the virtual GPU: a wrapper that says ``cuda:0`` and holds a real CPU tensor.

For the dispatcher the wrapper lives on the PrivateUse1 backend (renamed ``vgpu``), not on CUDA:
on a CPU-only build the autograd engine asks the *current accelerator* for streams, and only a
PrivateUse1 backend with a device guard can be one. Python code sees ``.device == cuda:0`` and
``.is_cuda``, because the wrapper overrides those properties; C++ sees a ``vgpu`` tensor.

Every operator on a wrapper reaches ``__torch_dispatch__``, which applies the device rule a CUDA
kernel would apply (``checks``), runs the operator on the CPU tensors underneath and wraps the
results again. Operators that reach the backend without a wrapper (factories with
``device="vgpu"``, copies made while Python dispatch is off) land in the backend fallback.
"""

# torch's backend and dispatch APIs carry no annotations.
# mypy: disable-error-code="no-untyped-call"
from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any, Callable, Optional

import torch

from devlint.runtime.device_rules import Check
from devlint.runtime.profiles import MPS_FLOAT64_MESSAGE
from devlint.runtime.vgpu import checks, operator_checks, shown
from devlint.runtime.vgpu.kernels import CUDA_ONLY

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

BACKEND = "vgpu"
# Where the dispatcher finds the tensors: torch accepts the name only once the backend is
# renamed, so install() sets it (read it as `tensor.VIRTUAL`, never import the name).
VIRTUAL = torch.device("meta")
CUDA = torch.device("cuda", 0)  # noqa: DEV001 (where user code is told the tensors are)
# The CPU tensors under live wrappers, for torch.cuda.memory_allocated(). Never a weak reference
# to a wrapper: torch.utils.swap_tensors (module moves) refuses tensors that have one.
LIVE: weakref.WeakSet[torch.Tensor] = weakref.WeakSet()
SAVED_AS_CUDA: set[int] = set()  # data pointers of storages torch.save should tag "cuda:0"


class VirtualTensor(torch.Tensor):
    """A tensor on the virtual ``cuda:0``; ``_inner`` is the CPU tensor that holds its data."""

    _inner: torch.Tensor
    # Wrappers are seen at the dispatcher only (the mode sees the Python API).
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @staticmethod
    def __new__(cls, data: torch.Tensor, requires_grad: bool = False) -> VirtualTensor:
        # Reached through Parameter.__deepcopy__ and friends, which call type(self)(data, grad).
        with torch.no_grad():
            inner = data._inner if isinstance(data, VirtualTensor) else data.detach()
        moved = wrap(inner)
        moved.requires_grad_(requires_grad)
        return moved

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return CUDA if shown.TYPE == "cuda" else torch.device(shown.TYPE, 0)

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return shown.TYPE == "cuda"

    @property
    def is_mps(self) -> bool:  # type: ignore[override]
        return shown.TYPE == "mps"

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        if dtype is None:
            return checks.type_name(self, is_virtual)
        return super().type(dtype, non_blocking, **kwargs)

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        return _repr(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickle the CPU tensor underneath, and have torch.save tag its storage "cuda:0": the
        # checkpoint is then the one a real GPU run writes.
        with torch.no_grad():
            plain = self._inner.detach()
        if plain.untyped_storage().data_ptr():
            SAVED_AS_CUDA.add(plain.untyped_storage().data_ptr())
        if getattr(self, "_is_param", False):
            return (torch._utils._rebuild_parameter, (plain, self.requires_grad, OrderedDict()))
        if self.requires_grad:
            plain.requires_grad_(True)
        return plain.__reduce_ex__(protocol)

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls,
        func: torch._ops.OpOverload,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: Optional[dict[str, Any]] = None,
    ) -> Any:
        return dispatch(func, args, kwargs or {})


def is_virtual(tensor: torch.Tensor) -> bool:
    return isinstance(tensor, VirtualTensor)


def wrap(inner: torch.Tensor) -> VirtualTensor:
    if inner.dtype is torch.float64 and shown.TYPE == "mps":  # where MPS refuses it too
        raise TypeError(MPS_FLOAT64_MESSAGE)
    if inner.layout is torch.strided:
        out = torch.Tensor._make_wrapper_subclass(
            VirtualTensor,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            layout=inner.layout,
            device=VIRTUAL,
            requires_grad=False,
        )
    else:
        out = torch.Tensor._make_wrapper_subclass(
            VirtualTensor, inner.size(), dtype=inner.dtype, layout=inner.layout, device=VIRTUAL
        )
    out._inner = inner
    LIVE.add(inner)
    return out


class _Unwrapped:
    """Arguments with each wrapper replaced by its CPU tensor. Operator arguments nest at most
    lists of tensors, so a hand-written walk replaces torch's pytree (a third of the cost)."""

    __slots__ = ("virtual", "wrappers")

    def __init__(self) -> None:
        # id(CPU tensor) -> what the caller passed: its wrapper, or itself where it was plain
        # (in-place and out= operators return their argument, which must stay as it came)
        self.wrappers: dict[int, torch.Tensor] = {}
        self.virtual = False  # whether a tensor on the virtual GPU takes part

    def value(self, value: Any) -> Any:
        if isinstance(value, VirtualTensor):
            self.wrappers[id(value._inner)] = value
            self.virtual = True
            return value._inner
        if isinstance(value, torch.Tensor):
            self.wrappers[id(value)] = value
        elif type(value) is list or type(value) is tuple:
            return type(value)(self.value(item) for item in value)
        return value


def _rewrap(value: Any, wrappers: dict[int, torch.Tensor], virtual: bool) -> Any:
    if isinstance(value, torch.Tensor):
        known = wrappers.get(id(value))  # in-place and out= operators return their argument
        if known is not None:
            return known
        return wrap(value) if virtual else value
    if type(value) is list or type(value) is tuple:
        return type(value)(_rewrap(item, wrappers, virtual) for item in value)
    return value


def _unwrap(value: Any) -> Any:
    return value._inner if isinstance(value, VirtualTensor) else value


def _to_cpu_device(kwargs: dict[str, Any]) -> tuple[dict[str, Any], Optional[bool]]:
    """Kwargs with a virtual ``device`` replaced by the CPU, and whether results go virtual
    (None: no device argument, results follow the operands)."""
    device = kwargs.get("device")
    if device is None:
        return kwargs, None
    device = torch.device(device)
    if device.type == BACKEND:
        return {**kwargs, "device": torch.device("cpu")}, True
    return kwargs, False


def _call_on_cpu(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], unwrapped: _Unwrapped
) -> Any:
    cpu_args = tuple(unwrapped.value(value) for value in args)
    cpu_kwargs, virtual = _to_cpu_device({k: unwrapped.value(v) for k, v in kwargs.items()})
    out = func(*cpu_args, **cpu_kwargs)
    return _rewrap(out, unwrapped.wrappers, unwrapped.virtual if virtual is None else virtual)


def run_on_cpu(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``func`` on the CPU tensors underneath and wrap what should be virtual."""
    return _call_on_cpu(func, args, kwargs, _Unwrapped())


def _run_composite(
    func: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Run a CompositeExplicitAutograd kernel on the wrappers, so that the operators it calls
    (``embedding`` calls ``index_select``) meet their own device checks."""
    keyset = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)
    try:
        return func.redispatch(keyset, *args, **kwargs)
    except RuntimeError as error:
        if checks.LAST_ERROR and checks.LAST_ERROR[0].message == str(error):
            raise
    # The kernel cannot run on the backend (it wanted a CUDA-only helper): run it on the CPU.
    return run_on_cpu(func, args, kwargs)


def _has_plain_tensor(values: Any) -> bool:
    for value in values:
        if isinstance(value, torch.Tensor):
            if not isinstance(value, VirtualTensor):
                return True
        elif (type(value) is list or type(value) is tuple) and _has_plain_tensor(value):
            return True
    return False


_PACK_PADDED = torch.ops.aten._pack_padded_sequence.default


def dispatch(func: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if func is _PACK_PADDED:
        operator_checks.check_packed_lengths(args, is_virtual)  # (lengths are read on the host)
    mixed = _has_plain_tensor(args) or _has_plain_tensor(kwargs.values())
    rule = operator_checks.check(func, args, kwargs, is_virtual) if mixed else Check.NONE
    if rule is Check.COMPOSITE:
        return _run_composite(func, args, kwargs)
    if rule is Check.DECOMPOSE:
        decomposed = func.decompose(*args, **kwargs)
        if decomposed is not NotImplemented:
            return decomposed
    substitute = CUDA_ONLY.get(func._schema.name.split("::", 1)[-1]) if CUDA_ONLY else None
    return run_on_cpu(substitute or func, args, kwargs)


def _repr(tensor: VirtualTensor) -> str:
    """torch's own layout, with the data of the CPU tensor and the metadata of the wrapper."""
    text = repr(tensor._inner.detach())
    suffix = f", device='{shown.name()}'"
    if tensor.grad_fn is not None:
        extra = f", grad_fn=<{type(tensor.grad_fn).__name__}>"
    elif tensor.requires_grad:
        extra = ", requires_grad=True"
    else:
        extra = ""
    body, closing = text[:-1], text[-1]
    head, sep, dtype = body.rpartition(", dtype=")
    if sep and "\n" not in dtype and "]" not in dtype:
        return f"{head}{suffix}{sep}{dtype}{extra}{closing}"
    return f"{body}{suffix}{extra}{closing}"


def copy_from(source: torch.Tensor, destination: torch.Tensor, non_blocking: bool = False) -> Any:
    """``aten::_copy_from`` on the backend: copy between the CPU tensors underneath (a
    re-dispatch would land here again, Python dispatch being off on this path)."""
    _unwrap(destination).copy_(_unwrap(source))
    return destination


def copy_from_and_resize(source: torch.Tensor, destination: torch.Tensor) -> Any:
    inner = _unwrap(destination)
    inner.resize_(source.shape)
    if isinstance(destination, VirtualTensor) and inner.shape != destination.shape:
        raise RuntimeError("devlint vgpu: cannot resize a virtual tensor in place")
    inner.copy_(_unwrap(source))
    return destination


def backend_fallback(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """Operators that reach the ``vgpu`` backend itself: factories, and copies made while
    Python dispatch is excluded (``torch.tensor(data, device=...)``)."""
    return run_on_cpu(op, args, kwargs)
