"""The process tree, read from /proc: the run's processes, and how to stop them all.

Used by the audit hook in the child (to count and recognise the run's processes), by the child
and the parent (to kill what is left of a run) and by ``confine`` (to count a user's tasks).
Where there is no /proc (macOS), the scans answer None or nothing.
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from typing import Optional

Stat = tuple[str, int, int, int]  # (state, parent, process group, session)
FINISHED = frozenset("ZX")  # zombie, dead: no longer running, waiting to be reaped


def stat(pid: int) -> Optional[Stat]:
    """(state, parent, process group, session) of a process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    except (IndexError, ValueError):
        return None


def pids() -> Optional[list[int]]:
    """Every process's pid; None where there is no /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    return [int(name) for name in names if name.isdigit()]


def processes() -> Optional[list[tuple[int, Stat]]]:
    """Every process's pid and stat; None where there is no /proc."""
    listed = pids()
    if listed is None:
        return None
    found = []
    for pid in listed:
        info = stat(pid)
        if info is not None:
            found.append((pid, info))
    return found


def descendants(
    root: int, table: Optional[list[tuple[int, Stat]]] = None, session: int = 0
) -> set[int]:
    """The processes below ``root`` (and those in ``session``), from one look at /proc."""
    table = processes() if table is None else table
    children: dict[int, list[int]] = {}
    found = set()
    for pid, info in table or ():
        children.setdefault(info[1], []).append(pid)
        if session and info[3] == session:
            found.add(pid)
    waiting = [root]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in found:
                found.add(child)
                waiting.append(child)
    found.discard(root)
    return found


def running_descendants(root: int, session: int = 0) -> Optional[int]:
    """How many processes below ``root`` (or in ``session``) still run: finished ones (zombies
    waiting to be reaped) do not count. None where there is no /proc."""
    table = processes()
    if table is None:
        return None
    states = dict(table)
    return sum(
        states[pid][0] not in FINISHED for pid in descendants(root, table, session) if pid in states
    )


def kill_descendants(root: int) -> None:
    """SIGKILL every process below ``root``, however it left the run's session."""
    for _ in range(3):  # a dying fork bomb may still be forking
        for pid in descendants(root):
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def user_tasks(uid: int) -> int:
    """Processes and threads of ``uid``, as RLIMIT_NPROC counts them (0: unknown)."""
    count = 0
    for pid in pids() or ():
        with suppress(OSError):
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
    return count
