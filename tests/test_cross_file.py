"""Across files: imports of project modules resolve to their files, whose summaries the flow
reads; the results cache re-lints a file when a summary it read changes, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.analysis.project import ProjectView
from devlint.analysis.summaries import summarise
from devlint.api import lint_paths
from devlint.complexity import parse_quietly
from devlint.config import ConfigResolver, RuleSelection
from devlint.report import RunSummary

from .helpers import count_lints, findings_of, run_cli, write_later

MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.scale = torch.ones(2)

    def forward(self, x):
        return self.fc(x)


def make_features(n):
    return torch.randn(n, 4)
"""
UTILS = """\
def score(net, features, targets):
    out = net(features)
    return (out.argmax(1) == targets).float().mean()


def safe_score(net, features, device):
    features = features.to(device)
    return net(features)
"""
TRAIN = """\
import torch
from model import Net, make_features
from utils import safe_score, score

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net()
net.to(device)
features = torch.randn(8, 4)
targets = torch.zeros(8)
print(score(net, features, targets))
print(safe_score(net, features, device))
x = make_features(3)
y = net(x)
"""
_write = write_later


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    _write(root / "pyproject.toml", "")
    _write(root / "model.py", MODEL)
    _write(root / "utils.py", UTILS)
    _write(root / "train.py", TRAIN)
    return root


