"""Generate ``cuda_raising.json``: which public ``torch.cuda`` calls raise on a CPU-only torch.

Run on a CPU-only build of torch (``python -m devlint.data.generate_cuda_raising``): every
public function and class of ``torch.cuda`` is called with plausible arguments (a device index
for ``device``, a small tensor for ``tensor``..., context managers entered too), and every
public method of a CPU tensor with no argument, each in its own forked child with a time
limit, so that a call that hangs, crashes or changes the process's state touches nothing else.
A call that fails with the "no CUDA" family of errors ("Torch not compiled with CUDA enabled",
"Cannot access accelerator device when none is available", a missing ``torch._C._cuda_*``
binding, a dummy CUDA class) is *raising*; one that returns, or fails only because of its
arguments, is not. The table records torch's version; the linter reads it and never imports
torch (``devlint.analysis.cuda_runtime``).
"""

from __future__ import annotations

import inspect
import json
import multiprocessing
import os
import re
import sys
import tempfile
import warnings
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable, Optional

TABLE = Path(__file__).with_name("cuda_raising.json")
TIME_LIMIT_S = 10.0
# The errors of a CPU-only build asked for CUDA or an accelerator: what "raising" means.
NO_CUDA_ERROR = re.compile(
    r"Torch not compiled with CUDA enabled|Cannot access accelerator device when none is available"
    r"|has no attribute '_cuda_|Tried to instantiate dummy base class|Found no NVIDIA driver"
    r"|No CUDA GPUs are available|CUDA driver initialization failed|not compiled with CUDA"
    r"|compiled without CUDA support|requires CUDA support"
)
RAISES, RETURNS, OTHER_ERROR, TIMEOUT = "raises", "returns", "other-error", "timeout"


def _plausible(name: str) -> Any:
    """A plausible argument for a required parameter, by its name."""
    import torch

    if name in ("device", "device_index", "idx", "index"):
        return 0
    if name in ("tensor", "tensors", "input", "obj", "t", "x", "src"):
        return torch.ones(2)
    if name in ("seed", "size", "nbytes", "mem_size"):
        return 1
    if name == "fraction":
        return 0.5
    if name in ("new_state", "state"):
        return torch.ByteTensor(8)
    return None


def _arguments(function: Callable[..., Any]) -> list[Any]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return []
    return [
        _plausible(parameter.name)
        for parameter in signature.parameters.values()
        if parameter.default is inspect.Parameter.empty
        and parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        and parameter.name != "self"
    ]


def _call(function: Callable[..., Any], arguments: list[Any]) -> None:
    result = function(*arguments)
    if hasattr(result, "__enter__") and hasattr(result, "__exit__"):
        with result:  # `with torch.cuda.device(0):` fails on entry
            pass


def _child(target: str, connection: Connection) -> None:
    import torch

    warnings.simplefilter("ignore")
    os.chdir(tempfile.mkdtemp())  # a call that writes a file writes it there
    try:
        if target.startswith("Tensor."):
            getattr(torch.ones(2), target.split(".", 1)[1])()
        else:
            function = getattr(torch.cuda, target)
            _call(function, _arguments(function))
    except BaseException as error:  # a child reports everything, SystemExit included
        connection.send((type(error).__name__, str(error).splitlines()[0] if str(error) else ""))
    else:
        connection.send(None)


def probe(target: str) -> tuple[str, str]:
    """The outcome of one call (``"synchronize"``, ``"Tensor.pin_memory"``) and its error."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(target, sender))
    process.start()
    got: Optional[tuple[str, str]] = None
    if receiver.poll(TIME_LIMIT_S):
        try:
            got = receiver.recv()
        except EOFError:  # the child died without a word (a crash)
            process.join()
            return OTHER_ERROR, f"exit status {process.exitcode}"
        process.join(TIME_LIMIT_S)
        if got is None:
            return RETURNS, ""
        text = f"{got[0]}: {got[1]}"
        return (RAISES if NO_CUDA_ERROR.search(text) else OTHER_ERROR), text[:160]
    process.kill()
    process.join()
    return TIMEOUT, ""


def public_cuda_callables() -> dict[str, list[str]]:
    """Every public callable of ``torch.cuda`` and the other qualified names it is known by."""
    import torch

    found: dict[str, list[str]] = {}
    for name in sorted(dir(torch.cuda)):
        value = getattr(torch.cuda, name)
        module = getattr(value, "__module__", "") or ""
        if name.startswith("_") or inspect.ismodule(value) or not callable(value):
            continue
        if not module.startswith("torch.cuda"):
            continue  # re-exported from elsewhere (typing, torch.types)
        aliases = [f"{module}.{name}"] if module != "torch.cuda" else []
        found[name] = aliases
    return found


def public_tensor_methods() -> list[str]:
    import torch

    return sorted(
        name
        for name in dir(torch.Tensor)
        if not name.startswith("_") and callable(getattr(torch.Tensor, name, None))
    )


def generate() -> dict[str, Any]:
    import torch

    if torch.cuda.is_available() or torch.version.cuda is not None:
        raise SystemExit("run the generator on a CPU-only build of torch")
    functions: dict[str, dict[str, Any]] = {}
    for name, aliases in public_cuda_callables().items():
        outcome, error = probe(name)
        functions[name] = {"outcome": outcome, "error": error, "aliases": aliases}
    methods: dict[str, dict[str, str]] = {}
    for name in public_tensor_methods():
        outcome, error = probe(f"Tensor.{name}")
        if outcome == RAISES:  # only the raising ones: the rest fail for want of arguments
            methods[name] = {"outcome": outcome, "error": error}
    return {
        "generated_by": "python -m devlint.data.generate_cuda_raising",
        "torch_version": torch.__version__,
        "python_version": sys.version.split()[0],
        "functions": functions,
        "tensor_methods": methods,
    }


def main() -> None:
    table = generate()
    TABLE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    raising = [name for name, entry in table["functions"].items() if entry["outcome"] == RAISES]
    print(f"{len(raising)} of {len(table['functions'])} torch.cuda callables raise; wrote {TABLE}")


if __name__ == "__main__":
    main()
