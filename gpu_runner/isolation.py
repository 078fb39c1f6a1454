"""Keeping demo code away from the secrets of the process that runs it.

A demo child gets an environment without secrets (`gpu_runner.environment`), but the bot
(or Celery worker) that started the fork server still holds them, and Linux shows a
process's start-up environment in ``/proc/<pid>/environ`` to any process that may
"ptrace-read" it: one of the same user, unless the target is non-dumpable, or any process
with ``CAP_SYS_PTRACE`` — which root has, non-dumpable or not. So, two layers:

- The process that starts demos, and the fork server, mark themselves non-dumpable
  (``prctl(PR_SET_DUMPABLE, 0)``): a demo of the same (non-root) user can no longer read
  their ``/proc`` files (nor attach a debugger, nor get a core dump of them).
- Started as root, each demo child drops to an unprivileged user (``nobody`` by default)
  before any demo code runs: other uid, no capabilities, and ``no_new_privs`` so that no
  set-uid program can give them back. If that user cannot read the Python installation
  (e.g. it lives under ``/root``), a demo could not even import; the children then stay
  uid 0 but drop every capability instead — ``CAP_SYS_PTRACE`` with the rest, so the
  non-dumpable parents are out of reach again (they can still read root's files: give the
  demo user access to Python to get the stronger isolation). `plan_isolation` decides,
  once, in the fork server.

Both are Linux features; elsewhere the functions do nothing and say so in the log.
"""

from __future__ import annotations

import ctypes
import logging
import os
import pwd
import re
import sys
from dataclasses import dataclass
from typing import Final

log = logging.getLogger(__name__)

PR_SET_DUMPABLE: Final = 4
PR_GET_DUMPABLE: Final = 3
PR_SET_NO_NEW_PRIVS: Final = 38
PR_CAPBSET_DROP: Final = 24
PR_CAP_AMBIENT: Final = 47
PR_CAP_AMBIENT_CLEAR_ALL: Final = 4
_CAPABILITY_VERSION_3: Final = 0x20080522
DEFAULT_DEMO_USER: Final = "nobody"
_NUMERIC_USER = re.compile(r"^([0-9]{1,10})(?::([0-9]{1,10}))?$")


@dataclass(frozen=True, slots=True)
class DemoCredentials:
    """Who demo children run as (a started-as-root executor only)."""

    uid: int
    gid: int
    groups: tuple[int, ...] = ()

    def as_argument(self) -> str:
        """``uid:gid[:group,group...]`` for the fork server's command line."""
        return f"{self.uid}:{self.gid}:{','.join(str(g) for g in self.groups)}"

    @classmethod
    def from_argument(cls, text: str) -> DemoCredentials:
        uid, gid, groups = [*text.split(":"), ""][:3]
        return cls(int(uid), int(gid), tuple(int(g) for g in groups.split(",") if g))


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _prctl(option: int, value: int, extra: int = 0) -> int | None:
    """The result of ``prctl(option, value, extra)``, or None where there is no prctl."""
    libc = _libc()
    if libc is None:
        return None
    try:
        result: int = libc.prctl(option, value, extra, 0, 0)
    except AttributeError:
        return None
    return result


def make_non_dumpable(what: str) -> bool:
    """Mark this process non-dumpable; True if it now is. ``what`` names it in the log."""
    if _prctl(PR_SET_DUMPABLE, 0) != 0 or not is_non_dumpable():
        log.warning(
            "could not mark the %s non-dumpable (not Linux?): a demo running as the same "
            "user could read its /proc/<pid>/environ",
            what,
        )
        return False
    return True


def is_non_dumpable() -> bool:
    return _prctl(PR_GET_DUMPABLE, 0) == 0


