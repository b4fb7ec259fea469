"""Output formats: one module each, one ``render`` function with the same signature."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from devlint.diagnostics import Finding, InternalError


@dataclass
class RunSummary:
    findings: list[Finding] = field(default_factory=list)
    errors: list[InternalError] = field(default_factory=list)
    files_checked: int = 0
    fixed: int = 0  # findings fixed by --fix


@dataclass(frozen=True)
class ReportOptions:
    color: bool = False
    quiet: bool = False
    statistics: bool = False


def display_path(path: str) -> str:
    """Paths under the working folder are shown relative to it, as Ruff does."""
    if path == "-":
        return path
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative


Renderer = Callable[[RunSummary, TextIO, ReportOptions], None]


def renderer(format_name: str) -> Renderer:
    from devlint.report import github, json_format, sarif, text

    renderers: dict[str, Renderer] = {
        "text": text.render,
        "json": json_format.render,
        "github": github.render,
        "sarif": sarif.render,
    }
    return renderers[format_name]


FORMATS = ("text", "json", "github", "sarif")
