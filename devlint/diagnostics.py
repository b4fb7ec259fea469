"""The data devlint produces: findings, their positions, and per-file results."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional

PARSE_ERROR_CODE = "DEV000"


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based row and column, as editors and Ruff's JSON count them."""

    row: int
    column: int


class Applicability(str, enum.Enum):
    """Ruff's split: safe fixes keep the program's meaning; unsafe ones may change it."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions (1-based, columns in characters) with ``content``."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Finding:
    path: str
    code: str
    name: str
    message: str
    start: Position
    end: Position
    noqa_row: int
    fix: Optional[Fix] = None

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.start.row, self.start.column, self.code)


@dataclass(frozen=True)
class InternalError:
    """A crash inside devlint while linting one file; the run goes on."""

    path: str
    detail: str


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[InternalError] = field(default_factory=list)
