"""What the user's code may not do, checked in Python by an audit hook in the child.

The child installs the hook (``sys.addaudithook``) before any of the user's code runs. It
refuses, with a ``Refused`` error whose message says what was refused:

- a write outside the run's folder (the project copy and its temporary directory): opening a
  file for writing, creating, removing, renaming, truncating or changing the metadata of a path
  elsewhere (``/dev/null``, ``/dev/shm`` and the terminal excepted);
- a signal to a process outside the run (its parent, devlint, in particular): ``os.kill`` and
  ``os.killpg`` may aim only at the run's own processes;
- a new process beyond ``max_processes`` alive in the run at once (forks, ``subprocess``,
  ``os.system``, ``os.posix_spawn``): enough for DataLoader workers, not for a fork bomb;
- raising a resource limit above its hard limit (which root could do: memory, CPU time).

Every refusal is also appended to the run's refusal log, which the parent reads: the run ends
in ``refused`` with the first reason even when the code catches the error, or when the refusal
happened in a process the code started.

Code that bypasses Python (``ctypes``, a program it starts) is held by the OS-level limits set
in ``confine``, not here.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

# Outside the run's folder, the paths the code may still write to.
DEVICE_FILES = ("/dev/null", "/dev/tty", "/dev/full", "/dev/zero", "/dev/ptmx")
DEVICE_DIRS = ("/dev/shm", "/dev/pts")  # shared memory: DataLoader workers, semaphores

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PROCESS_EVENTS = frozenset(
    "os.fork os.forkpty os.posix_spawn os.spawn os.system subprocess.Popen".split()
)


class Refused(PermissionError):
    """The sandbox refused an operation; the message says which."""


@dataclass
class Policy:
    writable: Sequence[str]  # folders the code may write in (the run's folder)
    max_processes: int  # processes alive in the run at once, the first one included
    log: Optional[str] = None  # the refusal log the parent reads
    refusals: list[str] = field(default_factory=list)
    root_pid: int = 0  # the run's first process; set by install()
    parent_pid: int = 0  # devlint's process
    session: int = 0
    started: int = 0  # processes started by this process (where /proc cannot count them)

    def __post_init__(self) -> None:
        self.folders = tuple(os.path.realpath(path) for path in (*self.writable, *DEVICE_DIRS))
        self.files = frozenset(DEVICE_FILES)
        self._busy = threading.local()
        self._checks: dict[str, Callable[[tuple[Any, ...]], Optional[str]]] = {
            "open": self._open,
            "os.kill": self._kill,
            "os.killpg": self._killpg,
            "os.mkdir": self._mkdir,
            "os.remove": lambda args: self._entry(args[0], args[1]),
            "os.rmdir": lambda args: self._entry(args[0], args[1]),
            "os.rename": lambda args: (
                self._entry(args[0], args[2]) or self._entry(args[1], args[3])
            ),
            "os.link": lambda args: self._entry(args[1], args[3]),
            "os.symlink": lambda args: self._entry(args[1], args[2]),
            "os.truncate": lambda args: self._path(args[0]),
            "os.chmod": lambda args: self._path(args[0], args[2]),
            "os.chown": lambda args: self._path(args[0], args[3]),
            "os.utime": lambda args: self._path(args[0], args[3]),
            "os.setxattr": lambda args: self._path(args[0]),
            "os.removexattr": lambda args: self._path(args[0]),
            "shutil.rmtree": lambda args: self._path(args[0], args[1]),
            "resource.setrlimit": lambda args: _raised(args[0], args[1]),
            "resource.prlimit": lambda args: (
                _raised(args[1], args[2]) if args[0] in (0, os.getpid()) else None
            ),
        }
        for event in _PROCESS_EVENTS:
            self._checks[event] = self._new_process

    # -- the hook ------------------------------------------------------------------------------

    def install(self) -> None:
        self.root_pid, self.parent_pid = os.getpid(), os.getppid()
        self.session = os.getsid(0) if hasattr(os, "getsid") else 0
        sys.addaudithook(self.hook)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        check = self._checks.get(event)
        if check is None or getattr(self._busy, "on", False):
            return
        self._busy.on = True  # the hook's own reads and its log write raise events too
        try:
            reason = check(args)
            if reason is not None:
                self.refuse(reason)
        finally:
            self._busy.on = False

    def refuse(self, reason: str) -> None:
        self.refusals.append(reason)
        if self.log is not None:
            with suppress(OSError):
                descriptor = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(descriptor, (reason.replace("\n", " ") + "\n").encode())
                finally:
                    os.close(descriptor)
        raise Refused(reason)

    # -- files ---------------------------------------------------------------------------------

    def allowed(self, path: str) -> bool:
        return path in self.files or any(
            path == folder or path.startswith(folder + os.sep) for folder in self.folders
        )

    def _open(self, args: tuple[Any, ...]) -> Optional[str]:
        path, _, flags = args
        if not isinstance(flags, int) or not flags & _WRITE_FLAGS:
            return None
        return self._path(path)

    def _mkdir(self, args: tuple[Any, ...]) -> Optional[str]:
        target = _absolute(args[0], args[2])
        if target is None or os.path.isdir(target):  # exists already: mkdir fails, harmless
            return None
        return self._entry(args[0], args[2])

    def _path(self, path: Any, dir_fd: Any = None) -> Optional[str]:
        """A path the operation follows to its target (symbolic links resolved)."""
        target = _absolute(path, dir_fd)
        if target is None:
            return None
        real = os.path.realpath(target)
        return None if self.allowed(real) else _outside(real)

    def _entry(self, path: Any, dir_fd: Any = None) -> Optional[str]:
        """A directory entry the operation creates or removes (the link, not its target)."""
        target = _absolute(path, dir_fd)
        if target is None:
            return None
        head, name = os.path.split(target.rstrip(os.sep) or os.sep)
        real = os.path.join(os.path.realpath(head), name)
        return None if self.allowed(real) else _outside(real)

    # -- signals -------------------------------------------------------------------------------

    def _kill(self, args: tuple[Any, ...]) -> Optional[str]:
        pid, number = args
        if number == 0 or pid == 0:  # an existence check; the run's own process group
            return None
        if pid == -1:
            return f"the code tried to signal every process on the machine ({_name(number)})"
        if pid < 0:
            return self._killpg((-pid, number))
        if pid == self.parent_pid:
            return f"the code tried to signal its parent, devlint (pid {pid}, {_name(number)})"
        if self._in_run(pid):
            return None
        return f"the code tried to signal process {pid}, outside its run ({_name(number)})"

    def _killpg(self, args: tuple[Any, ...]) -> Optional[str]:
        group, number = args
        if number == 0 or group in (0, os.getpgid(0)) or self._group_in_run(group):
            return None
        with suppress(OSError):
            if group == os.getpgid(self.parent_pid):
                return (
                    f"the code tried to signal its parent's process group {group} ({_name(number)})"
                )
        return f"the code tried to signal process group {group}, outside its run ({_name(number)})"

    def _in_run(self, pid: int) -> bool:
        """The process belongs to the run: it is in the run's session or descends from it."""
        try:
            if os.getsid(pid) == self.session:
                return True
        except ProcessLookupError:
            return True  # no such process: the signal reaches no one
        except OSError:
            return False
        for _ in range(256):
            stat = _stat(pid)
            if stat is None or stat[1] <= 1:
                return False
            pid = stat[1]
            if pid == self.root_pid:
                return True
        return False

    def _group_in_run(self, group: int) -> bool:
        processes = _processes()
        if processes is None:  # no /proc: ask about the group's leader
            return self._in_run(group)
        return all(self._in_run(pid) for pid, stat in processes if stat[2] == group)

    # -- processes -----------------------------------------------------------------------------

    def _new_process(self, args: tuple[Any, ...]) -> Optional[str]:
        alive = self._processes_alive()
        if alive >= self.max_processes:
            return (
                f"the code tried to start more than {self.max_processes} processes at once "
                f"(a fork bomb?)"
            )
        self.started += 1
        return None

    def _processes_alive(self) -> int:
        """The run's processes: in its session, or descended from its first process (also
        those that left the session; the run's first process is their subreaper)."""
        processes = _processes()
        if processes is None:
            return 1 + self.started
        return len(descendants(self.root_pid, processes, self.session)) + 1


