"""DEV008 across files: a project that saves its weights moved to the CPU loads CPU weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.analysis import callers
from devlint.api import lint_paths
from devlint.config import ConfigResolver, RuleSelection
from devlint.report import RunSummary

from .helpers import count_lints, write_later

SAVER = """\
import os
import torch


class BaseModel:
    def save_network(self, net, label, param_key="params"):
        state_dict = net.state_dict()
        for key, param in state_dict.items():
            state_dict[key] = param.cpu()
        torch.save({param_key: state_dict}, os.path.join(self.root, f"{label}.pth"))

    def save_training_state(self, epoch):
        torch.save({"epoch": epoch}, os.path.join(self.root, f"{epoch}.state"))
"""
DEMO = """\
import argparse
import torch
from archs import Net

parser = argparse.ArgumentParser()
parser.add_argument("--weights")
args = parser.parse_args()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net()
model.load_state_dict(torch.load(args.weights)["params"])
model.to(device)
"""
DIRECT = """\
import torch


def export(model):
    model.cuda()
    torch.save(model.state_dict(), "model.pth")
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(callers, "_LISTING_LIFETIME_S", 0.0)  # each lint lists the files anew
    root = tmp_path / "project"
    write_later(root / "pyproject.toml", "")
    write_later(root / "models" / "base.py", SAVER)
    write_later(root / "demo.py", DEMO)
    return root


def _lint(root: Path, cache_dir: Path | None = None) -> RunSummary:
    resolver = ConfigResolver(RuleSelection(("DEV008",)))
    return lint_paths([root], resolver, False, cache_dir=cache_dir)


def _found(summary: RunSummary) -> list[tuple[str, int]]:
    return [(Path(f.path).name, f.start.row) for f in summary.findings]


def test_a_project_saving_its_weights_on_the_cpu_loads_cpu_weights(project: Path) -> None:
    assert _found(_lint(project)) == []


def test_one_direct_save_of_weights_from_a_device_breaks_the_convention(project: Path) -> None:
    write_later(project / "export.py", DIRECT)
    assert _found(_lint(project)) == [("demo.py", 10)]


def test_a_direct_save_in_a_file_with_no_device_keeps_it(project: Path) -> None:
    write_later(project / "convert.py", DIRECT.replace("    model.cuda()\n", ""))
    assert _found(_lint(project)) == []


OPTIMIZER_SAVER = """\
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Trainer:
    def save_optimizer(self, optimizer, path):
        torch.save(optimizer.state_dict(), path)

    def load_optimizer(self, optimizer, path):
        optimizer.load_state_dict(torch.load(path))
"""


def test_an_optimizer_state_saved_as_it_is_keeps_it_for_weights_only(project: Path) -> None:
    # the moments live where training ran: a load restoring an optimizer is still reported
    write_later(project / "train.py", OPTIMIZER_SAVER)
    assert _found(_lint(project)) == [("train.py", 11)]


@pytest.mark.parametrize(
    "restore",
    [
        "self.optimizers[i].load_state_dict(torch.load(path))",  # no name: may be one
        "self.optimizer_G.load_state_dict(torch.load(path))",
    ],
)
def test_a_load_into_what_may_be_an_optimizer_is_reported(project: Path, restore: str) -> None:
    trainer = OPTIMIZER_SAVER.replace("optimizer.load_state_dict(torch.load(path))", restore)
    write_later(project / "train.py", trainer)
    assert _found(_lint(project)) == [("train.py", 11)]


def test_a_model_named_like_an_optimizer_saved_as_it_is_breaks_it(project: Path) -> None:
    optimized = DIRECT.replace("model", "optimized_model").replace("(optimized_model)", "(model)")
    write_later(project / "export.py", optimized)
    assert _found(_lint(project)) == [("demo.py", 10)]


def test_either_branch_of_a_choice_goes_into_load_state_dict(project: Path) -> None:
    (project / "models" / "base.py").unlink()
    write_later(
        project / "demo.py",
        DEMO.replace(
            'torch.load(args.weights)["params"]',
            'sd if "params" not in (sd := torch.load(args.weights)) else sd["params"]',
        ),
    )
    assert _found(_lint(project)) == [("demo.py", 10)]


def test_without_the_saver_the_checkpoint_is_reported(project: Path) -> None:
    (project / "models" / "base.py").unlink()
    assert _found(_lint(project)) == [("demo.py", 10)]


