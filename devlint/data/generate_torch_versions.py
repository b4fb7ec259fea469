"""Generate ``torch_versions.json``: the torch release that first has each public name of the
modules device code reaches for (``torch.accelerator.current_accelerator``: 2.6).

    python -m devlint.data.generate_torch_versions

It reads PyTorch's own released code: for each release from 1.12 on, one wheel of it on PyPI,
opened in place with HTTP range requests (only the central directory and the handful of module
files it reads are fetched, a few hundred kilobytes per release, never a whole wheel), and the
public names each module binds at its top level (definitions, assignments, imports, ``__all__``).
A name is recorded with the first release that has it; names every release has are left out, and
so is anything bound dynamically. The linter reads the JSON and never imports torch.
"""

from __future__ import annotations

import ast
import io
import json
import re
import sys
import urllib.request
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Callable, Optional

INDEX = "https://pypi.org/simple/torch/"
FIRST = (1, 12)  # the oldest release read: names it has are not new to any floor we compare
OUT = Path(__file__).with_name("torch_versions.json")
# Files that declare names a module binds at run time (`torch.zeros` comes from a loop over
# `torch._C._VariableFunctions`): read as part of the module, so a name a release binds that way
# is never taken for a new one when a later release binds it in plain sight.
DECLARATIONS = {"torch": ("torch/_C/_VariableFunctions.pyi",)}
# Module -> its file in the wheel. The namespaces device code uses to pick and run on a device.
MODULES = {
    "torch": "torch/__init__.py",
    "torch.accelerator": "torch/accelerator/__init__.py",
    "torch.amp": "torch/amp/__init__.py",
    "torch.cuda": "torch/cuda/__init__.py",
    "torch.cuda.amp": "torch/cuda/amp/__init__.py",
    "torch.mps": "torch/mps/__init__.py",
    "torch.xpu": "torch/xpu/__init__.py",
    "torch.backends.mps": "torch/backends/mps/__init__.py",
    "torch.compiler": "torch/compiler/__init__.py",
    "torch.func": "torch/func/__init__.py",
    "torch.nn.functional": "torch/nn/functional.py",
    "torch.nn.attention": "torch/nn/attention/__init__.py",
}
_WHEEL = re.compile(r'href="(https://[^"]+/torch-(\d+)\.(\d+)\.(\d+)-[^"]+\.whl)[#"]')


class RangeFile(io.RawIOBase):
    """A remote file read by HTTP range requests: enough for ``zipfile`` to read one member."""

    def __init__(self, url: str) -> None:
        self.url = url
        head = urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60)
        self.size = int(head.headers["Content-Length"])
        self.position = 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = base + offset
        return self.position

    def read(self, size: Optional[int] = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self.position + size)
        if end <= self.position:
            return b""
        request = urllib.request.Request(
            self.url, headers={"Range": f"bytes={self.position}-{end - 1}"}
        )
        data: bytes = urllib.request.urlopen(request, timeout=120).read()
        self.position += len(data)
        return data


def releases() -> dict[tuple[int, int], str]:
    """The first patch release of each minor version from ``FIRST`` on: one wheel's address."""
    page = urllib.request.urlopen(INDEX, timeout=60).read().decode()
    found: dict[tuple[int, int], tuple[int, int, str]] = {}
    for url, major, minor, patch in _WHEEL.findall(page):
        version = (int(major), int(minor))
        if version < FIRST:
            continue
        size = -len(url)  # any wheel holds the same Python files; prefer the first patch
        known = found.get(version)
        if known is None or (int(patch), size) < known[:2]:
            found[version] = (int(patch), size, url)
    return {version: url for version, (_, _, url) in sorted(found.items())}


def public_names(source: str, star: Callable[[str], set[str]] = lambda module: set()) -> set[str]:
    """The names a module binds at its top level, less private ones; ``star`` gives the names a
    relative `from .memory import *` brings in."""
    tree = ast.parse(source)
    names = exported(tree)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            if node.level == 1 and node.module:
                names.update(star(node.module))
        elif isinstance(node, ast.ImportFrom) and (node.level or _is_torch(node.module)):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            # `import torch.utils.data` binds `torch`; `import functools` is no torch API.
            names.update(a.asname for a in node.names if a.asname and _is_torch(a.name))
    return {name for name in names if not name.startswith("_")}


def names_of(url: str) -> dict[str, set[str]]:
    """Each module's public names in one wheel (an absent module has none)."""
    with zipfile.ZipFile(RangeFile(url)) as wheel:
        present = set(wheel.namelist())

        def read(path: str) -> Optional[str]:
            return wheel.read(path).decode("utf-8") if path in present else None

        found = {
            module: _module_names(path, read, present.__contains__)
            for module, path in MODULES.items()
        }
        for module, declarations in DECLARATIONS.items():
            for path in declarations:
                source = read(path)
                if source is not None:
                    found[module] |= public_names(source)
        return found


def _is_torch(module: Optional[str]) -> bool:
    return module is not None and (module == "torch" or module.startswith("torch."))


def _module_names(
    path: str, read: Callable[[str], Optional[str]], exists: Callable[[str], bool]
) -> set[str]:
    """A module's public names in one wheel, through ``read`` (None: not in the wheel), less
    its submodules: `import torch.utils.data` binds `utils` in some releases and not others,
    while the module has been there all along."""
    source = read(path)
    if source is None:
        return set()
    folder = path.rpartition("/")[0]

    def star_names(module: str) -> set[str]:
        for candidate in (f"{folder}/{module}.py", f"{folder}/{module}/__init__.py"):
            text = read(candidate)
            if text is not None:
                return exported(ast.parse(text)) or public_names(text)
        return set()

    return {
        name
        for name in public_names(source, star_names)
        if not (exists(f"{folder}/{name}.py") or exists(f"{folder}/{name}/__init__.py"))
    }


def exported(tree: ast.Module) -> set[str]:
    """A module's `__all__`, where it lists it literally."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value  # type: ignore[attr-defined]
            if isinstance(value, (ast.List, ast.Tuple)):
                return {
                    e.value for e in value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }  # fmt: skip
    return set()


def first_versions(
    by_release: dict[tuple[int, int], dict[str, set[str]]], modules: Iterable[str] = MODULES
) -> dict[str, str]:
    """``module.name`` -> the first release that has it, for names the oldest release lacks;
    a module the oldest release lacks is recorded too."""
    oldest = by_release[min(by_release)]
    first: dict[str, str] = {}
    for version in sorted(by_release):
        shown = "{}.{}".format(*version)
        for module in modules:
            names = by_release[version][module]
            if names and not oldest[module]:
                first.setdefault(module, shown)
            for name in names - oldest[module]:
                first.setdefault(f"{module}.{name}", shown)
    return dict(sorted(first.items()))


def main() -> int:
    by_release: dict[tuple[int, int], dict[str, set[str]]] = {}
    for version, url in releases().items():
        print(f"torch {version[0]}.{version[1]}: {url.rsplit('/', 1)[-1]}", file=sys.stderr)
        by_release[version] = names_of(url)
    table = {
        "generated_by": "python -m devlint.data.generate_torch_versions",
        "releases": ["{}.{}".format(*v) for v in sorted(by_release)],
        "modules": sorted(MODULES),
        "first_release": first_versions(by_release),
    }
    OUT.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"{len(table['first_release'])} names in {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
