"""Python's directories, shown to the demo user through a closed directory above them.

Where Python lives under a directory the demo user may not enter (``/root``, mode 0700),
the fork server (root) moves into a mount namespace of its own, covers that directory
with an empty tmpfs and binds Python's directories back into it, read-only, at their own
paths. The demo user then reaches Python and nothing else of that directory; the host's
mounts are untouched: the namespace is made private before anything is mounted in it,
and it ends with the fork server. Linux only (``unshare(CLONE_NEWNS)`` needs
``CAP_SYS_ADMIN``); every failure raises OSError and the caller refuses demos.
"""

from __future__ import annotations

import ctypes
import os
from typing import Final

CLONE_NEWNS: Final = 0x00020000
MS_RDONLY: Final = 1
MS_NOSUID: Final = 2
MS_NODEV: Final = 4
MS_REMOUNT: Final = 32
MS_BIND: Final = 4096
MS_REC: Final = 16384
MS_PRIVATE: Final = 1 << 18


def expose_read_only(needed: list[str], closed: list[str]) -> list[str]:
    """In this process: each directory of `closed` becomes an empty tmpfs holding only
    the `needed` paths below it, bound back read-only. Returns the covered directories."""
    plan = {c: _outermost([p for p in needed if _below(p, c)]) for c in closed}
    if not all(plan.values()) or any(c == os.sep for c in plan):
        raise OSError(f"nothing Python needs to expose under {sorted(plan)}")
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        raise _error("unshare(CLONE_NEWNS)")
    # First of all: mounts below must never propagate to the host's namespace.
    _mount(libc, None, os.sep, None, MS_REC | MS_PRIVATE)
    old_umask = os.umask(0o022)
    try:
        for directory, paths in plan.items():
            fds = [os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for p in paths]
            try:
                _mount(libc, "quizbot-demos", directory, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
                for path, fd in zip(paths, fds, strict=True):
                    os.makedirs(path, exist_ok=True)
                    _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
                    _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
            finally:
                for fd in fds:
                    os.close(fd)
    finally:
        os.umask(old_umask)
    return list(plan)


def _below(path: str, directory: str) -> bool:
    return os.path.commonpath([path, directory]) == directory and path != directory


def _outermost(paths: list[str]) -> list[str]:
    return [p for p in paths if not any(_below(p, other) for other in paths if other != p)]


def _libc() -> ctypes.CDLL:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        raise OSError(f"no C library to mount with: {exc}") from None


def _mount(
    libc: ctypes.CDLL,
    source: str | None,
    target: str,
    fstype: str | None,
    flags: int,
    data: str | None = None,
) -> None:
    def raw(text: str | None) -> bytes | None:
        return os.fsencode(text) if text is not None else None

    result = libc.mount(raw(source), raw(target), raw(fstype), ctypes.c_ulong(flags), raw(data))
    if result != 0:
        raise _error(f"mount {target}")


def _error(what: str) -> OSError:
    errno = ctypes.get_errno()
    return OSError(errno, f"{what} failed: {os.strerror(errno)}")


__all__ = ["expose_read_only"]
