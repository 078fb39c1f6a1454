"""The bot side of a clinic run, shared by the local and the Celery runner: staging the
snapshot (size cap, a private file, deletion), progress, and the child's result document
turned into a `ClinicResult` or the member's error."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.clinic import (
    ClinicJob,
    ClinicProgress,
    ClinicResult,
    ClinicStage,
    ProgressRelay,
    Rejection,
    check_snapshot_size,
    clinic_failed_error,
    rejection,
)
from bot.domain import DemoState, Locale


@dataclass(frozen=True, slots=True)
class StagedSnapshot:
    """The job's snapshot as a file the runner's child can read."""

    path: Path
    job: ClinicJob
    private_dir: Path | None  # ours to remove: the bytes were written here

    def remove(self) -> None:
        """Delete what this run may not keep: our copy, and an uploaded file."""
        if self.private_dir is not None:
            shutil.rmtree(self.private_dir, ignore_errors=True)
        self.job.discard()


def stage_snapshot(job: ClinicJob, max_bytes: int) -> StagedSnapshot:
    """Check the size cap and give the snapshot a path (bytes go to a private 0600 file).

    Raises `ClinicInputError` over the cap, `ClinicFailedError` when the file is
    unreadable; either way an uploaded file is deleted first.
    """
    try:
        if isinstance(job.snapshot, bytes):
            check_snapshot_size(len(job.snapshot), max_bytes, job.name, job.locale)
            private = Path(tempfile.mkdtemp(prefix="quizbot-clinic-"))  # mode 0700
            path = private / "snapshot.pickle"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(job.snapshot)
            return StagedSnapshot(path, job, private)
        try:
            size = job.snapshot.stat().st_size
        except OSError as exc:
            raise clinic_failed_error(
                job.locale, timed_out=False, error=f"cannot read {job.name}: {exc.strerror}"
            ) from None
        check_snapshot_size(size, max_bytes, job.name, job.locale)
        return StagedSnapshot(job.snapshot, job, None)
    except BaseException:
        job.discard()
        raise


def read_snapshot_bytes(job: ClinicJob, max_bytes: int) -> bytes:
    """The snapshot's bytes, for a runner that ships them (Celery); deletes an upload."""
    staged = stage_snapshot(job, max_bytes)
    try:
        with open(staged.path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise clinic_failed_error(
            job.locale, timed_out=False, error=f"cannot read {job.name}: {exc.strerror}"
        ) from None
    finally:
        staged.remove()
    check_snapshot_size(len(data), max_bytes, job.name, job.locale)
    return data


def progress_of(doc: Mapping[str, Any]) -> ClinicProgress | None:
    """A child's progress line as a `ClinicProgress` (None if it is not one)."""
    try:
        return ClinicProgress(
            ClinicStage(str(doc.get("stage"))),
            int(doc.get("done") or 0),
            int(doc.get("total") or 0),
        )
    except (ValueError, TypeError):
        return None


def threadsafe_progress(relay: ProgressRelay) -> Callable[[Mapping[str, Any]], None]:
    """A callback for another thread that hands progress lines to `relay` on this loop."""
    loop = asyncio.get_running_loop()

    def push(doc: Mapping[str, Any]) -> None:
        progress = progress_of(doc)
        if progress is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody is listening
                loop.call_soon_threadsafe(relay.push, progress)

    return push


def clinic_result(payload: Mapping[str, Any], locale: Locale) -> ClinicResult:
    """The child's result document as a `ClinicResult`; a refusal or a failure raises
    `ClinicInputError` / `ClinicFailedError` in `locale`."""
    state = str(payload.get("state") or DemoState.FAILED)
    if state == DemoState.SUCCEEDED:
        png = payload.get("png_b64")
        summary = payload.get("summary")
        recommendation = payload.get("recommendation")
        return ClinicResult(
            title=str(payload.get("title") or ""),
            text=str(payload.get("text") or ""),
            table=str(payload.get("table") or ""),
            recommendation=str(recommendation) if recommendation else None,
            png=base64.b64decode(png) if png else None,
            summary=dict(summary) if isinstance(summary, Mapping) else {},
        )
    reason = payload.get("reason")
    detail = payload.get("detail")
    if reason in {r.value for r in Rejection}:
        raise rejection(Rejection(reason), locale, detail if isinstance(detail, Mapping) else {})
    error = str(payload.get("error") or "no result")
    raise clinic_failed_error(locale, timed_out=state == DemoState.TIMED_OUT, error=error)
