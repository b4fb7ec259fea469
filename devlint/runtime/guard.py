"""What the user's code may not do, checked in Python by an audit hook in the child.

The child installs the hook (``sys.addaudithook``) before any of the user's code runs. It
refuses, with a ``Refused`` error whose message says what was refused:

- a write outside the run's folder (the project copy and its temporary directory): opening a
  file for writing, creating, removing, renaming, truncating or changing the metadata of a path
  elsewhere (``/dev/null``, ``/dev/shm`` and the terminal excepted);
- a signal to a process outside the run (its parent, devlint, in particular): ``os.kill`` and
  ``os.killpg`` may aim only at the run's own processes;
- a new process beyond ``max_processes`` running in the run at once (forks, ``subprocess``,
  ``os.system``, ``os.posix_spawn``): enough for DataLoader workers, not for a fork bomb.
  Finished processes waiting to be reaped do not count (orphans the run's first process adopts
  stay zombies until the run ends). Without /proc (macOS) the run's processes cannot be
  counted, and only RLIMIT_NPROC holds them;
- raising a resource limit above its hard limit (which root could do: memory, CPU time).

Every refusal is also appended to the run's refusal log (one ``kind<TAB>reason`` line), which
the parent reads. A refused process, signal or limit ends the run in ``refused`` even when the
code catches the error, or when the refusal happened in a process the code started: the code
tried something hostile. A refused write ends it in ``refused`` only when the error ends the
code; caught, it is a note of the run (nothing was written), as for a library that tries to
create a cache in the home folder and carries on without it.

A check that fails (a bug in it, an event shaped differently in some Python version) lets the
operation through: an error in the guard must never reach the user's code.

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

from devlint.runtime import processes

# Outside the run's folder, the paths the code may still write to.
DEVICE_FILES = ("/dev/null", "/dev/tty", "/dev/full", "/dev/zero", "/dev/ptmx")
DEVICE_DIRS = ("/dev/shm", "/dev/pts")  # shared memory: DataLoader workers, semaphores

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PROCESS_EVENTS = frozenset(
    "os.fork os.forkpty os.posix_spawn os.spawn os.system subprocess.Popen".split()
)

# The audited events and their arguments (CPython's audit events table), Python 3.9 to 3.13:
#
#   open                (path, mode, flags)          path may be a file descriptor (int)
#   os.kill             (pid, sig)
#   os.killpg           (pgid, sig)
#   os.mkdir            (path, mode, dir_fd)
#   os.remove           (path, dir_fd)               also os.unlink
#   os.rmdir            (path, dir_fd)
#   os.rename           (src, dst, src_dir_fd, dst_dir_fd)    also os.replace
#   os.link             (src, dst, src_dir_fd, dst_dir_fd)
#   os.symlink          (src, dst, dir_fd)
#   os.truncate         (fd_or_path, length)         also os.ftruncate (a descriptor)
#   os.chmod            (path, mode, dir_fd)         also os.fchmod, os.lchmod
#   os.chown            (path, uid, gid, dir_fd)     also os.fchown, os.lchown
#   os.utime            (path, times, ns, dir_fd)
#   os.setxattr         (path, attribute, value, flags)
#   os.removexattr      (path, attribute)
#   shutil.rmtree       (path, dir_fd)               Python 3.11+; (path,) before 3.11
#   resource.setrlimit  (resource, limits)
#   resource.prlimit    (pid, resource, limits)      limits None: only reading
#   os.fork, os.forkpty ()
#   os.posix_spawn      (path, argv, env)            also os.posix_spawnp
#   os.spawn            (mode, path, args, env)
#   os.system           (command,)
#   subprocess.Popen    (executable, args, cwd, env)

# What a refusal was about: a refused write, when caught, does not end the run (see above).
WRITE, PROCESS, SIGNAL, LIMIT = "write", "process", "signal", "limit"
HOSTILE = frozenset((PROCESS, SIGNAL, LIMIT))  # refused even when the code catches the error
_LOGGED_WRITES = 20  # per process: a loop that keeps trying must not fill the log


class Refused(PermissionError):
    """The sandbox refused an operation; the message says which."""

    def __init__(self, reason: str, kind: str = WRITE) -> None:
        super().__init__(reason)
        self.kind = kind


Check = Callable[[tuple[Any, ...]], Optional[str]]


@dataclass
class Policy:
    writable: Sequence[str]  # folders the code may write in (the run's folder)
    max_processes: int  # processes alive in the run at once, the first one included
    log: Optional[str] = None  # the refusal log the parent reads
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (kind, reason)
    root_pid: int = 0  # the run's first process; set by install()
    parent_pid: int = 0  # devlint's process
    session: int = 0

    def __post_init__(self) -> None:
        self.folders = tuple(os.path.realpath(path) for path in (*self.writable, *DEVICE_DIRS))
        self.files = frozenset(DEVICE_FILES)
        self._busy = threading.local()
        self._checks: dict[str, tuple[str, Check]] = {
            event: (WRITE, check) for event, check in self._write_checks().items()
        }
        self._checks["os.kill"] = (SIGNAL, self._kill)
        self._checks["os.killpg"] = (SIGNAL, self._killpg)
        self._checks["resource.setrlimit"] = (LIMIT, lambda args: _raised(args[0], args[1]))
        self._checks["resource.prlimit"] = (
            LIMIT,
            lambda args: _raised(args[1], args[2]) if args[0] in (0, os.getpid()) else None,
        )
        for event in _PROCESS_EVENTS:
            self._checks[event] = (PROCESS, self._new_process)

    def _write_checks(self) -> dict[str, Check]:
        return {
            "open": self._open,
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
            "shutil.rmtree": lambda args: self._path(args[0], args[1] if len(args) > 1 else None),
        }

    # -- the hook ------------------------------------------------------------------------------

    def install(self) -> None:
        self.root_pid, self.parent_pid = os.getpid(), os.getppid()
        self.session = os.getsid(0) if hasattr(os, "getsid") else 0
        sys.addaudithook(self.hook)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        found = self._checks.get(event)
        if found is None or getattr(self._busy, "on", False):
            return
        kind, check = found
        self._busy.on = True  # the hook's own reads and its log write raise events too
        try:
            reason = check(args)
        except Exception:  # a bug in a check must never reach the user's code: let it through
            reason = None
        finally:
            self._busy.on = False
        if reason is not None:
            self.refuse(reason, kind)

    def refuse(self, reason: str, kind: str = WRITE) -> None:
        self.refusals.append((kind, reason))
        writes = sum(logged == WRITE for logged, _ in self.refusals)
        if self.log is not None and (kind in HOSTILE or writes <= _LOGGED_WRITES):
            self._busy.on = True
            try:
                _append(self.log, f"{kind}\t{reason}")
            finally:
                self._busy.on = False
        raise Refused(reason, kind)

    def hostile(self) -> Optional[str]:
        """The first refusal that ends the run even when caught (a process, signal, limit)."""
        return next((reason for kind, reason in self.refusals if kind in HOSTILE), None)

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
            stat = processes.stat(pid)
            if stat is None or stat[1] <= 1:
                return False
            pid = stat[1]
            if pid == self.root_pid:
                return True
        return False

    def _group_in_run(self, group: int) -> bool:
        table = processes.processes()
        if table is None:  # no /proc: ask about the group's leader
            return self._in_run(group)
        return all(self._in_run(pid) for pid, stat in table if stat[2] == group)

    # -- processes -----------------------------------------------------------------------------

    def _new_process(self, args: tuple[Any, ...]) -> Optional[str]:
        """Refused when ``max_processes`` run already: the run's first process and those in its
        session or below it (also those that left the session: the first process is their
        subreaper). Finished ones waiting to be reaped do not count. Without /proc (macOS) the
        run's processes cannot be counted, and only RLIMIT_NPROC holds them."""
        others = processes.running_descendants(self.root_pid, self.session)
        if others is None or others + 1 < self.max_processes:
            return None
        return (
            f"the code tried to start more than {self.max_processes} processes at once "
            f"(a fork bomb?)"
        )


def _append(log: str, line: str) -> None:
    with suppress(OSError):
        descriptor = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, (line.replace("\n", " ") + "\n").encode())
        finally:
            os.close(descriptor)


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