@pytest.fixture
def linted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files actually linted (not answered from the cache) during a test."""
    return count_lints(monkeypatch)


def _lint(root: Path, cache_dir: Path | None = None) -> RunSummary:
    resolver = ConfigResolver(RuleSelection(("DEV005", "DEV006", "DEV009")))
    return lint_paths([root], resolver, False, cache_dir=cache_dir)


def _found(summary: RunSummary) -> list[tuple[str, str, int, int]]:
    return [(Path(f.path).name, f.code, f.start.row, f.start.column) for f in summary.findings]


def test_a_model_and_a_helper_of_other_files_carry_placements(project: Path) -> None:
    summary = _lint(project)
    assert _found(summary) == [
        ("train.py", "DEV005", 10, 18),  # `features`: `score` hands it to `net`
        ("train.py", "DEV005", 13, 9),  # `x`: created on the CPU by `make_features`
    ]  # `safe_score` moves its input itself: silent
    messages = [finding.message for finding in summary.findings]
    assert "`score` of utils.py passes it to `net`, moved to `device` at line 7" in messages[0]
    assert "created on the CPU by `make_features` of model.py at line 12" in messages[1]


def test_without_the_imported_files_nothing_is_known(project: Path, tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    _write(alone / "train.py", TRAIN)
    assert _found(_lint(alone)) == []


def test_relative_imports_src_layout_and_re_exports(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    _write(root / "pyproject.toml", "")
    _write(root / "src" / "pkg" / "__init__.py", "from .helpers import score\n")
    _write(root / "src" / "pkg" / "helpers.py", UTILS)
    _write(root / "src" / "pkg" / "models" / "__init__.py", "")
    _write(root / "src" / "pkg" / "models" / "net.py", MODEL)
    _write(
        root / "src" / "pkg" / "run.py",
        "import torch\nfrom .models.net import make_features\nimport pkg\n"
        "model = torch.nn.Linear(4, 2).cuda()\n"
        "a = make_features(2)\nmodel(a)\npkg.score(model, torch.ones(2, 4), None)\n",
    )
    _write(
        root / "scripts" / "go.py",
        "import torch\nfrom pkg.helpers import score\n"
        "model = torch.nn.Linear(4, 2).cuda()\nscore(model, torch.ones(2, 4), None)\n",
    )
    assert _found(_lint(root)) == [
        ("go.py", "DEV005", 4, 14),
        ("run.py", "DEV005", 6, 7),
        ("run.py", "DEV005", 7, 18),
    ]


def test_a_module_of_a_project_base_class_and_its_members_parameters(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    _write(root / "pyproject.toml", "")
    _write(root / "pkg" / "__init__.py", "")
    _write(
        root / "pkg" / "base.py",
        "from torch import nn\nclass Model(nn.Module):\n    pass\n",
    )
    _write(
        root / "pkg" / "crf.py",
        "import torch\nfrom torch import nn\nclass CRF(nn.Module):\n    def __init__(self, n):\n"
        "        super().__init__()\n        self.transitions = nn.Parameter(torch.randn(n, n))\n",
    )
    _write(
        root / "pkg" / "tagger.py",
        "import torch\nfrom .base import Model\nfrom .crf import CRF\nclass Tagger(Model):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.crf = CRF(n)\n"
        "        self.to('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "    def scores(self):\n        return self.crf.transitions.detach().numpy()\n"
        "    def forward(self, x):\n        return x + torch.ones(3)\n",
    )
    resolver = ConfigResolver(RuleSelection(("DEV005", "DEV007")))
    found = _found(lint_paths([root], resolver, False))
    assert found == [("tagger.py", "DEV007", 10, 16), ("tagger.py", "DEV005", 12, 20)]


def test_summaries_say_what_other_files_need() -> None:
    summary = summarise(parse_quietly(MODEL + UTILS))
    assert summary["classes"]["Net"]["module"] is True
    assert summary["classes"]["Net"]["cpu_attributes"] == ["scale"]
    assert summary["classes"]["Net"]["defines_to"] is False
    assert summary["classes"]["Net"]["tensors"] == {}
    assert summary["functions"]["make_features"]["returns"] == "cpu_tensor"
    assert summary["functions"]["score"]["feeds"] == [["features", "net"]]
    assert summary["functions"]["safe_score"]["feeds"] == []  # moved before the call


def test_a_view_resolves_only_project_files(project: Path) -> None:
    train = str(project / "train.py")
    view = ProjectView.of(train, parse_quietly(TRAIN))
    assert view is not None
    found = view.lookup("Net")
    assert found is not None and found.kind == "class" and view.is_module_class(found)
    assert view.lookup("torch.zeros") is None
    assert view.lookup("missing") is None


def test_an_unchanged_project_relints_from_the_cache(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    cache_dir = tmp_path / "cache"
    first = _found(_lint(project, cache_dir))
    assert sorted(linted) == ["model.py", "train.py", "utils.py"]
    linted.clear()
    assert _found(_lint(project, cache_dir)) == first
    assert linted == []


def test_a_changed_summary_relints_its_dependents_only(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    cache_dir = tmp_path / "cache"
    _lint(project, cache_dir)
    linted.clear()
    # `make_features` now returns a tensor on the device: `train.py` must be analysed again.
    _write(project / "model.py", MODEL.replace("torch.randn(n, 4)", "torch.randn(n, 4).cuda()"))
    summary = _lint(project, cache_dir)
    assert sorted(linted) == ["model.py", "train.py"]
    assert _found(summary) == [("train.py", "DEV005", 10, 18)]


def test_an_edit_that_keeps_the_summary_relints_the_file_alone(
    project: Path, tmp_path: Path, linted: list[str]
) -> None:
    cache_dir = tmp_path / "cache"
    first = _found(_lint(project, cache_dir))
    linted.clear()
    _write(project / "utils.py", "# scoring helpers\n" + UTILS)
    assert _found(_lint(project, cache_dir)) == first
    assert linted == ["utils.py"]


def test_the_command_line_reads_other_files(project: Path) -> None:
    completed = run_cli("check", "--select", "DEV005", ".", cwd=project)
    assert completed.returncode == 1
    assert [(path, row, code) for path, row, _, code in findings_of(completed.stdout)] == [
        ("train.py", 10, "DEV005"),
        ("train.py", 13, "DEV005"),
    ]


INFER = """\
import torch
from model import Net

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
labels = torch.zeros(3)
x = torch.randn(3, 4, device=device)
out = net(x) * net.scale
"""


def test_a_plain_attribute_of_an_imported_module_stays_behind(project: Path) -> None:
    _write(project / "infer.py", INFER)
    summary = _lint(project)
    assert ("infer.py", "DEV006", 8, 7) in _found(summary)
    message = next(f.message for f in summary.findings if Path(f.path).name == "infer.py")
    assert "`net.scale` is on the CPU (a plain tensor attribute that `Net.__init__` makes" in (
        message
    )


@pytest.mark.parametrize(
    "change",
    [
        # a buffer moves with the module
        ("self.scale = torch.ones(2)", 'self.register_buffer("scale", torch.ones(2))'),
        # a class with its own `to()` may move its attributes
        (
            "    def forward(self, x):",
            "    def to(self, *a):\n        return self\n\n    def forward(self, x):",
        ),
    ],
)
def test_an_attribute_the_module_moves_is_not_reported(
    project: Path, change: tuple[str, str]
) -> None:
    _write(project / "model.py", MODEL.replace(*change))
    _write(project / "infer.py", INFER)
    assert [f for f in _found(_lint(project)) if f[0] == "infer.py"] == []


def test_a_module_imported_under_an_alias(tmp_path: Path) -> None:
    root = tmp_path / "aliased"
    _write(root / "pyproject.toml", "")
    _write(root / "pkg" / "__init__.py", "")
    _write(root / "pkg" / "helpers.py", UTILS)
    _write(
        root / "main.py",
        "import torch\nimport pkg.helpers as h\n"
        "model = torch.nn.Linear(4, 2).cuda()\nh.score(model, torch.ones(2, 4), None)\n"
        "h.score(model, torch.ones(2, 4).cuda(), None)\n",
    )
    assert _found(_lint(root)) == [("main.py", "DEV005", 4, 16)]


def test_a_file_importing_only_libraries_has_no_view(tmp_path: Path) -> None:
    tree = parse_quietly("import torch\nimport numpy as np\nfrom typing import Optional\n")
    assert ProjectView.of(str(tmp_path / "x.py"), tree) is None


MIXING = """\
import torch