def demo_credentials(user: str | None) -> DemoCredentials | None:
    """Whom demo children run as: ``user`` (a name, or ``uid[:gid]``) when this process is
    root, else None (they run as this process's own user, which cannot be changed)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not user:
        return None  # not root, or no user: plan_isolation keeps uid 0, drops capabilities
    if (numeric := _NUMERIC_USER.match(user)) is not None:
        uid, gid = numeric.group(1), numeric.group(2) or numeric.group(1)
        return DemoCredentials(int(uid), int(gid))
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise ValueError(
            f"the demo user {user!r} does not exist on this host; create it, or give a "
            f"numeric uid:gid (e.g. 65534:65534)"
        ) from None
    groups = tuple(g for g in os.getgrouplist(user, entry.pw_gid) if g != entry.pw_gid)
    return DemoCredentials(entry.pw_uid, entry.pw_gid, groups)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """In a demo child that stays uid 0: give up every capability, for good (raises
    OSError if that fails). Without ``CAP_SYS_PTRACE`` a non-dumpable process is out of
    reach even for uid 0; without ``CAP_SETPCAP`` and with ``no_new_privs`` nothing
    brings the capabilities back, not even executing a program as root."""
    libc = _libc()
    if libc is None:
        raise OSError("capabilities are a Linux feature")
    # The bounding set first: dropping from it needs CAP_SETPCAP, which goes next.
    cap = 0
    while _prctl(PR_CAPBSET_DROP, cap) == 0:
        cap += 1
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
        raise OSError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()  # all zero: no effective, permitted or inheritable capability
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    if effective_capabilities() != 0:
        raise OSError("the demo child still holds capabilities")


def effective_capabilities() -> int | None:
    """This process's effective capability mask, from /proc (None where unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        return None
    return None


@dataclass(frozen=True, slots=True)
class DemoIsolation:
    """How demo children are kept from their parents' secrets (decided once)."""

    switch_to: DemoCredentials | None  # drop to this user
    drop_caps: bool  # stay uid 0 without capabilities
    description: str  # for the log and the fork server's hello

    def apply(self) -> None:
        """In a fresh demo child, before any demo code: raises OSError on failure."""
        if self.switch_to is not None:
            drop_privileges(self.switch_to)
        elif self.drop_caps:
            drop_capabilities()


def plan_isolation(creds: DemoCredentials | None) -> DemoIsolation:
    """In the fork server: the strongest isolation that lets a demo still run here."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        own = os.geteuid() if hasattr(os, "geteuid") else "?"
        return DemoIsolation(None, False, f"uid {own} (the runner's own user)")
    if creds is not None:
        unreadable = _unreadable_as(creds)
        if unreadable is None:
            return DemoIsolation(creds, False, f"uid {creds.uid}, no capabilities")
        log.warning(
            "the demo user (uid %d) cannot read %s, so demos could not import Python "
            "there; they run as uid 0 without capabilities instead (make the Python "
            "installation readable by that user for the stronger isolation)",
            creds.uid,
            unreadable,
        )
    return DemoIsolation(None, True, "uid 0 without capabilities")


def _unreadable_as(creds: DemoCredentials) -> str | None:
    """The first path a demo needs that ``creds`` cannot read (a forked probe), or None."""
    needed = [os.path.dirname(os.__file__), *(p for p in sys.path if p and os.path.isdir(p))]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the probe child
        found = b""
        try:
            drop_privileges(creds)
            for path in needed:
                try:
                    os.listdir(path)
                except OSError:
                    found = path.encode()
                    break
        except BaseException as exc:
            found = f"(the switch failed: {exc})".encode()
        finally:
            os.write(write, found)
            os._exit(0)
    os.close(write)
    answer = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(pid, 0)
    return answer or None


def drop_privileges(creds: DemoCredentials) -> None:
    """In a demo child started as root: become ``creds`` for good, with no capabilities and
    no way back (raises OSError if any step fails: the child must then not run the demo)."""
    os.setgroups(list(creds.groups))
    os.setresgid(creds.gid, creds.gid, creds.gid)
    os.setresuid(creds.uid, creds.uid, creds.uid)  # clears every capability
    if os.getuid() != creds.uid or os.geteuid() != creds.uid:
        raise OSError(f"the demo child is still uid {os.geteuid()}, not {creds.uid}")
    if _prctl(PR_SET_NO_NEW_PRIVS, 1) not in (0, None):
        raise OSError("prctl(PR_SET_NO_NEW_PRIVS) failed")


__all__ = [
    "DEFAULT_DEMO_USER",
    "DemoCredentials",
    "DemoIsolation",
    "demo_credentials",
    "drop_capabilities",
    "drop_privileges",
    "effective_capabilities",
    "is_non_dumpable",
    "make_non_dumpable",
    "plan_isolation",
]
