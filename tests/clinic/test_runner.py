"""The clinic through the local runner: a real fork-server child reads the file, the bot
gets the result, progress and the member's errors, and the upload is gone afterwards."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path

import pytest

from bot.clinic import (
    ClinicFailedError,
    ClinicInputError,
    ClinicJob,
    ClinicStage,
    ClinicUnavailableError,
    Rejection,
)
from bot.demo_runner import OffRunner
from bot.domain import Locale
from gpu_runner.executor import Executor, ExecutorConfig
from gpu_runner.local import LocalRunner
from tests.clinic import snapshots
from tests.clinic.test_input import bad_files
from tests.fakes import ProgressLog

MiB = 1 << 20


def runner(executor: Executor, cap: int = 10 * MiB) -> LocalRunner:
    # not entered: the session's executor outlives each test
    return LocalRunner(executor=executor, clinic_max_bytes=cap)


async def test_an_uploaded_snapshot_is_analysed_in_a_child_and_then_deleted(
    clinic_executor: Executor, tmp_path: Path
) -> None:
    upload = snapshots.write(tmp_path / "upload-1234.pickle", snapshots.growing_batch())
    seen = ProgressLog()
    job = ClinicJob.upload(upload, Locale.EN, name="train.pickle")
    result = await runner(clinic_executor).run_clinic(job, seen)
    assert not upload.exists()
    assert result.recommendation == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    assert result.title == "expandable removes the OOM of the recorded settings"
    assert result.png is not None and result.png.startswith(b"\x89PNG")
    assert "train.pickle" in result.text  # the member's name, never the upload's path
    assert str(tmp_path) not in result.text
    assert result.summary["configs"][0]["label"] == "recorded"
    stages = [p.stage for p in seen]
    assert stages[0] is ClinicStage.QUEUED and stages[-1] is ClinicStage.DONE
    replaying = [p for p in seen if p.stage is ClinicStage.REPLAYING]
    assert replaying and replaying[-1].done == replaying[-1].total >= 6
    assert [p.done for p in replaying] == sorted(p.done for p in replaying)


async def test_bytes_go_through_a_private_file_that_is_removed(
    clinic_executor: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    data = pickle.dumps(snapshots.growing_batch())
    result = await runner(clinic_executor).run_clinic(ClinicJob(data, Locale.EL))
    assert result.recommendation == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    assert "δεσμευμένη (reserved)" in result.text
    assert list(tmp_path.iterdir()) == []


async def test_a_members_own_file_is_read_and_kept(
    clinic_executor: Executor, tmp_path: Path
) -> None:
    path = snapshots.write(tmp_path / "mine.pickle", snapshots.well_packed())
    job = ClinicJob.local_file(path, Locale.EN, gpu_memory=4 << 30)
    result = await runner(clinic_executor).run_clinic(job)
    assert path.exists()
    assert result.recommendation is None and result.summary["finding"] == "little_waste"


@pytest.mark.parametrize("case", ["text", "truncated", "callable", "no device_traces"])
async def test_a_bad_upload_gets_the_members_message_and_is_deleted(
    clinic_executor: Executor, tmp_path: Path, case: str
) -> None:
    data, reason = bad_files(tmp_path)[case]
    upload = tmp_path / "upload.pickle"
    upload.write_bytes(data)
    with pytest.raises(ClinicInputError) as caught:
        await runner(clinic_executor).run_clinic(ClinicJob.upload(upload, Locale.EL))
    assert caught.value.reason is reason
    assert "upload.pickle" in str(caught.value)
    assert not upload.exists()
    assert not (tmp_path / "ran").exists()  # the callable was never called


async def test_a_file_over_the_cap_is_refused_before_any_child_runs(tmp_path: Path) -> None:
    closed = Executor(ExecutorConfig(torch=False))
    closed.close()  # anything submitted would fail with ExecutorClosed
    upload = snapshots.write(tmp_path / "big.pickle", snapshots.well_packed())
    with pytest.raises(ClinicInputError) as caught:
        await runner(closed, cap=1024).run_clinic(ClinicJob.upload(upload, Locale.EN))
    assert caught.value.reason is Rejection.TOO_LARGE
    assert "QUIZBOT_CLINIC_MAX_MB" in str(caught.value)
    assert not upload.exists()
    with pytest.raises(ClinicInputError):
        await runner(closed, cap=1024).run_clinic(ClinicJob(b"x" * 2048, Locale.EN))


async def test_a_run_past_the_timeout_is_stopped_and_the_file_still_deleted(
    tmp_path: Path,
) -> None:
    upload = snapshots.write(tmp_path / "slow.pickle", snapshots.growing_batch())
    with (
        Executor(ExecutorConfig(torch=False, clinic_timeout=0.05)) as quick,
        pytest.raises(ClinicFailedError) as caught,
    ):
        await runner(quick).run_clinic(ClinicJob.upload(upload, Locale.EN))
    assert "did not finish within 0.05 s" in str(caught.value)
    assert not upload.exists()


async def test_the_off_runner_says_so_and_deletes_the_upload(tmp_path: Path) -> None:
    upload = snapshots.write(tmp_path / "u.pickle", snapshots.well_packed())
    with pytest.raises(ClinicUnavailableError) as caught:
        await OffRunner().run_clinic(ClinicJob.upload(upload, Locale.EN))
    assert "Demos and the memory clinic are off on this bot (QUIZBOT_RUNNER=off)" in str(
        caught.value
    )
    assert not upload.exists()


async def test_a_runner_that_cannot_start_is_a_clinic_failure(tmp_path: Path) -> None:
    closed = Executor(ExecutorConfig(torch=False))
    closed.close()
    upload = snapshots.write(tmp_path / "u.pickle", snapshots.well_packed())
    with pytest.raises(ClinicFailedError, match="could not finish: the executor is closed"):
        await runner(closed).run_clinic(ClinicJob.upload(upload, Locale.EN))
    assert not upload.exists()
