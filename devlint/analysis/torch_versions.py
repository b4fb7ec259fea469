"""Which torch release first has a name: read from ``devlint/data/torch_versions.json``, which
``python -m devlint.data.generate_torch_versions`` makes from PyTorch's released wheels."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Optional

from devlint.torch_floor import Version, parse_version


@lru_cache(maxsize=1)
def _first_releases() -> dict[str, Version]:
    data = resources.files("devlint.data").joinpath("torch_versions.json").read_text("utf-8")
    table: dict[str, str] = json.loads(data)["first_release"]
    releases = {name: parse_version(text) for name, text in table.items()}
    return {name: version for name, version in releases.items() if version is not None}


def first_release(qualified: str) -> Optional[Version]:
    """The first torch release with ``qualified`` (`torch.accelerator.current_accelerator`):
    None for names every release read has, or that no release binds where the table looks."""
    return _first_releases().get(qualified)
