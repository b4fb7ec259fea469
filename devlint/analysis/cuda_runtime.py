"""Which ``torch.cuda`` calls raise on a machine without CUDA, as torch itself says.

The table ``devlint/data/cuda_raising.json`` is made by calling every public ``torch.cuda``
callable on a CPU-only torch (``devlint.data.generate_cuda_raising``); this module only reads
it, so linting never imports torch.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "data" / "cuda_raising.json"


@dataclass(frozen=True)
class RaisingCalls:
    """The calls that raise without CUDA, and what they raise."""

    torch_version: str
    functions: dict[str, str]  # qualified name (aliases included) -> the error torch raised
    tensor_methods: dict[str, str]  # method name -> the error


@functools.lru_cache(maxsize=1)
def raising_calls() -> RaisingCalls:
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    functions: dict[str, str] = {}
    for name, entry in table["functions"].items():
        if entry["outcome"] != "raises":
            continue
        for qualified in (f"torch.cuda.{name}", *entry["aliases"]):
            functions[qualified] = entry["error"]
    methods = {name: entry["error"] for name, entry in table["tensor_methods"].items()}
    return RaisingCalls(table["torch_version"], functions, methods)


@functools.lru_cache(maxsize=1)
def raising_function_names() -> frozenset[str]:
    """The last names of the raising functions (`synchronize`), however they are reached."""
    return frozenset(name.rpartition(".")[2] for name in raising_calls().functions)
