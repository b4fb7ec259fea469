"""Generate devlint's table of the torch API from the installed torch's own type declarations.

Run ``python -m devlint.analysis.generate_torch_api`` after upgrading torch, and commit the
file it writes (``devlint/data/torch_api.json``). The linter reads that file, never torch.

The declarations read are the stubs torch generates from its operator schemas:
``torch/_C/_VariableFunctions.pyi`` (the ``torch.*`` functions) and the ``TensorBase`` class
of ``torch/_C/__init__.pyi`` (the tensor methods). They are parsed as text with :mod:`ast`:
torch is located on the path but not imported, so generating costs no torch start-up and
works without a GPU build. Each name is classified by what *all* its overloads say:

- ``factories``: take a ``device=`` and no tensor argument (``zeros``, ``arange``,
  ``hann_window``): they create a tensor, on the CPU unless told otherwise;
- ``like_factories``: ``*_like`` functions with ``device=``: where their input is, unless told;
- ``keeping_functions``: take tensors, no ``device=``, and return tensors: the result lives
  where the tensor arguments do (arithmetic, reductions, views, ``cat``...);
- ``operand_functions``: the keeping functions whose tensor arguments are all operands that
  must share a device (``input``, ``other``, ``tensors``, ``mat1``...); lengths, batch sizes
  and indices, which torch accepts on the CPU, keep a function out of this list;
- ``keeping_methods``: tensor methods returning tensors, without ``device=``;
- ``operand_methods``: keeping methods with an ``other`` tensor argument (``a.add(b)``);
- ``new_methods``: ``new_*`` methods, which create where their receiver is;
- ``host_methods``: tensor methods returning Python numbers, booleans or lists (``item``,
  ``tolist``, ``dim``): host values, on no device.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "torch_api.json"
FORMAT = 1

# Parameters that must live where the other operands do (see `operand_functions`).
_OPERAND_PARAMETERS = frozenset(
    "self input other tensors tensor tensor1 tensor2 mat mat1 mat2 vec vec1 vec2 batch1 batch2 "
    "x1 x2 end weight exponent condition elements test_elements A B".split()
)
# Parameters that are not arguments of the operation (`out=` is written into, where it is).
_IGNORED_PARAMETERS = frozenset({"out", "generator"})
_HOST_RETURNS = re.compile(r"^(?:_?bool|_?int|_?float|_?complex|Number|str|list(?:\[.*\])?)$")


@dataclass(frozen=True)
class Overload:
    parameters: tuple[tuple[str, str], ...]  # (name, annotation as written)
    returns: str

    def tensor_parameters(self) -> list[str]:
        return [
            name
            for name, annotation in self.parameters
            if "Tensor" in annotation and name not in _IGNORED_PARAMETERS
        ]

    def has_device(self) -> bool:
        return any(name == "device" for name, _ in self.parameters)

    def returns_tensors(self) -> bool:
        return "Tensor" in self.returns or "return_types" in self.returns

    def returns_host_value(self) -> bool:
        return "Tensor" not in self.returns and bool(_HOST_RETURNS.match(self.returns))


def torch_folder() -> Path:
    """The installed torch package's folder, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed")
    return Path(spec.origin).parent


def torch_version(folder: Path) -> str:
    match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", (folder / "version.py").read_text())
    if match is None:
        raise SystemExit("cannot read torch's version")
    return match.group(1)


def _overloads(body: Iterable[ast.stmt]) -> dict[str, list[Overload]]:
    found: dict[str, list[Overload]] = {}
    for statement in body:
        if not isinstance(statement, ast.FunctionDef) or statement.name.startswith("_"):
            continue
        arguments = statement.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [star for star in (arguments.vararg, arguments.kwarg) if star is not None]
        parameters = tuple(
            (parameter.arg, ast.unparse(parameter.annotation) if parameter.annotation else "")
            for parameter in every
        )
        returns = ast.unparse(statement.returns) if statement.returns else ""
        found.setdefault(statement.name, []).append(Overload(parameters, returns))
    return found


def _class_body(module: ast.Module, name: str) -> list[ast.stmt]:
    for statement in module.body:
        if isinstance(statement, ast.ClassDef) and statement.name == name:
            return statement.body
    raise SystemExit(f"class {name} not found in torch's stubs")


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _classify_functions(functions: dict[str, list[Overload]]) -> dict[str, list[str]]:
    factories, like, keeping, operands = [], [], [], []
    for name, overloads in functions.items():
        devices = [overload.has_device() for overload in overloads]
        tensors = [overload.tensor_parameters() for overload in overloads]
        if name.endswith("_like") and any(devices):
            like.append(name)
        elif all(devices) and not any(tensors):
            factories.append(name)
        elif (
            not any(devices)
            and all(tensors)
            and all(overload.returns_tensors() for overload in overloads)
        ):
            keeping.append(name)
            if all(set(names) <= _OPERAND_PARAMETERS for names in tensors):
                operands.append(name)
    return {
        "factories": factories,
        "like_factories": like,
        "keeping_functions": keeping,
        "operand_functions": operands,
    }


def _classify_methods(methods: dict[str, list[Overload]]) -> dict[str, list[str]]:
    keeping, operands, new, host = [], [], [], []
    for name, overloads in methods.items():
        if name.startswith("new_"):
            new.append(name)
        elif all(overload.returns_host_value() for overload in overloads):
            host.append(name)
        elif not any(overload.has_device() for overload in overloads) and all(
            overload.returns_tensors() for overload in overloads
        ):
            keeping.append(name)
            if any("other" in overload.tensor_parameters() for overload in overloads):
                operands.append(name)
    return {
        "keeping_methods": keeping,
        "operand_methods": operands,
        "new_methods": new,
        "host_methods": host,
    }


def generate(folder: Optional[Path] = None) -> dict[str, Any]:
    """The table, from the torch installed at ``folder`` (found on the path by default)."""
    folder = folder or torch_folder()
    functions = _overloads(_parse(folder / "_C" / "_VariableFunctions.pyi").body)
    methods = _overloads(_class_body(_parse(folder / "_C" / "__init__.pyi"), "TensorBase"))
    table: dict[str, Any] = {"format": FORMAT, "torch": torch_version(folder)}
    groups = {**_classify_functions(functions), **_classify_methods(methods)}
    for key, names in groups.items():
        table[key] = sorted(names)
    return table


def render(table: dict[str, Any]) -> str:
    """The file's text: one name a line, so that a torch upgrade reads as a small diff."""
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def _main(arguments: Iterator[str]) -> int:
    target = Path(next(arguments, str(DATA_FILE)))
    table = generate()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(table), encoding="utf-8")
    counts = ", ".join(f"{len(v)} {k}" for k, v in table.items() if isinstance(v, list))
    print(f"wrote {target} from torch {table['torch']}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(iter(sys.argv[1:])))
