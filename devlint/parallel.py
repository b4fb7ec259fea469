"""Linting many files: a process pool across them, each result returned with its file's index.

LibCST's parser and devlint's analysis are Python and hold the GIL, so files
are spread over processes. Each worker builds a rule set once per selection
and keeps one tree in memory at a time; only findings travel back. The largest
files are handed out first, so that no worker is left with a big file at the
end while the others idle; callers put the results back in file order.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from devlint.cache import Stamp
from devlint.diagnostics import FileResult, InternalError
from devlint.engine import RuleSet, Unreadable, lint_source, unreadable_result
from devlint.torch_floor import DEFAULT_STYLE, DeviceStyle

# Files per task: enough to amortise the hand-over, few enough to balance the load.
_MAX_CHUNK = 8
# Chunks per process, by bytes: enough that the last ones to finish are small.
_CHUNKS_PER_JOB = 16


@dataclass(frozen=True)
class Task:
    """One file to lint: its index in the run, its path (as shown) and the rules enabled for it."""

    index: int
    path: Path
    codes: frozenset[str]
    style: DeviceStyle = DEFAULT_STYLE


Outcome = tuple[int, FileResult, Optional[Stamp]]

_RULE_SETS: dict[tuple[frozenset[str], DeviceStyle], RuleSet] = {}


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity, where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def rule_set(codes: frozenset[str], style: DeviceStyle = DEFAULT_STYLE) -> RuleSet:
    """The rules for a selection, built once per process."""
    rules = _RULE_SETS.get((codes, style))
    if rules is None:
        rules = _RULE_SETS[(codes, style)] = RuleSet(codes, style=style)
    return rules


def lint_path(
    path: Path, codes: frozenset[str], style: DeviceStyle = DEFAULT_STYLE
) -> tuple[FileResult, Optional[Stamp]]:
    """Lint one file, with the stamp of the bytes read (None when it could not be read)."""
    rules = rule_set(codes, style)
    # Taken before reading: a later change in the same clock tick is then seen as racy.
    read_at = time.time_ns()
    try:
        stat = os.stat(path)
        data = path.read_bytes()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        return unreadable_result(str(path), Unreadable(f"cannot read: {reason}"), rules), None
    return lint_source(str(path), data, rules), Stamp.of(stat, data, read_at)


def _lint_chunk(tasks: Sequence[Task]) -> list[Outcome]:
    return [(task.index, *lint_path(task.path, task.codes, task.style)) for task in tasks]


def lint_tasks(tasks: Sequence[Task], jobs: int) -> Iterator[Outcome]:
    """Each task's outcome, in the order they finish; in this process when one job will do."""
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield (task.index, *lint_path(task.path, task.codes, task.style))
        return
    yield from _in_pool(tasks, min(jobs, len(tasks)))


def _chunks(tasks: Sequence[Task], jobs: int) -> list[list[Task]]:
    """Largest files first, one per chunk when big; small ones grouped up to a share of the
    bytes, so that the hand-over costs little and no chunk outweighs the others."""
    sized = sorted(((_size(task), task) for task in tasks), key=lambda pair: -pair[0])
    share = sum(size for size, _ in sized) // (jobs * _CHUNKS_PER_JOB) + 1
    chunks: list[list[Task]] = []
    weight = share
    for size, task in sized:
        if weight + size > share or len(chunks[-1]) >= _MAX_CHUNK:
            chunks.append([])
            weight = 0
        chunks[-1].append(task)
        weight += size
    return chunks


def _size(task: Task) -> int:
    try:
        return os.stat(task.path).st_size
    except OSError:
        return 0


def _context() -> multiprocessing.context.BaseContext:
    # Forking shares the already imported LibCST and rules; elsewhere start fresh interpreters.
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _in_pool(tasks: Sequence[Task], jobs: int) -> Iterator[Outcome]:
    lost: list[Task] = []
    for chunk, outcomes in _run_chunks(_chunks(tasks, jobs), jobs):
        if outcomes is None:
            lost.extend(chunk)
        else:
            yield from outcomes
    # A worker died (killed, out of memory, a crash in native code) and took the pool with it:
    # each file it left undone gets a process of its own, so that only the culprit fails.
    for task in sorted(lost, key=lambda task: task.index):
        for chunk, outcomes in _run_chunks([[task]], 1):
            yield from outcomes if outcomes is not None else _lost(chunk)


def _run_chunks(
    chunks: Sequence[list[Task]], jobs: int
) -> Iterator[tuple[list[Task], Optional[list[Outcome]]]]:
    """Each chunk with its outcomes, as they finish; None for a chunk a dead worker held."""
    with ProcessPoolExecutor(max_workers=jobs, mp_context=_context()) as pool:
        pending: dict[Future[list[Outcome]], list[Task]] = {
            pool.submit(_lint_chunk, chunk): chunk for chunk in chunks
        }
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                chunk = pending.pop(future)
                try:
                    outcomes: Optional[list[Outcome]] = future.result()
                except BrokenProcessPool:
                    outcomes = None
                yield chunk, outcomes


def _lost(chunk: Sequence[Task]) -> Iterator[Outcome]:
    detail = "the process linting it stopped (killed, out of memory, or a crash in the parser)"
    for task in chunk:
        shown = str(task.path)
        yield task.index, FileResult(shown, [], [InternalError(shown, detail)]), None
