"""DEV011 end to end with a project's declared torch, and the table generator's reading of a
module (offline: the generator itself reads PyPI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.analysis.torch_versions import first_release
from devlint.data.generate_torch_versions import _module_names, first_versions, public_names
from tests.helpers import findings_of, run_cli, write

SCRIPT = "import torch\n\ndevice = torch.accelerator.current_accelerator()\n"


@pytest.mark.parametrize(
    ("declared", "reported"),
    [('dependencies = ["torch>=2.0"]', True), ('dependencies = ["torch>=2.7"]', False),
     ("", False)],
)  # fmt: skip
def test_an_api_newer_than_the_declared_floor_is_reported(
    tmp_path: Path, declared: str, reported: bool
) -> None:
    write(tmp_path, {"train.py": SCRIPT, "pyproject.toml": f'[project]\nname = "x"\n{declared}\n'})
    result = run_cli("--select", "DEV011", "--no-cache", "train.py", cwd=tmp_path)
    expected = [("train.py", 3, 10, "DEV011")] if reported else []
    assert findings_of(result.stdout) == expected
    if reported:
        assert "needs torch 2.6, but the project supports torch 2.0 (from pyproject.toml:3)" in (
            result.stdout
        )


def test_the_table_knows_the_accelerator_api_and_leaves_old_names_out() -> None:
    assert first_release("torch.accelerator.current_accelerator") == (2, 6)
    assert first_release("torch.amp.GradScaler") == (2, 3)
    assert first_release("torch.set_default_device") == (2, 0)
    assert first_release("torch.cuda.is_available") is None  # every release read has it
    assert first_release("torch.cuda.memory_reserved") is None  # bound by a star import


def test_public_names_read_definitions_imports_all_and_star_imports() -> None:
    source = (
        "from .memory import *\nfrom .device import Device as Dev, _private\nimport os\n"
        "__all__ = ['listed']\ndef helper(): pass\nclass Stream: pass\nLIMIT = 3\n"
    )
    stars = {"memory": {"memory_reserved"}}
    names = public_names(source, lambda module: stars.get(module, set()))
    # `import os` is no torch API; private names are left out
    assert names == {"memory_reserved", "Dev", "listed", "helper", "Stream", "LIMIT"}


def test_a_star_import_reads_the_sibling_modules_all() -> None:
    files = {
        "torch/cuda/__init__.py": "from .memory import *\nfrom . import memory, amp\n",
        "torch/cuda/memory.py": "__all__ = ['memory_reserved']\ndef _x(): pass\n",
        "torch/cuda/amp/__init__.py": "",
    }
    read, exists = files.get, files.__contains__
    # the submodules themselves (`memory`, `amp`) are left to their own entries
    assert _module_names("torch/cuda/__init__.py", read, exists) == {"memory_reserved"}
    assert _module_names("torch/xpu/__init__.py", read, exists) == set()


def test_first_versions_record_names_the_oldest_release_lacks() -> None:
    releases = {
        (1, 12): {"torch": {"zeros"}, "torch.accelerator": set()},
        (2, 0): {"torch": {"zeros", "compile"}, "torch.accelerator": set()},
        (2, 6): {"torch": {"zeros", "compile"}, "torch.accelerator": {"is_available"}},
    }
    assert first_versions(releases, ["torch", "torch.accelerator"]) == {
        "torch.accelerator": "2.6",
        "torch.accelerator.is_available": "2.6",
        "torch.compile": "2.0",
    }
