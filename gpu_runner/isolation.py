"""Keeping demo code away from the secrets of the process that runs it.

A demo child gets an environment without secrets (`gpu_runner.environment`), but the bot
(or Celery worker) that started the fork server still holds them, and Linux shows a
process's start-up environment in ``/proc/<pid>/environ`` to any process that may
"ptrace-read" it: one of the same user, unless the target is non-dumpable, or any process
with ``CAP_SYS_PTRACE`` — which root has, non-dumpable or not. So, two layers:

- The process that starts demos, and the fork server, mark themselves non-dumpable
  (``prctl(PR_SET_DUMPABLE, 0)``): a demo of the same (non-root) user can no longer read
  their ``/proc`` files (nor attach a debugger, nor get a core dump of them).
- Started as root, each demo child drops to an unprivileged user (``nobody`` by default,
  ``QUIZBOT_DEMO_USER``) before any demo code runs: other uid, no capabilities, and
  ``no_new_privs`` so that no set-uid program can give them back. Demos never run as root:
  root reads every root-owned file (``/etc/shadow``, the bot's database) whatever its
  capabilities. If that user cannot read the Python installation because a directory
  above it is closed (Python under ``/root``), the fork server moves into a private mount
  namespace where that directory is an empty tmpfs with only Python's directories bound
  back (`gpu_runner.private_mounts`); if even that cannot help, demos are refused with the
  reason and the fix. `plan_isolation` decides, once, in the fork server.

Both are Linux features; elsewhere the functions do nothing and say so in the log.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import logging
import os
import pwd
import re
import sys
from dataclasses import dataclass
from typing import Final

from gpu_runner.private_mounts import expose_read_only

log = logging.getLogger(__name__)

PR_SET_DUMPABLE: Final = 4
PR_GET_DUMPABLE: Final = 3
PR_SET_NO_NEW_PRIVS: Final = 38
DEFAULT_DEMO_USER: Final = "nobody"
_FIX: Final = (
    "make it readable by that user (chmod o+rx on it and the directories above it, or "
    "install Python outside /root), or set QUIZBOT_DEMO_USER to a user who can read it"
)
CHILD_PACKAGES: Final = ("gpu_runner", "bot")  # what a demo child imports of ours
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
    root, else None (they run as this process's own user, which cannot be changed; as root
    with no user, plan_isolation refuses demos)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not user:
        return None
    if (numeric := _NUMERIC_USER.match(user)) is not None:
        uid, gid = numeric.group(1), numeric.group(2) or numeric.group(1)
        creds = DemoCredentials(int(uid), int(gid))
    else:
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise ValueError(
                f"the demo user {user!r} does not exist on this host; create it, or give a "
                f"numeric uid:gid (e.g. 65534:65534)"
            ) from None
        groups = tuple(g for g in os.getgrouplist(user, entry.pw_gid) if g != entry.pw_gid)
        creds = DemoCredentials(entry.pw_uid, entry.pw_gid, groups)
    if creds.uid == 0 or creds.gid == 0:
        raise ValueError(
            f"the demo user {user!r} is root, and demos never run as root: set "
            "QUIZBOT_DEMO_USER to an unprivileged user (e.g. nobody or 65534:65534)"
        )
    return creds


@dataclass(frozen=True, slots=True)
class DemoIsolation:
    """How demo children are kept from their parents' secrets (decided once)."""

    switch_to: DemoCredentials | None  # drop to this user (started as root)
    description: str  # for the log and the fork server's hello
    refused: str | None = None  # why no demo may run here, and the fix

    def apply(self) -> None:
        """In a fresh demo child, before any demo code: raises OSError on failure."""
        if self.refused is not None:
            raise OSError(self.refused)
        if self.switch_to is not None:
            drop_privileges(self.switch_to)
            # The uid change made the child non-dumpable, which hands its /proc files to
            # root (a demo resets its peak memory through /proc/self/clear_refs). It holds
            # no secret to guard: its environment is the allow-list, its memory the fork
            # server's, which never saw the bot's environment.
            _prctl(PR_SET_DUMPABLE, 1)


