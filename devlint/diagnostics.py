"""The data devlint produces: findings, their positions, and per-file results."""

from __future__ import annotations

from dataclasses import dataclass, field

PARSE_ERROR_CODE = "DEV000"


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based row and column, as editors and Ruff's JSON count them."""

    row: int
    column: int


@dataclass(frozen=True)
class Finding:
    path: str
    code: str
    name: str
    message: str
    start: Position
    end: Position
    noqa_row: int

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