def blend(a, b, weight=0.5):
    return a * weight + b * (1 - weight)


def shifted(signal, kernel):
    flipped = kernel.flip(-1)
    return torch.cat([signal, flipped.unsqueeze(0)]).sum(0)


def project(x, w):
    return x.mm(w)


def aligned(a, b):
    return a + b.to(a.device)


def rebound(a, b):
    b = make(b)
    return a + b


def db_to_amplitude(db):
    return 10 ** (db.float() / 20)


def pair(a, b):
    return a, b


def total(x):
    return x.sum()


def first(x):
    return x[0]


def rows(x):
    k = x[:, 1:]
    j = k.float()
    i = j.abs()
    return i


def same(a, b):
    return a is b or a in b


def chunks(x):
    yield x.float()


def add3(a, b, c):
    return a + b + c


def convolve(waveform, kernel, stride=1):
    waveform = waveform.transpose(2, 1)
    waveform = torch.nn.functional.pad(input=waveform, pad=(1, 1))
    return torch.nn.functional.conv1d(input=waveform, weight=kernel, stride=stride)


def padded(waveform, kernel):
    waveform = torch.nn.functional.pad(waveform, (1, 1))
    kernel = torch.cat([kernel, torch.zeros(3)])
    return torch.nn.functional.conv1d(waveform, kernel)


def gain(x, w):
    x = torch.sum(x)
    return w * x


def rotated(waveform, kernel, r=1):
    kernel = kernel.transpose(2, 1)
    head = kernel[..., r:]
    kernel = torch.cat((head, torch.zeros(1, 1, 3), kernel[..., :r]), dim=-1)
    return torch.nn.functional.conv1d(input=waveform, weight=kernel)
