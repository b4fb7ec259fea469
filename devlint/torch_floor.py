"""The lowest torch version a project supports, read from its own metadata.

As Ruff reads `requires-python`, devlint reads the torch requirement: `[project]
dependencies` and optional dependencies in pyproject.toml, then `requirements*.txt`,
then `install_requires` in setup.cfg; a `torch-version` in `[tool.devlint]`
overrides them. Where nothing says, the floor is unknown and fixes assume an old
torch. Specifiers are parsed simply (`>=`, `==`, `~=`, `>`, comma lists), since
`packaging` is not a dependency of devlint.
"""

from __future__ import annotations

import configparser
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Version = tuple[int, int]

# `torch`, `torch[extra]`, then the specifiers up to an environment marker or a comment.
_REQUIREMENT = re.compile(
    r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<specifiers>[<>=!~][^;#]*)?(?:[;#].*)?$", re.IGNORECASE
)
_SPECIFIER = re.compile(r"^\s*(?P<operator>~=|==|>=|>|<=|<|!=|===)\s*(?P<version>[^\s,]+)\s*$")
_VERSION = re.compile(r"^v?(?P<major>\d+)(?:\.(?P<minor>\d+))?")

# The setting that names the CUDA-or-CPU choice, for users who want nothing but CUDA.
ANY_ACCELERATOR = "any"
CUDA_ONLY = "cuda"
ACCELERATOR_CHOICES = (ANY_ACCELERATOR, CUDA_ONLY)


@dataclass(frozen=True)
class TorchFloor:
    """The lowest torch the project supports, and where that was read ("pyproject.toml:12")."""

    version: Optional[Version] = None
    source: str = ""

    @property
    def known(self) -> bool:
        return self.version is not None

    def allows(self, version: Version) -> bool:
        """Whether every torch the project supports has ``version``'s APIs."""
        return self.version is not None and self.version >= version

    def __str__(self) -> str:
        if self.version is None:
            return "unknown (fixes assume an old torch)"
        shown = ".".join(map(str, self.version))
        return f"{shown} (from {self.source})" if self.source else shown


UNKNOWN_FLOOR = TorchFloor()


def parse_version(text: str) -> Optional[Version]:
    """``"2.4"``, ``"2.4.1"``, ``"2"`` as (major, minor); None for anything else."""
    found = _VERSION.match(text.strip())
    if found is None:
        return None
    return int(found["major"]), int(found["minor"] or 0)


def floor_of_specifiers(specifiers: str) -> Optional[Version]:
    """The lowest version a comma-separated specifier list allows, where it has a lower bound."""
    floors: list[Version] = []
    for part in specifiers.split(","):
        if not part.strip():
            continue
        found = _SPECIFIER.match(part)
        if found is None:
            return None  # not understood: say nothing rather than guess
        operator, version = found["operator"], parse_version(found["version"])
        if version is None:
            return None
        if operator in ("~=", "==", "===", ">="):
            floors.append(version)
        elif operator == ">":
            floors.append(version)  # above 2.5.0 is 2.5.1 at least: 2.5's APIs are there
    return max(floors) if floors else None


def floor_of_requirement(line: str) -> Optional[Version]:
    """The floor a requirement line gives torch; None when it is not about torch or has none."""
    found = _REQUIREMENT.match(line)
    if found is None or not found["specifiers"]:
        return None
    return floor_of_specifiers(found["specifiers"])


def _line_of(text: str, needle: str) -> int:
    """The 1-based line where ``needle`` first appears in ``text`` (1 when it does not)."""
    index = text.find(needle)
    return 1 if index < 0 else text.count("\n", 0, index) + 1


def _first_floor(requirements: list[str], text: str, name: str) -> Optional[TorchFloor]:
    for requirement in requirements:
        version = floor_of_requirement(requirement)
        if version is not None:
            return TorchFloor(version, f"{name}:{_line_of(text, requirement)}")
    return None


def _from_pyproject(path: Path) -> Optional[TorchFloor]:
    try:
        text = path.read_text(encoding="utf-8")
        project: Any = tomllib.loads(text).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if not isinstance(project, dict):
        return None
    requirements = [r for r in project.get("dependencies", []) if isinstance(r, str)]
    optional = project.get("optional-dependencies", {})
    if isinstance(optional, dict):
        for group in optional.values():
            if isinstance(group, list):
                requirements += [r for r in group if isinstance(r, str)]
    return _first_floor(requirements, text, path.name)


def _from_requirements(path: Path) -> Optional[TorchFloor]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for number, line in enumerate(text.splitlines(), 1):
        version = floor_of_requirement(line)
        if version is not None:
            return TorchFloor(version, f"{path.name}:{number}")
    return None


def _from_setup_cfg(path: Path) -> Optional[TorchFloor]:
    parser = configparser.ConfigParser()
    try:
        text = path.read_text(encoding="utf-8")
        parser.read_string(text)
        listed = parser.get("options", "install_requires", fallback="")
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    requirements = [line.strip() for line in listed.splitlines() if line.strip()]
    return _first_floor(requirements, text, path.name)


def read_torch_floor(folder: Path) -> TorchFloor:
    """The floor declared in ``folder``'s metadata: pyproject.toml, then requirements*.txt, then
    setup.cfg; the first that names torch with a lower bound wins."""
    candidates: list[Optional[TorchFloor]] = []
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        candidates.append(_from_pyproject(pyproject))
    for requirements in sorted(folder.glob("requirements*.txt")):
        candidates.append(_from_requirements(requirements))
    setup_cfg = folder / "setup.cfg"
    if setup_cfg.is_file():
        candidates.append(_from_setup_cfg(setup_cfg))
    return next((floor for floor in candidates if floor is not None), UNKNOWN_FLOOR)


def has_metadata(folder: Path) -> bool:
    """Whether ``folder`` is a project root by its metadata files."""
    return (
        (folder / "pyproject.toml").is_file()
        or (folder / "setup.cfg").is_file()
        or any(folder.glob("requirements*.txt"))
    )


def project_torch_floor(folder: Path) -> TorchFloor:
    """The floor of the nearest project above ``folder`` (the first folder with metadata)."""
    for candidate in (folder, *folder.parents):
        if has_metadata(candidate):
            return read_torch_floor(candidate)
    return UNKNOWN_FLOOR


@dataclass(frozen=True)
class DeviceStyle:
    """How a fix writes a device: the project's torch floor and the accelerators it targets."""

    floor: TorchFloor = UNKNOWN_FLOOR
    accelerators: str = ANY_ACCELERATOR

    @property
    def key(self) -> str:
        """A short text for cache keys: fixes differ by style."""
        version = "?" if self.floor.version is None else ".".join(map(str, self.floor.version))
        return f"torch{version}-{self.accelerators}"


DEFAULT_STYLE = DeviceStyle()
