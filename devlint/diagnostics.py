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
    # In a notebook, rows count in the program of its code cells joined in order; ``cell`` is the
    # number of the cell the finding is in (1-based among all cells) and ``cell_first_row`` the
    # program row where that cell begins. Reports show rows within the cell.
    cell: Optional[int] = None
    cell_first_row: int = 1
    # Where the evidence a message cites begins ("made on line 12"), for editors' related
    # information; not part of a finding's identity, and not kept in the cache.
    cited: tuple[Position, ...] = field(default=(), compare=False)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.start.row, self.start.column, self.code)

    def shown(self, position: Position) -> Position:
        """A position as the reader finds it: within the finding's cell in a notebook."""
        if self.cell is None:
            return position
        return Position(position.row - self.cell_first_row + 1, position.column)

    @property
    def where(self) -> str:
        """``row:column``, or ``cell N:row:column`` in a notebook, as Ruff writes it."""
        start = self.shown(self.start)
        prefix = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{prefix}{start.row}:{start.column}"


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
    # Project files whose summaries the lint read: path -> [mtime_ns, size, summary digest].
    dependencies: dict[str, list[object]] = field(default_factory=dict)
