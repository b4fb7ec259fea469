"""DEV008 across files: a file name that a CPU-only script beside the loading one saves (a
tutorial's `train.py` and `predict.py`) holds CPU tensors only, and so does what a file saves
and loads back where neither it nor the project files it imports move anything to a device."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from devlint.api import lint_paths
from devlint.config import ConfigResolver, RuleSelection

from .helpers import count_lints, write_later

TRAIN = """\
import torch
from model import RNN

rnn = RNN()
for p in rnn.parameters():
    p.data.add_(-0.1, p.grad.data)
torch.save(rnn, "char-rnn.pt")
"""
MODEL = """\
from torch import nn


class RNN(nn.Module):
    def forward(self, x):
        return x
"""
PREDICT = """\
import torch

rnn = torch.load("char-rnn.pt")
rnn.eval()
"""
_write = write_later


def _notebook(*cells: str) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "source": cell, "outputs": []}
                for cell in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "char-rnn"
    _write(root / "train.py", TRAIN)
    _write(root / "model.py", MODEL)
    _write(root / "predict.py", PREDICT)
    return root


def _loads_flagged(root: Path, cache_dir: Path | None = None) -> list[tuple[str, int]]:
    resolver = ConfigResolver(RuleSelection(("DEV008",)))
    summary = lint_paths([root], resolver, False, cache_dir=cache_dir)
    return [(Path(f.path).name, f.start.row) for f in summary.findings if f.code == "DEV008"]


def test_a_cpu_only_training_script_beside_the_load_makes_it_safe(folder: Path) -> None:
    assert _loads_flagged(folder) == []


@pytest.mark.parametrize(
    "sibling, text",
    [
        ("train.py", TRAIN.replace("rnn = RNN()", "rnn = RNN().cuda()")),
        ("train.py", TRAIN.replace("RNN()", 'RNN().to("mps")')),
        ("model.py", MODEL.replace("return x", "return x.to(self.device)")),
        ("utils.py", 'import torch\nDEVICE = "cuda:0"\n'),
        ("train.py", TRAIN.replace('"char-rnn.pt"', '"char-rnn-gpu.pt"')),  # another file
        ("train.py", TRAIN.replace('"char-rnn.pt"', 'f"char-rnn.pt"')),  # not a plain string
        ("broken.py", "def train(:\n"),  # what it does cannot be told
        ("training.ipynb", _notebook("import torch\n", 'x = torch.ones(2, device="cuda")\n')),
        ("model.py", MODEL + 'torch.set_default_tensor_type("torch.cuda.FloatTensor")\n'),
        ("model.py", "from accelerate import Accelerator\n" + MODEL),  # another package
        ("model.py", "from .layers import *\n" + MODEL),  # a relative import
        ("train.py", TRAIN.replace("rnn = RNN()", "rnn = torch.load('pretrained.pt')")),
        ("predict.py", PREDICT + "rnn.cuda()\ntorch.save(rnn, 'char-rnn.pt')\n"),
    ],
)
def test_a_folder_that_may_save_gpu_tensors_keeps_the_finding(
    folder: Path, sibling: str, text: str
) -> None:
    _write(folder / sibling, text)
    assert ("predict.py", 3) in _loads_flagged(folder)


def test_a_notebook_that_saves_on_the_cpu_counts_as_a_script(folder: Path) -> None:
    (folder / "train.py").unlink()
    _write(folder / "train.ipynb", _notebook("import torch\n", 'torch.save({}, "char-rnn.pt")\n'))
    assert _loads_flagged(folder) == []


def test_a_path_written_elsewhere_than_one_string_keeps_the_finding(folder: Path) -> None:
    _write(folder / "predict.py", PREDICT.replace('"char-rnn.pt"', 'args.model or "char-rnn.pt"'))
    assert _loads_flagged(folder) == [("predict.py", 3)]


def test_the_cache_relints_the_load_when_a_sibling_starts_using_a_gpu(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    assert _loads_flagged(folder, cache_dir) == []
    linted = count_lints(monkeypatch)
    _write(folder / "train.py", TRAIN.replace("rnn = RNN()", "rnn = RNN().cuda()"))
    assert _loads_flagged(folder, cache_dir) == [("predict.py", 3)]
    assert sorted(linted) == ["predict.py", "train.py"]


TUTORIAL = """\
import torch
from model import RNN


def save():
    rnn = RNN()
    torch.save(rnn.state_dict(), "rnn.pt")


def restore():
    rnn = RNN()
    rnn.load_state_dict(torch.load("rnn.pt"))
"""


def test_a_file_saving_what_it_loads_with_no_device_anywhere_is_safe(tmp_path: Path) -> None:
    root = tmp_path / "tutorial"
    _write(root / "model.py", MODEL)
    _write(root / "save_reload.py", TUTORIAL)
    _write(root / "gpu_demo.py", "import torch\nx = torch.ones(2).cuda()\n")  # not imported
    assert _loads_flagged(root) == []


@pytest.mark.parametrize(
    "model",
    [
        MODEL.replace(
            "    def forward", "    def __init__(self):\n        self.cuda()\n\n    def forward"
        ),
        "def train(:\n",  # what it does cannot be told
    ],
)
def test_an_imported_model_that_may_move_itself_keeps_the_finding(
    tmp_path: Path, model: str
) -> None:
    root = tmp_path / "tutorial"
    _write(root / "model.py", model)
    _write(root / "save_reload.py", TUTORIAL)
    assert _loads_flagged(root) == [("save_reload.py", 12)]


def test_a_sibling_added_later_relints_the_load(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    assert _loads_flagged(folder, cache_dir) == []
    _write(folder / "gpu_train.py", "import torch\nx = torch.ones(2).cuda()\n")
    assert _loads_flagged(folder, cache_dir) == [("predict.py", 3)]


def test_a_pipe_named_like_a_script_is_not_read(folder: Path) -> None:
    os.mkfifo(folder / "pipe.py")  # reading it would wait for a writer forever
    assert _loads_flagged(folder / "predict.py") == []
