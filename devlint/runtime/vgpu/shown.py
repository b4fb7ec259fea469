"""Which accelerator the virtual device plays, as user code sees it: ``cuda`` (the ``vgpu``
profile) or ``mps`` (the ``mps`` profile, an Apple GPU). Set once, by ``install``."""

from __future__ import annotations

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

KINDS = ("cuda", "mps")
TYPE = "cuda"


def name() -> str:
    """The device's name in PyTorch's messages: ``cuda:0``, ``mps:0``."""
    return f"{TYPE}:0"
