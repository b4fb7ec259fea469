"""OS-level confinement of a run: the backstop for code that bypasses Python's audit hook
(``ctypes``, a program the code starts). Each piece is used where the system has it and skipped
silently where it does not.

- **Landlock** (Linux 5.13+, also for root): the run may write only in its own folder and a few
  devices; from Linux 6.12 (Landlock ABI 6) it may not signal any process outside the run. If a
  rule for one of those paths cannot be added, Landlock is not used at all (a missing rule
  would make the run fail, not safer). Nor on a machine with the NVIDIA driver, which does not
  start under it; the run's notes say so.
- **A pids cgroup** (as root, where devlint's own pids cgroup may hold child groups: cgroup v1,
  or v2 with ``pids`` delegated to devlint's group): a group below devlint's own, so the run
  stays under every limit devlint runs under (a CI job's memory and CPU); at most ``tasks``
  processes and threads in the run, and every process of the run killed at its end, also those
  that left its session. Never a group elsewhere in the hierarchy: without one, the audit hook
  and RLIMIT_NPROC remain.
- **RLIMIT_NPROC** (for a user other than root, whom the kernel never limits, in the initial
  pid namespace only: in a container /proc misses the user's processes in other containers,
  which the limit counts): ``4 * tasks`` more processes and threads than the user already has.
- **No capabilities** (for root): the run stays uid 0, so that it reads the interpreter and the
  packages wherever root installed them, but it cannot raise its limits, load modules, change
  the network or reboot, and neither can any program it executes. Where the bounding set cannot
  be dropped (no CAP_SETPCAP), the programs it executes regain them: the run's notes say so.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Optional

from devlint.runtime import processes

# Landlock's system calls carry the same numbers on every architecture.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_SCOPE_SIGNAL = 1 << 1  # ABI 6
_PR_CAPBSET_DROP = 24
_PR_SET_CHILD_SUBREAPER = 36
_CAPABILITY_VERSION_3 = 0x20080522
_INITIAL_PID_NAMESPACE = 0xEFFFFFFC  # the kernel's PROC_PID_INIT_INO
_NPROC_HEADROOM = 4  # RLIMIT_NPROC: this many times the run's tasks above the user's count

# Landlock's filesystem rights: those that change the filesystem, by the ABI that brought them.
_WRITE_FILE, _TRUNCATE, _REFER = 1 << 1, 1 << 14, 1 << 13
_WRITES_V1 = _WRITE_FILE | sum(1 << bit for bit in range(4, 13))  # remove, make (dir, reg, ...)
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE  # the rights that apply to a file, not a folder

# Outside the run's folder, what the run may still write to: terminals, shared memory, GPUs.
DEVICE_PATHS = (
    "/dev/null /dev/zero /dev/full /dev/tty /dev/ptmx /dev/pts /dev/shm /dev/dri /dev/kfd"
).split()


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> Optional[ctypes.CDLL]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing or disabled."""
    libc = _libc()
    if libc is None:
        return 0
    return max(0, _syscall(libc, _CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION))


def _syscall(libc: ctypes.CDLL, number: int, *args: object) -> int:
    """A system call; each integer argument passed as a full register (the call is variadic)."""
    values = [ctypes.c_long(arg) if isinstance(arg, int) else arg for arg in args]
    return int(libc.syscall(ctypes.c_long(number), *values))


def device_paths() -> list[str]:
    found = [path for path in DEVICE_PATHS if os.path.exists(path)]
    with suppress(OSError):
        found += [f"/dev/{name}" for name in os.listdir("/dev") if name.startswith("nvidia")]
    return found


# Under Landlock the CUDA driver does not start, even with writes allowed below the run's folder,
# /tmp and all of /dev ("Unexpected error from cudaGetDeviceCount()", checked on an H100): a GPU
# run would fall back to the virtual GPU, and a CPU-host run would fail with an error no machine
# without a GPU shows. Where the driver is, the audit hook alone guards writes.
NO_LANDLOCK_WITH_CUDA = (
    "writes and signals are guarded by the audit hook only, and programs the code starts may "
    "gain privileges: the CUDA driver does not start under Landlock"
)


