"""A member's file on its way to a feature (the clinic's snapshot, a question file): a
private temporary file, whatever the platform it came from."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def private_temp_file(name: str) -> Path:
    """A new empty file only this process's user can read (mkstemp: mode 0600); the
    member's name is kept as a suffix for the logs, without any path in it."""
    suffix = "-" + "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[-60:]
    fd, path = tempfile.mkstemp(prefix="quizbot-", suffix=suffix)
    os.close(fd)
    return Path(path)


__all__ = ["private_temp_file"]