@pytest.mark.parametrize(
    "saver",
    [
        "def save(model, path):\n    torch.save(model.cpu().state_dict(), path)\n",
        "def save(model, path):\n"
        "    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, path)\n",
        "def save(model, path):\n    torch.save(weights_to_cpu(model.state_dict()), path)\n",
    ],
)
def test_other_ways_of_moving_the_weights_first(project: Path, saver: str) -> None:
    write_later(project / "models" / "base.py", "import torch\n\n\n" + saver)
    assert _found(_lint(project)) == []


def test_a_new_direct_saver_relints_the_loading_file(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    assert _found(_lint(project, cache_dir)) == []
    linted = count_lints(monkeypatch)
    write_later(project / "export.py", DIRECT)
    assert _found(_lint(project, cache_dir)) == [("demo.py", 10)]
    assert "demo.py" in linted


STOPPER = """\
import torch


class EarlyStopping:
    def __call__(self, val_loss, model, path):
        self.save_checkpoint(val_loss, model, path)

    def save_checkpoint(self, val_loss, model, path):
        torch.save(model.state_dict(), path + "/" + "checkpoint.pth")
"""
TRAIN = """\
import os
import torch
from utils.tools import EarlyStopping


class Exp:
    def train(self, setting):
        path = os.path.join(self.args.checkpoints, setting)
        os.makedirs(path)
        early_stopping = EarlyStopping()
        for epoch in range(self.args.epochs):
            early_stopping(self.validate(), self.model, path)
        best_model_path = path + "/" + "checkpoint.pth"
        self.model.load_state_dict(torch.load(best_model_path))
"""


@pytest.fixture
def stopping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(callers, "_LISTING_LIFETIME_S", 0.0)
    root = tmp_path / "stopping"
    write_later(root / "setup.py", "")
    write_later(root / "utils" / "tools.py", STOPPER)
    return root


def test_a_checkpoint_a_helper_saved_into_the_folder_it_was_given(stopping: Path) -> None:
    write_later(stopping / "exp.py", TRAIN)
    assert _found(_lint(stopping)) == []


def test_a_folder_handed_to_no_saving_call_may_hold_any_checkpoint(stopping: Path) -> None:
    write_later(stopping / "exp.py", TRAIN.replace("early_stopping(self.validate(), ", "print("))
    assert _found(_lint(stopping)) == [("exp.py", 14)]


def test_a_file_name_the_helper_does_not_save_is_another_file(stopping: Path) -> None:
    write_later(stopping / "exp.py", TRAIN.replace('"checkpoint.pth"\n', '"best.pth"\n'))
    assert _found(_lint(stopping)) == [("exp.py", 14)]


def test_a_folder_handed_to_a_call_that_saves_nothing_proves_nothing(stopping: Path) -> None:
    handed = TRAIN.replace("early_stopping(self.validate(), ", "self.tokenizer.load(")
    write_later(stopping / "exp.py", handed)
    assert _found(_lint(stopping)) == [("exp.py", 14)]


def test_the_saver_called_by_name(stopping: Path) -> None:
    by_name = TRAIN.replace("early_stopping(", "early_stopping.save_checkpoint(")
    write_later(stopping / "exp.py", by_name)
    assert _found(_lint(stopping)) == []


@pytest.mark.parametrize(
    "direct",
    [
        'state = {"model": model.state_dict(), "epoch": 3}\n    torch.save(state, "c.pth")\n',
        'ckpt = {}\n    ckpt["sd"] = model.state_dict()\n    torch.save(ckpt, "c.pth")\n',
        "for k, v in stats.items():\n        stats[k] = v.cpu()\n"
        '    torch.save(model.state_dict(), "c.pth")\n',
        'torch.save({"model": model.state_dict(), "m": metrics_to_cpu(m)}, "c.pth")\n',
        'torch.save(model, "model.pt")\n',
    ],
)
def test_weights_saved_where_they_live_break_the_convention(project: Path, direct: str) -> None:
    saver = "import torch\n\n\ndef export(model, stats, m):\n    model.cuda()\n    " + direct
    write_later(project / "export.py", saver)
    assert _found(_lint(project)) == [("demo.py", 10)]


@pytest.mark.parametrize("imported", ["from torch import save\n", "import torch as T\n"])
def test_torch_save_under_another_name(project: Path, imported: str) -> None:
    call = "save" if "from" in imported else "T.save"
    source = f"{imported}\n\ndef export(model):\n    model.cuda()\n"
    write_later(project / "export.py", source + f'    {call}(model.state_dict(), "m.pth")\n')
    assert _found(_lint(project)) == [("demo.py", 10)]
