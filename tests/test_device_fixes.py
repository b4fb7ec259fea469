"""DEV001 fixes that fix: correct on a CPU-only machine, safe only where the device is checked,
isort-clean, and following the project's torch floor (#16, #20)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.diagnostics import PARSE_ERROR_CODE, Applicability
from devlint.engine import RuleSet, lint_source
from devlint.fixing import fix_source
from devlint.torch_floor import CUDA_ONLY, DEFAULT_STYLE, DeviceStyle, TorchFloor
from tests.helpers import findings_of, run_cli, write

RULES = RuleSet({"DEV001", PARSE_ERROR_CODE})
MODULE_DEVICE = """\
import torch
from torch import nn

device = "cuda"
model = nn.Linear(2, 2).cuda()
x = torch.zeros(3, 2, device="cuda")
print(model(x.to(device)).sum().item())
"""
NO_DEVICE = """\
import torch
from torch import nn

model = nn.Linear(2, 2).cuda()
x = torch.randn(3, 2).cuda()
print(model(x).sum().item())
"""
TORCH_DEVICE = """\
import torch

device = torch.device("cuda")
print(torch.ones(2).cuda() + torch.ones(2, device=device))
"""
CHECKED_27 = (
    'torch.accelerator.current_accelerator(check_available=True)\n    or torch.device("cpu")'
)
GUARD_26 = (
    "torch.accelerator.current_accelerator()\n    if torch.accelerator.is_available()\n"
    '    else torch.device("cpu")'
)
CHAIN = (
    '"cuda"\n    if torch.cuda.is_available()\n    else "mps"\n'
    '    if torch.backends.mps.is_available()\n    else "cpu"'
)
CUDA_OR_CPU = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
# What each floor writes for a script with no device of its own.
INSERTED = {
    "torch>=2.7": f"device = (\n    {CHECKED_27}\n)\n",
    "torch>=2.6": f"device = (\n    {GUARD_26}\n)\n",
    "torch>=2.0": f"device = torch.device(\n    {CHAIN}\n)\n",
    "": f"device = {CUDA_OR_CPU}\n",
    "torch>=2.7 cuda-only": f"device = {CUDA_OR_CPU}\n",
}


def _pyproject(floor: str) -> str:
    requirement, _, setting = floor.partition(" ")
    text = '[project]\nname = "demo"\nversion = "0"\n'
    if requirement:
        text += f'dependencies = ["numpy", "{requirement}"]\n'
    if setting:
        text += '[tool.devlint]\naccelerators = "cuda"\n'
    return text


@pytest.fixture(scope="module", params=list(INSERTED))
def fixed_project(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    floor: str = request.param
    root = tmp_path_factory.mktemp("project")
    write(
        root,
        {
            "pyproject.toml": _pyproject(floor),
            "module_device.py": MODULE_DEVICE,
            "no_device.py": NO_DEVICE,
            "torch_device.py": TORCH_DEVICE,
        },
    )
    result = run_cli(".", "--fix", "--unsafe-fixes", "--no-cache", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not findings_of(result.stdout)
    return floor, root


def test_the_inserted_device_follows_the_floor(fixed_project: tuple[str, Path]) -> None:
    floor, root = fixed_project
    text = (root / "no_device.py").read_text()
    expected = NO_DEVICE.replace("\n\nmodel", "\n\n" + INSERTED[floor] + "\nmodel")
    assert text == expected.replace(".cuda()", ".to(device)")
    assert ("torch.accelerator" in text) == (floor in ("torch>=2.7", "torch>=2.6"))
    if floor != "torch>=2.7":
        assert "check_available" not in text  # torch 2.6 has no such argument
    assert ("mps" in text) == (floor == "torch>=2.0")


def test_a_module_cuda_device_is_guarded_where_it_is_defined(
    fixed_project: tuple[str, Path],
) -> None:
    floor, root = fixed_project
    text = (root / "module_device.py").read_text()
    assert "torch_device" not in text and text.count("device = ") == 1
    assert 'device = "cuda"\n' not in text
    assert "nn.Linear(2, 2).to(device)" in text and "device=device" in text
    if floor == "torch>=2.7":
        # a string stays a string: the accelerator's type
        assert "torch.accelerator.current_accelerator().type" in text
    defined = (root / "torch_device.py").read_text()
    assert 'torch.device("cuda")' not in defined and "torch.ones(2).to(device)" in defined


def test_fixed_scripts_run_on_a_cpu_only_torch_without_warnings(
    fixed_project: tuple[str, Path],
) -> None:
    _, root = fixed_project
    # One interpreter for the three scripts: torch is imported once.
    names = ["module_device.py", "no_device.py", "torch_device.py"]
    script = f"import runpy\nfor name in {names!r}:\n    runpy.run_path(name, run_name='__main__')"
    run = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_fixed_files_pass_ruff_where_the_originals_did(fixed_project: tuple[str, Path]) -> None:
    _, root = fixed_project
    originals = root.parent / (root.name + "-originals")
    write(
        originals,
        {
            "module_device.py": MODULE_DEVICE,
            "no_device.py": NO_DEVICE,
            "torch_device.py": TORCH_DEVICE,
        },
    )
    rules = ["--select", "I,E,W,F", "--isolated", "--no-cache"]
    before = subprocess.run(["ruff", "check", *rules, "."], cwd=originals, capture_output=True)
    assert before.returncode == 0, before.stdout  # the originals are clean
    names = ["module_device.py", "no_device.py", "torch_device.py"]
    after = subprocess.run(
        ["ruff", "check", *rules, *names], cwd=root, capture_output=True, text=True
    )
    assert after.returncode == 0, after.stdout


def _fix(source: str, unsafe: bool, style: DeviceStyle = DEFAULT_STYLE) -> str:
    outcome = fix_source("example.py", source.encode(), RuleSet(RULES.codes, style=style), unsafe)
    assert outcome.error is None
    return outcome.fixed


def _applicability(source: str) -> list[Applicability]:
    result = lint_source("example.py", source.encode(), RULES)
    return [finding.fix.applicability for finding in result.findings if finding.fix]


@pytest.mark.parametrize(
    "source",
    [
        'import torch\ndef run(x, device="cpu"):\n    return x.cuda()\n',
        "import torch\ndef run(x, device):\n    return x.cuda()\n",
        "import torch\ndevice = torch.device(args.device)\nx = x.cuda()\n",
        "import torch\nclass T:\n    def __init__(self, device):\n        self.device = device\n"
        "    def step(self, x):\n        return x.cuda()\n",
    ],
)
def test_a_device_nothing_checked_is_reused_only_as_an_unsafe_fix(source: str) -> None:
    assert _applicability(source) == [Applicability.UNSAFE]
    assert _fix(source, unsafe=False) == source
    assert ".to(device)" in _fix(source, unsafe=True) or ".to(self.device)" in _fix(source, True)


@pytest.mark.parametrize(
    "definition",
    [
        f"device = {CUDA_OR_CPU}",
        'device = "cuda" if torch.cuda.is_available() else "cpu"',
        "use_cuda = torch.cuda.is_available()\n"
        "device = torch.device('cuda' if use_cuda else 'cpu')",
        "device = torch.accelerator.current_accelerator(check_available=True)"
        ' or torch.device("cpu")',
        "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
        'else torch.device("cpu")',
    ],
)
def test_a_checked_device_is_reused_as_a_safe_fix(definition: str) -> None:
    source = f"import torch\n{definition}\nx = x.cuda()\n"
    assert _fix(source, unsafe=False) == source.replace("x.cuda()", "x.to(device)")


@pytest.mark.parametrize("value", ["3", "None", "'cpu'"])
def test_a_name_holding_no_device_is_not_reused(value: str) -> None:
    source = f"import torch\n\ndevice = {value}\nx = x.cuda()\n"
    fixed = _fix(source, unsafe=True)
    assert "x.to(torch_device)" in fixed and f"device = {value}\n" in fixed


def test_a_module_cuda_device_is_a_safe_fix_once_guarded() -> None:
    source = 'import torch\n\ndevice = "cuda"\nx = x.cuda()\n'
    assert _applicability(source) == [Applicability.SAFE]
    assert _fix(source, unsafe=False) == (
        'import torch\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "x = x.to(device)\n"
    )


def test_float64_keeps_the_fix_off_mps() -> None:
    style = DeviceStyle(TorchFloor((2, 7), "pyproject.toml:3"))
    source = "import torch\n\nx = torch.zeros(2, dtype=torch.float64).cuda()\n"
    assert CUDA_OR_CPU in _fix(source, unsafe=True, style=style)
    plain = "import torch\n\nx = torch.zeros(2).cuda()\n"
    assert "torch.accelerator" in _fix(plain, unsafe=True, style=style)
    assert CUDA_OR_CPU in _fix(plain, True, DeviceStyle(style.floor, CUDA_ONLY))


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        ("from torch import nn\n", "import torch\nfrom torch import nn\n"),
        (
            "import numpy\nfrom torch import nn\n",
            "import numpy\nimport torch\nfrom torch import nn\n",
        ),
        (
            "import os\n\nimport numpy as np\nfrom torch import nn\n",
            "import os\n\nimport numpy as np\nimport torch\nfrom torch import nn\n",
        ),
        (
            "import numpy\nimport yaml\nfrom torch import nn\n",
            "import numpy\nimport torch\nimport yaml\nfrom torch import nn\n",
        ),
    ],
)
def test_import_torch_goes_where_isort_puts_it(imports: str, expected: str) -> None:
    fixed = _fix(imports + "net = nn.Linear(2, 2).cuda()\n", unsafe=True)
    assert fixed == expected + f"\ndevice = {CUDA_OR_CPU}\nnet = nn.Linear(2, 2).to(device)\n"


def test_the_memory_fix_stays_in_torch_cuda_whatever_the_floor() -> None:
    torch = pytest.importorskip("torch")
    rules = RuleSet({"DEV002", PARSE_ERROR_CODE}, style=DeviceStyle(TorchFloor((2, 13), "")))
    source = b"import torch\nprint(torch.cuda.memory_cached())\n"
    outcome = fix_source("m.py", source, rules, unsafe=True)
    assert outcome.fixed == "import torch\nprint(torch.cuda.memory_reserved())\n"
    # why: the device-agnostic one raises where no accelerator is, torch.cuda's returns 0
    assert torch.cuda.memory_reserved() == 0
    if not torch.accelerator.is_available():
        with pytest.raises(RuntimeError, match="accelerator"):
            torch.accelerator.memory_reserved()


def test_the_message_suggests_the_floors_device(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.7"]\n',
            "a.py": "import torch\nx = torch.zeros(2).cuda()\n",
        },
    )
    result = run_cli("a.py", "--no-cache", cwd=tmp_path)
    assert result.stdout.startswith(
        "a.py:2:5: DEV001 `torch.zeros(2).cuda()` fails on a machine without CUDA and no "
        "availability check guards it; move to a chosen device instead: device = "
        'torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")\n'
    ), result.stdout


def test_the_definition_follows_an_import_of_torch_below_the_docstring() -> None:
    # PyTorch's own sparse/_triton_ops_meta.py: a docstring, `__all__`, then the imports.
    source = (
        '"""Doc."""\n\n__all__ = ["f"]\n\nimport os\n\nimport torch\n\n\n'
        'def f():\n    return torch.zeros(2, device="cuda")\n'
    )
    fixed = _fix(source, unsafe=True)
    assert fixed == source.replace(
        "import torch\n", f"import torch\n\ndevice = {CUDA_OR_CPU}\n"
    ).replace('device="cuda"', "device=device")


def test_a_star_import_lets_the_rules_read_torch_but_no_fix_write_it() -> None:
    # `from utils import *` may or may not export torch: findings read `torch.X` as torch's,
    # a fix never writes `torch` into a file that does not import it itself.
    source = b'from utils import *\nmodel = build().to("cuda:0")\n'
    outcome = fix_source("m.py", source, RuleSet({"DEV001", "DEV008"}), unsafe=True)
    assert outcome.applied == 0
    assert [finding.code for finding in outcome.result.findings] == ["DEV001"]
    loads = lint_source(
        "m.py", b"from utils import *\nstate = torch.load(path)\n", RuleSet({"DEV008"})
    )
    assert [finding.code for finding in loads.findings] == ["DEV008"]
