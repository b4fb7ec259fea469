"""Across files, the other way: a function's callers in the project's other files say where
its tensor parameters live when every one of them passes a tensor moved to the CPU."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from devlint.analysis import callers
from devlint.api import lint_paths
from devlint.config import ConfigResolver, RuleSelection
from devlint.report import RunSummary

from .helpers import count_lints, write_later

UTILS = """\
import torch


def renorm(img, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
    img_perm = img.permute(1, 2, 0)
    mean = torch.Tensor(mean)
    std = torch.Tensor(std)
    return (img_perm * std + mean).permute(2, 0, 1)


def to_device(item, device):
    return item.to(device)
"""
SHOW = """\
import torch
from util.utils import renorm


def show(img):
    model = torch.nn.Linear(2, 2).to("cuda" if torch.cuda.is_available() else "cpu")
    return renorm(img.cpu()).permute(1, 2, 0).numpy()
"""
ON_DEVICE = """\
from util import utils


def preview(batch):
    return utils.renorm(batch[0])
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(callers, "_LISTING_LIFETIME_S", 0.0)  # each lint lists the files anew
    root = tmp_path / "project"
    write_later(root / "pyproject.toml", "")
    write_later(root / "util" / "__init__.py", "")
    write_later(root / "util" / "utils.py", UTILS)
    write_later(root / "vis.py", SHOW)
    return root


def _lint(root: Path, cache_dir: Path | None = None) -> RunSummary:
    resolver = ConfigResolver(RuleSelection(("DEV005", "DEV006")))
    return lint_paths([root], resolver, False, cache_dir=cache_dir)


def _found(summary: RunSummary) -> list[tuple[str, str, int]]:
    return [(Path(f.path).name, f.code, f.start.row) for f in summary.findings]


def test_callers_that_all_pass_cpu_tensors_make_the_parameter_theirs(project: Path) -> None:
    assert _found(_lint(project)) == []


def test_one_caller_passing_what_it_did_not_move_keeps_the_contract(project: Path) -> None:
    write_later(project / "preview.py", ON_DEVICE)
    assert _found(_lint(project)) == [("utils.py", "DEV005", 7)]


def test_a_function_of_the_same_name_elsewhere_is_no_caller(project: Path) -> None:
    write_later(project / "other.py", "def renorm(x):\n    return x\nrenorm(batch[0])\n")
    assert _found(_lint(project)) == []


DATASET = """\
import torch
from util.utils import renorm


class Frames(torch.utils.data.Dataset):
    def __getitem__(self, index):
        return renorm(self.frames[index])
"""


def test_a_dataset_handing_on_its_items_passes_cpu_data(project: Path) -> None:
    (project / "vis.py").unlink()
    write_later(project / "data.py", DATASET)
    assert _found(_lint(project)) == []


def test_a_dataset_keeping_its_tensors_on_a_device_keeps_the_contract(project: Path) -> None:
    (project / "vis.py").unlink()
    on_gpu = DATASET + "\n    def __init__(self, frames):\n        self.frames = frames.cuda()\n"
    write_later(project / "data.py", on_gpu)
    assert _found(_lint(project)) == [("utils.py", "DEV005", 7)]


def test_a_checkout_under_a_tests_folder_is_no_test(project: Path, tmp_path: Path) -> None:
    (project / "vis.py").unlink()
    write_later(project / "data.py", DATASET)
    moved = tmp_path / "tests" / "checkout"
    moved.parent.mkdir()
    project.rename(moved)
    assert _found(_lint(moved)) == []


@pytest.mark.parametrize(
    ("call", "found"),
    [
        ("renorm(torch.rand(3, 4, 4))", []),
        ("renorm(torch.rand(3, 4, 4, device='cuda'))", [("utils.py", "DEV005", 7)]),
        ("renorm(img.to('cuda'))", [("utils.py", "DEV005", 7)]),
        # a device elsewhere in the test file: the test may run on one
        ("x = img.cuda()\n    renorm(img)", [("utils.py", "DEV005", 7)]),
    ],
)
def test_a_test_calling_says_nothing_unless_its_file_places_on_a_device(
    project: Path, call: str, found: list[tuple[str, str, int]]
) -> None:
    test = f"import torch\nfrom util.utils import renorm\n\n\ndef test_renorm(img):\n    {call}\n"
    write_later(project / "tests" / "test_utils.py", test)
    assert _found(_lint(project)) == found


def test_without_callers_the_contract_stands(project: Path) -> None:
    (project / "vis.py").unlink()
    assert _found(_lint(project)) == [("utils.py", "DEV005", 7)]


def test_a_new_caller_relints_the_function_from_the_cache(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    assert _found(_lint(project, cache_dir)) == []
    linted = count_lints(monkeypatch)
    write_later(project / "preview.py", ON_DEVICE)
    assert _found(_lint(project, cache_dir)) == [("utils.py", "DEV005", 7)]
    assert sorted(linted) == ["preview.py", "utils.py"]


def test_an_unchanged_project_answers_from_the_cache(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    _lint(project, cache_dir)
    linted = count_lints(monkeypatch)
    assert _found(_lint(project, cache_dir)) == []
    assert linted == []


@pytest.mark.parametrize(
    ("argument", "moved"),
    [
        ("img.cpu()", True),
        ("img.detach().cpu()", True),
        ("img.cpu().float()", True),
        ("outputs.cpu()[0]", True),
        ("img.to('cpu')", True),
        ("img.to(device='cpu')", True),
        ("img", False),
        ("img.to(device)", False),
        ("img.cpu().cuda()", False),
        ("img.float()", False),
    ],
)
def test_what_counts_as_moved_to_the_cpu(argument: str, moved: bool) -> None:
    expression = ast.parse(argument, mode="eval").body
    assert callers.moved_to_cpu(expression) is moved


RANKER = """\
import torch


class Ranker:
    def __init__(self, train):
        self.train = train
        self.model = torch.nn.Linear(4, 4).to("cuda" if torch.cuda.is_available() else "cpu")

    def prepare(self, rows):
        return torch.FloatTensor(rows)

    def run(self):
        rows = self.prepare(self.train)
        return self.train_epoch(rows)

    def train_epoch(self, rows):
        idx = torch.LongTensor([0, 1])
        return rows.index_select(0, idx)
"""


@pytest.fixture
def ranking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(callers, "_LISTING_LIFETIME_S", 0.0)
    root = tmp_path / "ranking"
    write_later(root / "setup.py", "")
    write_later(root / "tools" / "ranking.py", RANKER)
    return root


def test_a_public_method_no_other_file_calls_takes_its_callers_word(ranking: Path) -> None:
    assert _found(_lint(ranking)) == []


def test_another_class_calling_its_own_method_of_the_name_is_no_caller(ranking: Path) -> None:
    other = "class Other:\n    def train_epoch(self, x):\n        return x\n"
    write_later(
        ranking / "tools" / "other.py",
        other + "    def run(self, x):\n        return self.train_epoch(x)\n",
    )
    assert _found(_lint(ranking)) == []


def test_a_caller_in_another_file_keeps_the_contract(ranking: Path) -> None:
    write_later(ranking / "main.py", "def go(ranker, x):\n    return ranker.train_epoch(x)\n")
    assert _found(_lint(ranking)) == [("ranking.py", "DEV005", 17)]


@pytest.mark.parametrize(
    "elsewhere",
    [
        "from util.utils import renorm as denorm\n\ndef f(batch):\n    return denorm(batch[0])\n",
        "from util.utils import renorm\n\ndef f(batch):\n    return list(map(renorm, batch))\n",
        "from util.utils import *\n\ndef f(batch):\n    return renorm(batch[0])\n",
    ],
)
def test_a_mention_not_called_in_sight_keeps_the_contract(project: Path, elsewhere: str) -> None:
    write_later(project / "other.py", elsewhere)
    assert _found(_lint(project)) == [("utils.py", "DEV005", 7)]


def test_a_notebook_naming_the_function_keeps_the_contract(project: Path) -> None:
    cell = {
        "cell_type": "code",
        "metadata": {},
        "outputs": [],
        "execution_count": None,
        "source": ["from util.utils import renorm\n", "renorm(x.cuda())"],
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    write_later(project / "demo.ipynb", json.dumps(notebook))
    assert _found(_lint(project)) == [("utils.py", "DEV005", 7)]


def test_a_method_handed_on_in_another_file_keeps_the_contract(ranking: Path) -> None:
    write_later(
        ranking / "main.py", "def go(ranker, hooks):\n    hooks.append(ranker.train_epoch)\n"
    )
    assert _found(_lint(ranking)) == [("ranking.py", "DEV005", 17)]


def test_the_repository_is_the_project_of_a_package_in_it(ranking: Path, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write_later(tmp_path / "app" / "main.py", "def go(r, x):\n    return r.train_epoch(x)\n")
    assert _found(_lint(ranking)) == [("ranking.py", "DEV005", 17)]
