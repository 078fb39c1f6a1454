"""The core's clinic values: options, the size cap, progress relayed to a slow chat."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.clinic import (
    ClinicInputError,
    ClinicJob,
    ClinicProgress,
    ClinicStage,
    ProgressRelay,
    Rejection,
    check_snapshot_size,
    gpu_memory_from_gib,
)
from bot.config import load_settings
from bot.domain import Locale
from bot.errors import ConfigError


def replaying(done: int) -> ClinicProgress:
    return ClinicProgress(ClinicStage.REPLAYING, done, 7)


async def test_a_slow_callback_gets_the_latest_progress_not_a_backlog() -> None:
    gate = asyncio.Event()
    seen: list[ClinicProgress] = []

    async def edit_message(progress: ClinicProgress) -> None:
        seen.append(progress)
        await gate.wait()  # the platform is slow to edit

    relay = ProgressRelay(edit_message)
    relay.push(ClinicProgress(ClinicStage.QUEUED))
    await asyncio.sleep(0)  # the first edit starts
    for done in range(1, 6):
        relay.push(replaying(done))
    gate.set()
    await relay.drain()
    assert seen == [ClinicProgress(ClinicStage.QUEUED), replaying(5)]


async def test_a_failing_callback_does_not_stop_the_updates() -> None:
    seen: list[ClinicProgress] = []

    async def flaky(progress: ClinicProgress) -> None:
        seen.append(progress)
        if progress.stage is ClinicStage.QUEUED:
            raise RuntimeError("message deleted")

    relay = ProgressRelay(flaky)
    relay.push(ClinicProgress(ClinicStage.QUEUED))
    await relay.drain()
    relay.push(replaying(1))
    relay.push(replaying(1))  # a repeat is not sent twice
    await relay.drain()
    assert seen == [ClinicProgress(ClinicStage.QUEUED), replaying(1)]


def test_gpu_memory_option_in_gib() -> None:
    assert gpu_memory_from_gib("80", Locale.EN) == 80 << 30
    assert gpu_memory_from_gib(141.5, Locale.EN) == int(141.5 * (1 << 30))
    for bad in ("eighty", "0", "-4", "nan", "inf", "100000"):
        with pytest.raises(ClinicInputError) as caught:
            gpu_memory_from_gib(bad, Locale.EN)
        assert caught.value.reason is Rejection.BAD_GPU_MEMORY
        assert repr(bad) in str(caught.value)


def test_the_size_cap_names_the_size_the_limit_and_the_setting() -> None:
    check_snapshot_size(100 << 20, 100 << 20, "a.pickle", Locale.EN)  # at the cap: fine
    with pytest.raises(ClinicInputError) as caught:
        check_snapshot_size(150 << 20, 100 << 20, "a.pickle", Locale.EN)
    message = str(caught.value)
    assert "a.pickle is 150 MiB" in message and "100 MiB (QUIZBOT_CLINIC_MAX_MB)" in message


def test_only_an_upload_is_discarded(tmp_path: Path) -> None:
    mine, upload = tmp_path / "mine.pickle", tmp_path / "upload.pickle"
    mine.write_bytes(b"x")
    upload.write_bytes(b"x")
    ClinicJob.local_file(mine, Locale.EN).discard()
    ClinicJob.upload(upload, Locale.EN).discard()
    ClinicJob.upload(upload, Locale.EN).discard()  # already gone: fine
    assert mine.exists() and not upload.exists()


def test_clinic_max_mb_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUIZBOT_CLINIC_MAX_MB", "250")
    assert load_settings().clinic_max_bytes == 250 << 20
    monkeypatch.setenv("QUIZBOT_CLINIC_MAX_MB", "0")
    with pytest.raises(ConfigError, match="QUIZBOT_CLINIC_MAX_MB"):
        load_settings()