"""


def test_summaries_name_the_parameters_one_operation_combines() -> None:
    functions = summarise(parse_quietly(MIXING))["functions"]
    # `weight` may be a tensor too: a call passing numbers for it is never a CPU tensor
    assert functions["blend"]["mixes"] == [["a", "b", 5], ["a", "weight", 5], ["b", "weight", 5]]
    assert functions["shifted"]["mixes"] == [["kernel", "signal", 10]]  # through a local
    assert functions["project"]["mixes"] == [["w", "x", 14]]
    assert functions["aligned"]["mixes"] == []  # it reads a device: it may align them
    assert functions["rebound"]["mixes"] == []  # `b` is no longer the caller's
    assert functions["db_to_amplitude"]["follows"] == "db"
    assert functions["blend"]["follows"] is None  # on the devices of three parameters
    assert functions["aligned"]["follows"] is None  # it moves a tensor
    assert functions["pair"]["follows"] is None  # a tuple
    # a reduction or an item may be 0-dim, which mixes with any device: no evidence
    assert functions["total"]["follows"] is None
    assert functions["first"]["follows"] is None
    assert functions["rows"]["follows"] == "x"  # slices, through three locals
    assert functions["same"]["mixes"] == []  # identity and membership compare no elements
    assert functions["chunks"]["follows"] is None  # a generator
    # a functional layer's tensors, by keyword too, through rebindings that keep a device
    assert functions["convolve"]["mixes"] == [["kernel", "waveform", 64]]
    # joined with a CPU tensor, `kernel` stays where it was or the join fails: either way a
    # caller's kernel on another device than its waveform fails
    assert functions["padded"]["mixes"] == [["kernel", "waveform", 70]]
    assert functions["rotated"]["mixes"] == [["kernel", "waveform", 82]]  # through a local
    assert functions["gain"]["mixes"] == []  # a sum may be 0-dim: it mixes with any device


def _lint_beside_mixing(tmp_path: Path, name: str, text: str) -> RunSummary:
    """Lint a project of `mixing.py` (the helpers above) and the module ``name``."""
    root = tmp_path / "project"
    _write(root / "pyproject.toml", "")
    _write(root / "mixing.py", MIXING)
    _write(root / name, text)
    return _lint(root)


def test_a_helper_of_another_file_combining_a_cpu_tensor_with_the_input(tmp_path: Path) -> None:
    summary = _lint_beside_mixing(
        tmp_path,
        "layers.py",
        "import torch\nfrom torch import nn\nfrom mixing import aligned, blend, shifted\n\n\n"
        "class Noisy(nn.Module):\n    def forward(self, x):\n"
        "        y = blend(x, torch.randn(x.shape))\n"
        "        y = aligned(y, torch.randn(x.shape))\n"
        "        mask = torch.ones(3)\n"
        "        return shifted(torch.zeros(3), mask) + y\n",
    )
    assert _found(summary) == [("layers.py", "DEV005", 8, 22)]
    assert summary.findings[0].message.startswith(
        "`torch.randn(x.shape)` creates a tensor on the CPU, but `blend` of mixing.py, called "
        "at line 8, combines it with a tensor on the module's device (input `x`) at line 5 of "
        "mixing.py: create it with `device=`"
    )


BESIDE_MIXING = {
    "a helper returning on its argument's device": (
        "noise.py",
        "import torch\nfrom torch import nn\nfrom mixing import db_to_amplitude\n\n\n"
        "class AddNoise(nn.Module):\n    def forward(self, waveform):\n"
        "        snr = torch.rand(waveform.shape[0], 1)\n"
        "        factor = 1 / (db_to_amplitude(snr) + 1)\n"
        "        gain = db_to_amplitude(torch.rand(1, device=waveform.device))\n"
        "        return waveform * factor * gain\n",
        ("DEV005", 8, 15),
        "combined with `waveform` at line 11",
    ),
    "a filter built in a loop, on the CPU where the first iteration passes it": (
        "drop_loop.py",
        "import torch\nfrom torch import nn\nfrom mixing import convolve\n\n\n"
        "class DropFreq(nn.Module):\n    def forward(self, waveforms, frequencies):\n"
        "        drop = torch.zeros(1, 101, 1)\n        for frequency in frequencies:\n"
        "            notch = torch.ones(1, 3, 1).to(waveforms.device)\n"
        "            drop = convolve(drop, notch)\n"
        "        return convolve(waveforms, drop)\n",
        ("DEV005", 8, 16),
        "called at line 11",
    ),
    "a functional layer given a CPU filter": (
        "drop.py",
        "import torch\nfrom torch import nn\nfrom mixing import convolve\n\n\n"
        "class DropFreq(nn.Module):\n    def forward(self, waveforms):\n"
        "        notch = torch.ones(1, 3, 1).to(waveforms.device)\n"
        "        return convolve(torch.zeros(1, 101, 1), notch)\n",
        ("DEV005", 9, 25),
        "`convolve` of mixing.py",
    ),
}


@pytest.mark.parametrize("case", sorted(BESIDE_MIXING))
def test_a_helper_of_another_file_meets_a_cpu_tensor(tmp_path: Path, case: str) -> None:
    name, text, (code, row, column), fragment = BESIDE_MIXING[case]
    summary = _lint_beside_mixing(tmp_path, name, text)
    assert _found(summary) == [(name, code, row, column)]
    assert fragment in summary.findings[0].message


def test_an_argument_meeting_two_others_is_reported_once(tmp_path: Path) -> None:
    summary = _lint_beside_mixing(
        tmp_path,
        "sums.py",
        "import numpy as np\nimport torch\nfrom torch import nn\nfrom mixing import add3\n\n\n"
        "class Sum(nn.Module):\n    def forward(self, x, y):\n"
        "        counts = torch.from_numpy(np.zeros(3))\n        return add3(counts, x, y)\n",
    )
    assert _found(summary) == [("sums.py", "DEV005", 10, 21)]


GRIDS = """\
import torch


