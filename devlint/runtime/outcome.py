"""What one run reports back: the data the child writes and the parent reads, as JSON.

Paths are relative to the root of the project copy the child ran in, so that the parent maps
them back onto the user's files.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

Frame = tuple[str, int]  # (path relative to the project root, line)

COMPLETED = "completed"  # the entry point ran to its end (a test suite: every test passed)
TESTS_FAILED = "tests-failed"  # the test session ran to its end, and some tests failed
FAILED = "failed"  # an exception ended the entry point
CRASHED = "crashed"  # killed by a signal, or died without a report
TIMEOUT = "timeout"
UNAVAILABLE = "unavailable"  # the profile cannot run here (no torch, no GPU for `gpu`)
REFUSED = "refused"  # the sandbox refused something the code tried (the detail says what)
FINISHED = frozenset({COMPLETED, TESTS_FAILED})  # the entry point ran to its end


@dataclass
class Failure:
    type: str
    message: str
    frames: list[Frame] = field(default_factory=list)  # outermost first, project files only
    test: Optional[str] = None  # the pytest node that failed, when a test suite ran
    moved_at: list[Frame] = field(default_factory=list)  # discarded `.to()` of a CPU operand
    attributes: list[dict[str, Any]] = field(default_factory=list)  # plain tensors on `self`
    cause: bool = False  # a later exception of the same chain was raised from this one

    @property
    def text(self) -> str:
        return f"{self.type}: {self.message}"


@dataclass
class Warned:
    category: str
    message: str
    frames: list[Frame] = field(default_factory=list)


@dataclass(frozen=True)
class Entry:
    kind: str  # "script", "pytest" or "function"
    target: str  # a path relative to the root, the test paths, or "module:function"

    @property
    def label(self) -> str:
        return "pytest " + self.target if self.kind == "pytest" else self.target


@dataclass
class RunOutcome:
    entry: Entry
    profile: str  # the profile that actually ran (vgpu runs as gpu where a GPU exists)
    status: str
    detail: str = ""
    failures: list[Failure] = field(default_factory=list)
    warnings: list[Warned] = field(default_factory=list)
    reached: dict[str, list[int]] = field(default_factory=dict)
    entered: list[str] = field(default_factory=list)  # watched files whose code ran at all
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the sandbox did that did not end it
    failed_tests: list[str] = field(default_factory=list)  # pytest node ids, in order
    patched: list[Frame] = field(default_factory=list)  # lines whose device calls ran on the CPU

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunOutcome:
        def frames(items: list[Any]) -> list[Frame]:
            return [(str(path), int(line)) for path, line in items]

        failures = [
            Failure(
                **{**item, "frames": frames(item["frames"]), "moved_at": frames(item["moved_at"])}
            )
            for item in data.get("failures", [])
        ]
        warned = [
            Warned(**{**item, "frames": frames(item["frames"])})
            for item in data.get("warnings", [])
        ]
        return cls(
            entry=Entry(**data["entry"]),
            profile=data["profile"],
            status=data["status"],
            detail=data.get("detail", ""),
            failures=failures,
            warnings=warned,
            reached={path: list(lines) for path, lines in data.get("reached", {}).items()},
            entered=list(data.get("entered", [])),
            seconds=float(data.get("seconds", 0.0)),
            notes=[str(note) for note in data.get("notes", [])],
            failed_tests=[str(test) for test in data.get("failed_tests", [])],
            patched=frames(data.get("patched", [])),
        )

    def write(self, path: Path) -> None:
        """Written whole or not at all: the parent may stop the child at any moment."""
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(self.to_json()), encoding="utf-8")
        os.replace(partial, path)

    @classmethod
    def read(cls, path: Path) -> Optional[RunOutcome]:
        """The child's report; None where there is none, or none that can be read."""
        try:
            return cls.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError, AttributeError, KeyError):
            return None


@dataclass(frozen=True)
class Guard:
    """What the child's confinement (``confine``) and audit hook (``guard.Policy``) need."""

    writable: tuple[str, ...]  # folders the run may write in
    max_processes: int  # processes alive in the run at once
    log: Optional[str] = None  # the refusal log the parent reads
    cgroup: Optional[str] = None  # the ``cgroup.procs`` of the run's pids cgroup, to join

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Guard:
        return cls(**{**data, "writable": tuple(data["writable"])})


@dataclass
class Job:
    """What the parent asks one child to do."""

    entry: Entry
    profile: str
    root: str  # the project copy
    cwd: str
    watch: dict[str, list[int]]  # relative path -> lines whose execution matters
    result: str  # where the child writes its RunOutcome
    args: list[str] = field(default_factory=list)  # a script's command-line arguments
    paths: list[str] = field(default_factory=list)  # source roots put first on sys.path
    patch: list[Frame] = field(default_factory=list)  # lines whose device calls go to the CPU
    limits: dict[str, int] = field(default_factory=dict)  # RLIMIT_* name -> value
    guard: Optional[Guard] = None  # no confinement where None

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> Job:
        data = json.loads(path.read_text(encoding="utf-8"))
        guard = Guard.from_json(data["guard"]) if data.get("guard") else None
        patch = [(str(path), int(line)) for path, line in data.get("patch", [])]
        return cls(**{**data, "entry": Entry(**data["entry"]), "guard": guard, "patch": patch})