def nvidia_driver() -> bool:
    """Whether this machine has the NVIDIA driver's control device."""
    return os.path.exists("/dev/nvidiactl")


def restrict(writable: list[str]) -> str:
    """Confine this thread and every process it starts from now on: writes only below
    ``writable`` and the devices, signals only inside the run. Call it while the process has
    one thread. Returns what was enforced, or "" where Landlock is not available."""
    libc, abi = _libc(), landlock_abi()
    if libc is None or abi < 1:
        return ""
    handled = _WRITES_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(handled, 0, _SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(attr) if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _syscall(libc, _CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return ""
    try:
        if not all(_allow(libc, ruleset, path, handled) for path in [*writable, *device_paths()]):
            return ""  # restricted without a rule for it, the run could not write there
        no_new_privileges = [ctypes.c_ulong(value) for value in (1, 0, 0, 0)]
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, *no_new_privileges) != 0:
            return ""
        if _syscall(libc, _RESTRICT_SELF, ruleset, 0) != 0:
            return ""
    finally:
        os.close(ruleset)
    return "writes and signals" if abi >= 6 else "writes"


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, handled: int) -> bool:
    """Add the rule that lets the run write below ``path``; False where it could not."""
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        rights = handled if os.path.isdir(path) else handled & _FILE_RIGHTS
        beneath = _PathBeneathAttr(rights, descriptor)
        added = _syscall(libc, _ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(beneath), 0)
    finally:
        os.close(descriptor)
    return added == 0


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int32)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> str:
    """Give up every capability, for this process and what it executes (root's run). Returns
    what was kept ("" when everything was given up, or when there was nothing to give up)."""
    libc = _libc()
    if libc is None or os.geteuid() != 0:
        return ""
    bounded = _drop_bounding_set(libc)
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if int(libc.capset(ctypes.byref(header), data)) != 0:
        return "the run kept root's capabilities (capset failed)"
    if not bounded:
        return (
            "programs the run executes regain root's capabilities "
            "(the capability bounding set could not be dropped)"
        )
    return ""


def _drop_bounding_set(libc: ctypes.CDLL) -> bool:
    """Empty the bounding set, which caps what an executed program gets; False on failure."""
    for capability in range(64):
        unused = [ctypes.c_ulong(0)] * 3
        if libc.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(capability), *unused) != 0:
            # EINVAL past the last capability: done. EPERM: no CAP_SETPCAP.
            return capability > 0 and ctypes.get_errno() == errno.EINVAL
    return True


# -- processes: a pids cgroup, or RLIMIT_NPROC ----------------------------------------------------


def in_initial_pid_namespace() -> bool:
    try:
        return os.stat("/proc/self/ns/pid").st_ino == _INITIAL_PID_NAMESPACE
    except OSError:
        return False


def nproc_limit(tasks: int) -> Optional[int]:
    """The RLIMIT_NPROC that leaves the run ample room above what this user runs already; None
    for root (never limited) and where the user's processes cannot all be counted."""
    if not sys.platform.startswith("linux") or os.geteuid() == 0:
        return None
    if not in_initial_pid_namespace():  # the limit counts processes /proc does not show
        return None
    current = processes.user_tasks(os.getuid())
    return current + _NPROC_HEADROOM * tasks if current else None


def _own_pids_cgroup() -> Optional[tuple[Path, bool]]:
    """The folder of this process's own pids cgroup, and whether it is cgroup v2."""
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in memberships:
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""
        if v2 or "pids" in controllers.split(","):
            folder = _mounted(path, mounts, v2)
            if folder is not None:
                return folder, v2
    return None


