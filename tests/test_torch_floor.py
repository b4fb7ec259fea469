"""The project's torch floor: read from its metadata, overridden by `torch-version`."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.config import ConfigError, ConfigResolver, RuleSelection, Settings
from devlint.torch_floor import (
    CUDA_ONLY,
    TorchFloor,
    floor_of_requirement,
    project_torch_floor,
    read_torch_floor,
)
from tests.helpers import run_cli, write


@pytest.mark.parametrize(
    ("line", "floor"),
    [
        ("torch>=2.7", (2, 7)),
        ("torch >= 2.0.1", (2, 0)),
        ("torch==2.4.1+cu121", (2, 4)),
        ("torch~=2.6", (2, 6)),
        ("torch>2.5", (2, 5)),
        ("torch>=1.13,<3", (1, 13)),
        ("torch<3,>=2.2", (2, 2)),
        ("torch[opt-einsum]>=2.1; python_version >= '3.9'", (2, 1)),
        ("torch>=2.3  # the CUDA 12 wheels", (2, 3)),
        ("Torch>=2.1", (2, 1)),
        ("torch", None),
        ("torch<3", None),
        ("torch!=2.0", None),
        ("torchvision>=0.15", None),
        ("torch @ https://example.org/torch.whl", None),
        ("-r base.txt", None),
    ],
)
def test_floor_of_a_requirement(line: str, floor: tuple[int, int] | None) -> None:
    assert floor_of_requirement(line) == floor


def test_pyproject_dependencies_name_the_floor_and_its_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = [\n  "numpy",\n  "torch>=2.7",\n]\n'
    )
    assert read_torch_floor(tmp_path) == TorchFloor((2, 7), "pyproject.toml:5")


def test_optional_dependencies_count(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["numpy"]\n'
        '[project.optional-dependencies]\ngpu = ["torch>=2.1"]\n'
    )
    assert read_torch_floor(tmp_path) == TorchFloor((2, 1), "pyproject.toml:5")


def test_requirements_then_setup_cfg(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    torch>=1.12\n")
    assert read_torch_floor(tmp_path) == TorchFloor((1, 12), "setup.cfg:3")
    (tmp_path / "requirements-dev.txt").write_text("pytest\ntorch>=2.6\n")
    assert read_torch_floor(tmp_path) == TorchFloor((2, 6), "requirements-dev.txt:2")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch"]\n')
    # pyproject.toml names torch without a bound: the next source says more
    assert read_torch_floor(tmp_path).version == (2, 6)


def test_nothing_said_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    floor = project_torch_floor(tmp_path / "src")
    assert floor.version is None and not floor.allows((1, 0))
    assert "unknown" in str(floor)


def test_broken_metadata_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\n")
    (tmp_path / "setup.cfg").write_text("not ini at all [")
    assert read_torch_floor(tmp_path).version is None


def _settings(tmp_path: Path, pyproject: str) -> Settings:
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "pkg").mkdir()
    return ConfigResolver(RuleSelection()).settings_for(tmp_path / "pkg" / "a.py")


def test_settings_carry_the_floor_without_a_devlint_table(tmp_path: Path) -> None:
    settings = _settings(tmp_path, '[project]\nname = "x"\ndependencies = ["torch>=2.0"]\n')
    assert settings.torch_floor == TorchFloor((2, 0), "pyproject.toml:3")
    assert settings.device_style.floor.version == (2, 0)


def test_torch_version_setting_overrides_and_accelerators(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        '[project]\nname = "x"\ndependencies = ["torch>=2.0"]\n'
        '[tool.devlint]\ntorch-version = "2.7"\naccelerators = "cuda"\n',
    )
    assert settings.torch_floor.version == (2, 7)
    assert "torch-version" in settings.torch_floor.source
    assert settings.accelerators == CUDA_ONLY


@pytest.mark.parametrize(
    "table", ['torch-version = "latest"', "torch-version = 2.4", 'accelerators = "mps"']
)
def test_bad_device_settings_are_refused(tmp_path: Path, table: str) -> None:
    with pytest.raises(ConfigError):
        _settings(tmp_path, f"[tool.devlint]\n{table}\n")


def test_show_settings_names_the_floor_and_where_it_was_read(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "demo"\ndependencies = [\n  "torch>=2.7,<3",\n]\n'
    write(tmp_path, {"pyproject.toml": pyproject, "train.py": "import torch\n"})
    shown = run_cli("--show-settings", "train.py", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert 'torch-floor = "2.7 (from pyproject.toml:4)"' in shown.stdout
