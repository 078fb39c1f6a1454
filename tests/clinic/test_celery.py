"""The clinic through Celery: a real worker (in-process thread) on the local Redis; the
snapshot travels with the task and nothing is left in the result backend."""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clinic import ClinicInputError, ClinicJob, ClinicStage, Rejection
from bot.domain import Locale
from gpu_runner.celery_runner import CeleryRunner, DemoCeleryApp, make_celery_app
from gpu_runner.executor import Executor
from tests.clinic import snapshots
from tests.fakes import ProgressLog
from tests.runner.conftest import redis_url  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.redis,
    # Celery 5.7's Redis result backend still calls redis-py's deprecated `setex`.
    pytest.mark.filterwarnings("ignore:Call to deprecated setex:DeprecationWarning"),
]
WORKER_CAP = 1 << 20


@pytest.fixture
def clinic_app(redis_url: str, clinic_executor: Executor) -> Iterator[DemoCeleryApp]:  # noqa: F811
    from celery.contrib.testing.worker import start_worker

    app = make_celery_app(
        redis_url,
        queue=f"quizbot-test-{uuid.uuid4().hex[:8]}",
        executor=lambda: clinic_executor,
        result_expires=600,
        clinic_max_bytes=WORKER_CAP,
    )
    with start_worker(
        app.app, pool="solo", perform_ping_check=False, loglevel="WARNING", shutdown_timeout=10
    ):
        yield app


def stored_keys(app: DemoCeleryApp) -> list[bytes]:
    client = app.app.backend.client
    return [k for k in client.keys(f"*quizbot-clinic-{app.queue}-*")]


async def test_a_snapshot_travels_with_the_task_and_its_result_is_forgotten(
    clinic_app: DemoCeleryApp, tmp_path: Path
) -> None:
    upload = snapshots.write(tmp_path / "upload.pickle", snapshots.growing_batch())
    seen = ProgressLog()
    runner = CeleryRunner(clinic_app, clinic_max_bytes=10 << 20, clinic_wait=60.0)
    result = await runner.run_clinic(ClinicJob.upload(upload, Locale.EN, name="j.pickle"), seen)
    assert not upload.exists()
    assert result.recommendation == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    assert result.png is not None and result.png.startswith(b"\x89PNG")
    assert seen[0].stage is ClinicStage.QUEUED and seen[-1].stage is ClinicStage.DONE
    assert stored_keys(clinic_app) == []


async def test_the_workers_own_cap_refuses_a_bigger_snapshot(clinic_app: DemoCeleryApp) -> None:
    data = pickle.dumps(snapshots.well_packed(repeats=4000))
    assert len(data) > WORKER_CAP
    runner = CeleryRunner(clinic_app, clinic_max_bytes=len(data), clinic_wait=60.0)
    with pytest.raises(ClinicInputError) as caught:
        await runner.run_clinic(ClinicJob(data, Locale.EN, name="big.pickle"))
    assert caught.value.reason is Rejection.TOO_LARGE
    assert "big.pickle" in str(caught.value)
    assert stored_keys(clinic_app) == []


async def test_a_bad_file_comes_back_as_the_members_message(clinic_app: DemoCeleryApp) -> None:
    runner = CeleryRunner(clinic_app, clinic_wait=60.0)
    with pytest.raises(ClinicInputError) as caught:
        await runner.run_clinic(ClinicJob(pickle.dumps({"segments": []}), Locale.EL))
    assert caught.value.reason is Rejection.NO_HISTORY
    assert "_record_memory_history()" in str(caught.value)
