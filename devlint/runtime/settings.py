"""``[tool.devlint.confirm]``: how the project's entry points are run.

```toml
[tool.devlint.confirm]
args = {"train.py" = ["--epochs", "1"]}   # a script's arguments, by its path from the root
pythonpath = ["lib"]                      # more source roots, as pytest's `pythonpath`
```

The source roots put first on ``sys.path`` follow pytest's ``rootdir``/``pythonpath``: the
project's root, its ``src/`` folder (a src layout), ``pythonpath`` in
``[tool.pytest.ini_options]``, and the paths configured here.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devlint.config import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class RunSettings:
    args: dict[str, list[str]] = field(default_factory=dict)  # script path -> its arguments
    paths: list[str] = field(default_factory=list)  # source roots, relative to the root


def _strings(value: Any, where: str, path: Path) -> list[str]:
    if isinstance(value, str):
        return shlex.split(value)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: {where} must be a list of strings")
    return list(value)


def _table(document: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        value = document.get(key, {})
        document = value if isinstance(value, dict) else {}
    return document


def _source_roots(root: Path, configured: list[str]) -> list[str]:
    roots = ["."]
    if (root / "src").is_dir() and not (root / "src" / "__init__.py").exists():
        roots.append("src")
    return list(dict.fromkeys([*roots, *configured]))


def load(root: Path) -> RunSettings:
    """The run settings of the project at ``root`` (its pyproject.toml, when it has one)."""
    path = root / "pyproject.toml"
    document: dict[str, Any] = {}
    if path.is_file():
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise ConfigError(f"{path}: {error}") from error
    confirm = _table(document, "tool", "devlint", "confirm")
    pytest_paths = _table(document, "tool", "pytest", "ini_options").get("pythonpath", [])
    args = confirm.get("args", {})
    if not isinstance(args, dict):
        raise ConfigError(f"{path}: [tool.devlint.confirm] args must be a table of scripts")
    paths = _strings(pytest_paths, "[tool.pytest.ini_options] pythonpath", path)
    paths += _strings(confirm.get("pythonpath", []), "[tool.devlint.confirm] pythonpath", path)
    return RunSettings(
        {
            Path(script).as_posix(): _strings(value, f"args of {script!r}", path)
            for script, value in args.items()
        },
        _source_roots(root, paths),
    )