def _mounted(path: str, mounts: list[str], v2: bool) -> Optional[Path]:
    """Where the cgroup ``path`` of the hierarchy (v2, or v1's with pids) is mounted here."""
    for mount in mounts:
        fields = mount.split()
        if " - " not in mount or len(fields) < 5:
            continue
        kind, _, options = [*mount.split(" - ", 1)[1].split(), "", ""][:3]
        if not ((v2 and kind == "cgroup2") or (kind == "cgroup" and "pids" in options.split(","))):
            continue
        root = fields[3]
        inside = os.path.relpath(path, root)
        if inside == os.pardir or inside.startswith(os.pardir + os.sep):
            continue  # the mount shows another part of the hierarchy
        return Path(fields[4]) / inside if inside != os.curdir else Path(fields[4])
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _can_hold_groups(folder: Path, v2: bool) -> bool:
    """Whether a child group of ``folder`` gets the pids controller without changing
    ``folder`` itself: always on v1, on v2 where ``pids`` is delegated to its children."""
    return not v2 or "pids" in _read(folder / "cgroup.subtree_control").split()


def _remove_stale(folder: Path) -> None:
    """Remove the empty groups that a devlint killed before its cleanup left behind."""
    with suppress(OSError):
        for entry in folder.iterdir():
            parts = entry.name.split("-")
            stale = len(parts) == 3 and parts[0] == "devlint" and parts[1].isdigit()
            if stale and not _alive(int(parts[1])):
                with suppress(OSError):
                    entry.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class PidsGroup:
    """A cgroup below devlint's own holding one run: a cap on its processes and threads, and a
    way to kill them all, also those that left the run's session."""

    def __init__(self, folder: Path, v2: bool, tasks: int) -> None:
        self.folder, self.v2, self.tasks = folder, v2, tasks

    @classmethod
    def create(cls, tasks: int) -> Optional[PidsGroup]:
        """A new group, or None where devlint may not create one below its own (not root, no
        pids cgroup, pids not delegated)."""
        if os.geteuid() != 0:
            return None
        found = _own_pids_cgroup()
        if found is None or not _can_hold_groups(*found):
            return None
        _remove_stale(found[0])
        folder = found[0] / f"devlint-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            folder.mkdir()
        except OSError:
            return None
        group = cls(folder, found[1], tasks)
        try:
            (folder / "pids.max").write_text(str(tasks))
        except OSError:
            group.close()
            return None
        return group

    @property
    def procs(self) -> str:
        return str(self.folder / "cgroup.procs")

    def limit_reached(self) -> bool:
        """Whether a fork failed on the group's limit."""
        for line in _read(self.folder / "pids.events").splitlines():
            name, _, count = line.partition(" ")
            if name == "max" and count.strip() not in ("", "0"):
                return True
        return False

    def kill(self) -> None:
        """SIGKILL every process in the group, until it is empty (a few seconds at most)."""
        if self.v2 and (self.folder / "cgroup.kill").exists():
            with suppress(OSError):
                (self.folder / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            pids = [int(pid) for pid in _read(self.folder / "cgroup.procs").split()]
            if not pids:
                return
            for pid in pids:
                with suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self) -> bool:
        """Remove the (empty) group; False where it is still there."""
        for _ in range(50):
            try:
                self.folder.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                time.sleep(0.02)  # the killed processes are still being reaped
        return False

    def close(self) -> None:
        """Kill what is left in the group and remove it; a warning where it stays behind."""
        self.kill()
        if not self.remove():
            print(f"devlint: could not remove the cgroup {self.folder}", file=sys.stderr)


@contextmanager
def pids_group(tasks: int) -> Iterator[Optional[PidsGroup]]:
    """A pids cgroup for one run (None where there can be none), killed and removed at the
    end, whatever happens in between."""
    group = PidsGroup.create(tasks)
    try:
        yield group
    finally:
        if group is not None:
            group.close()


def become_subreaper() -> None:
    """Orphans of the run's processes become this process's children, not init's: the run can
    still find them (and kill them) when they left its session."""
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, *[ctypes.c_ulong(value) for value in (1, 0, 0, 0)])


def join(procs: str) -> None:
    """Move this process into a run's group (before anything of the user's runs)."""
    with suppress(OSError):
        Path(procs).write_text(str(os.getpid()))