def plan_isolation(creds: DemoCredentials | None) -> DemoIsolation:
    """In the fork server: who demo children run as. Started as root, never root: the demo
    user, with Python's directories exposed to it where a closed directory hides them, or
    no demo at all (`refused`). May move this process into a private mount namespace."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        own = os.geteuid() if hasattr(os, "geteuid") else "?"
        return DemoIsolation(None, f"uid {own} (the runner's own user)")
    if creds is None:
        return _refused(
            "demos never run as root, and no demo user is set: set QUIZBOT_DEMO_USER to an "
            "unprivileged user (e.g. nobody)"
        )
    blocked = _unreadable_as(creds)
    exposed: list[str] = []
    # A closed directory above Python can be covered; a closed directory of Python's own
    # cannot (it stays named in the refusal).
    if closed := sorted({c for path, c in blocked if c != path}):
        try:
            exposed = expose_read_only(needed_paths(), closed)
        except OSError as exc:
            log.warning("could not expose Python to the demo user in a private mount: %s", exc)
        else:
            blocked = _unreadable_as(creds)
    if blocked:
        path = blocked[0][0]
        return _refused(
            f"demos never run as root, and the demo user (uid {creds.uid}) cannot read "
            f"{path}, which Python needs: {_FIX}"
        )
    description = f"uid {creds.uid}, no capabilities"
    if exposed:
        description += f" (Python bound into a private mount over {', '.join(exposed)})"
    return DemoIsolation(creds, description)


def _refused(reason: str) -> DemoIsolation:
    return DemoIsolation(None, "refused: no unprivileged demo user can run Python", reason)


def needed_paths() -> list[str]:
    """What a demo child reads: the interpreter, its prefixes, the import path."""
    found = [
        os.path.dirname(os.path.realpath(sys.executable)),
        sys.base_prefix,
        sys.prefix,
        os.path.dirname(os.__file__),
        *_packages(),
        *sys.path,
    ]
    return list(dict.fromkeys(p for p in found if p and os.path.isdir(p)))


def _packages() -> list[str]:
    """The directories of the packages a demo child imports: an editable install imports
    them from the checkout through a finder, not through sys.path, and only they are
    exposed (never the checkout itself, which may hold the bot's SQLite file)."""
    found = []
    for name in CHILD_PACKAGES:
        spec = importlib.util.find_spec(name)
        found += list(spec.submodule_search_locations or []) if spec else []
    return [os.path.realpath(p) for p in found]


def _unreadable_as(creds: DemoCredentials) -> list[tuple[str, str]]:
    """Each needed path ``creds`` cannot read, with the first directory on its way that
    stops them (the path itself when it is closed), from a forked probe."""
    needed = needed_paths()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the probe child
        found: list[tuple[str, str]] = []
        try:
            drop_privileges(creds)
            for path in needed:
                if not os.access(path, os.R_OK | os.X_OK):
                    found.append((path, _first_closed(path)))
        except BaseException as exc:
            found = [(f"(the switch to uid {creds.uid} failed: {exc})", "")]
        finally:
            os.write(write, json.dumps(found).encode())
            os._exit(0)
    os.close(write)
    answer = b""
    while chunk := os.read(read, 65536):
        answer += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return [(str(path), str(closed)) for path, closed in json.loads(answer or b"[]")]


def _first_closed(path: str) -> str:
    """The first directory from ``/`` down that this process may not pass through."""
    parts = os.path.abspath(path).split(os.sep)[1:]
    for i in range(len(parts)):
        ancestor = os.sep + os.sep.join(parts[:i])
        if not os.access(ancestor, os.X_OK):
            return ancestor
    return path


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
    "drop_privileges",
    "is_non_dumpable",
    "make_non_dumpable",
    "needed_paths",
    "plan_isolation",
]