def _stat(pid: int) -> Optional[tuple[str, int, int, int]]:
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


def descendants(
    root: int,
    processes: Optional[list[tuple[int, tuple[str, int, int, int]]]] = None,
    session: int = 0,
) -> set[int]:
    """The processes below ``root`` (and those in ``session``), from one look at /proc."""
    processes = _processes() if processes is None else processes
    children: dict[int, list[int]] = {}
    found = set()
    for pid, stat in processes or ():
        children.setdefault(stat[1], []).append(pid)
        if session and stat[3] == session:
            found.add(pid)
    waiting = [root]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in found:
                found.add(child)
                waiting.append(child)
    found.discard(root)
    return found


def kill_descendants(root: int) -> None:
    """SIGKILL every process below ``root``, however it left the run's session."""
    for _ in range(3):  # a dying fork bomb may still be forking
        for pid in descendants(root):
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _processes() -> Optional[list[tuple[int, tuple[str, int, int, int]]]]:
    """Every process's pid and stat; None where there is no /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    found = []
    for name in names:
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                found.append((int(name), stat))
    return found


def _absolute(path: Any, dir_fd: Any = None) -> Optional[str]:
    """The absolute path an operation names; None for an open file descriptor."""
    if isinstance(path, int) or path is None:
        return None
    try:
        text = os.fsdecode(os.fspath(path))
    except TypeError:
        return None
    if os.path.isabs(text):
        return text
    base = os.getcwd()
    if isinstance(dir_fd, int) and dir_fd >= 0:
        with suppress(OSError):
            base = os.readlink(f"/proc/self/fd/{dir_fd}")
    return os.path.join(base, text)


def _raised(kind: Any, limits: Any) -> Optional[str]:
    """A limit set above its hard limit: only root may, and the run may not."""
    if limits is None:  # prlimit() only reading
        return None
    try:
        import resource

        hard = resource.getrlimit(kind)[1]
        wanted = [int(value) for value in limits]
    except (ImportError, ValueError, TypeError, OSError):
        return None
    if hard == resource.RLIM_INFINITY or all(
        value != resource.RLIM_INFINITY and value <= hard for value in wanted
    ):
        return None
    names = [name for name in dir(resource) if name.startswith("RLIMIT_")]
    name = next((name for name in names if getattr(resource, name) == kind), str(kind))
    return f"the code tried to raise its resource limit {name} above {hard}"


def _outside(path: str) -> str:
    return f"the code tried to write outside its folder: {path}"


def _name(number: Any) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