def base_grid(height, width, device=None):
    xs = torch.linspace(-1, 1, width, device=device)
    ys = torch.linspace(-1, 1, height, device=device)
    return torch.stack(torch.meshgrid([xs, ys], indexing="ij"), dim=-1)


def moved_grid(height, width, device=None):
    return torch.zeros(height, width, 2).to(device)


def scaled(x, factor, device=None):
    return x * torch.tensor(factor, device=device)


def count(n, device=None):
    return torch.zeros(n, device=device).numel()


def first(n, device=None):
    return torch.zeros(n, device=device)[0]
"""

WARP = """\
import torch
from .grids import base_grid, count, first, moved_grid, scaled


def warp(flow: torch.Tensor) -> torch.Tensor:
    return base_grid(4, 4) + flow


def warp_given(flow: torch.Tensor) -> torch.Tensor:
    return base_grid(4, 4, flow.device) + flow


def warp_moved(flow: torch.Tensor) -> torch.Tensor:
    return moved_grid(4, 4) + flow


def others(flow: torch.Tensor) -> torch.Tensor:
    return flow + scaled(flow, 2.0) + count(3) + first(3)


def on_default(flow: torch.Tensor) -> torch.Tensor:
    with torch.device("cuda"):
        return base_grid(4, 4) + flow
"""


def test_an_imported_helper_left_without_its_device_makes_a_cpu_tensor(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "grids.py").write_text(GRIDS)
    (package / "warp.py").write_text(WARP)
    summary = _lint(tmp_path)
    # The file shows no CPU source of its own: the imported helper is its only one. A helper
    # that moves its result (`.to(device)`) is no such helper.
    assert _found(summary) == [("warp.py", "DEV005", 6, 12)]
    assert "whose `device` this call leaves at None" in summary.findings[0].message
    facts = summarise(parse_quietly(GRIDS))["functions"]
    assert facts["base_grid"]["cpu_unless"] == "device"
    for helper in ("moved_grid", "scaled", "count", "first"):
        assert facts[helper]["cpu_unless"] is None, helper  # not only its factories' tensors
