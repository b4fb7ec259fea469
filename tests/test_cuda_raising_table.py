"""The table of raising `torch.cuda` calls is torch's own word; the linter never imports torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from devlint.analysis.cuda_runtime import TABLE, raising_calls

torch = pytest.importorskip("torch")
generator = pytest.importorskip("devlint.data.generate_cuda_raising")
cpu_only = pytest.mark.skipif(
    torch.version.cuda is not None, reason="the table is made on a CPU-only torch"
)


@cpu_only
@pytest.mark.parametrize(
    "name",
    [
        "synchronize", "current_device", "get_device_name", "set_device", "Event",
        "reset_peak_memory_stats", "manual_seed_all", "empty_cache", "memory_allocated",
        "device_count", "is_available",
    ],
)  # fmt: skip
def test_the_table_says_what_the_generator_finds(name: str) -> None:
    outcome, _ = generator.probe(name)
    assert json.loads(TABLE.read_text())["functions"][name]["outcome"] == outcome


@cpu_only
def test_pin_memory_raises_as_the_table_says() -> None:
    outcome, error = generator.probe("Tensor.pin_memory")
    assert outcome == generator.RAISES
    assert "pin_memory" in raising_calls().tensor_methods
    assert "Cannot access accelerator device" in error


def test_the_issue_s_calls_are_sorted_as_torch_sorts_them() -> None:
    table = raising_calls()
    for raising in ("synchronize", "current_device", "get_device_name", "set_device", "Event",
                    "reset_peak_memory_stats"):  # fmt: skip
        assert f"torch.cuda.{raising}" in table.functions
    for harmless in ("manual_seed_all", "empty_cache", "memory_allocated", "device_count",
                     "is_available"):  # fmt: skip
        assert f"torch.cuda.{harmless}" not in table.functions
    assert table.torch_version.startswith("2.")


def test_reading_the_table_does_not_import_torch() -> None:
    code = (
        "import sys, devlint.rules, devlint.analysis.cuda_runtime as c\n"
        "assert c.raising_calls().functions\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
