"""The red team's clinic flood, re-run through the real path (the core's `Clinic`, the
local runner, a fork-server child): three members send a 0.6 MB snapshot that lists one
20,000-event trace thousands of times by reference, a fourth sends a valid one. Each
hostile file is refused in under 2 s by a child that stays under 200 MB, and the valid one
is answered within its own run time (measured alone in the same test), not after the
120 s runs that used to stand in front of it."""

from __future__ import annotations

import asyncio
import pickle
import time
from pathlib import Path

import pytest

from bot.clinic import ClinicJob
from bot.clinic_flow import Clinic
from bot.domain import Locale, Platform, UserRef
from bot.messages import Message
from bot.quiz import QuizService
from gpu_runner.executor import Executor
from gpu_runner.local import LocalRunner
from gpu_runner.wire import ClinicRequest
from tests.clinic import snapshots

MiB = 1 << 20
HOSTILE_SECONDS = 2.0  # the targets for one hostile file
HOSTILE_PEAK_MIB = 200.0
# The valid snapshot behind the hostile ones may take what it takes alone, twice over on a
# loaded machine, plus the three refusals at their bound: minutes would mean it queued
# behind runs that should have been refused.
MARGIN_S = 3 * HOSTILE_SECONDS


def hostile_files(tmp_path: Path) -> dict[str, bytes]:
    return {
        "thousands-of-devices.pickle": snapshots.repeated_by_reference(),
        "repeated-events.pickle": snapshots.repeated_by_reference(devices=60),
        "alloc-after-repeats.pickle": snapshots.repeated_by_reference(64, alloc_last=True),
    }


class Timed:
    """A member's private lines (`ClinicDelivery`), with when the answer came."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.answered: float | None = None
        self.answer = ""

    async def status(self, message: Message) -> None:
        pass

    async def result(self, message: Message) -> None:
        self.answered, self.answer = time.perf_counter(), message.body

    @property
    def seconds(self) -> float:
        assert self.answered is not None, "no answer"
        return self.answered - self.started


def job(tmp_path: Path, name: str, data: bytes, who: str) -> ClinicJob:
    path = tmp_path / f"upload-{who}-{name}"
    path.write_bytes(data)
    return ClinicJob.upload(path, Locale.EN, name=name, member=UserRef(Platform.SLACK, "T1", who))


async def examine(clinic: Clinic, j: ClinicJob) -> Timed:
    timed = Timed()
    await clinic.examine(j, timed)
    return timed


@pytest.mark.timeout(180)
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # `service` only
async def test_three_hostile_snapshots_do_not_hold_up_a_valid_one(
    clinic_executor: Executor, service: QuizService, tmp_path: Path
) -> None:
    runner = LocalRunner(executor=clinic_executor, clinic_max_bytes=100 * MiB)
    clinic = Clinic(runner, service)
    valid = pickle.dumps(snapshots.growing_batch())
    hostile = hostile_files(tmp_path)

    await examine(clinic, job(tmp_path, "warm.pickle", valid, "U0WARM"))  # a warm child
    alone = await examine(clinic, job(tmp_path, "train.pickle", valid, "U0VALID"))
    assert "expandable_segments:True" in alone.answer

    tasks = [
        asyncio.create_task(examine(clinic, job(tmp_path, name, data, f"U0BAD{i}")))
        for i, (name, data) in enumerate(hostile.items())
    ]
    await asyncio.sleep(0)  # the hostile ones are taken first, as the red team sent them
    tasks.append(asyncio.create_task(examine(clinic, job(tmp_path, "train.pickle", valid, "U0V"))))
    *refused, behind = await asyncio.gather(*tasks)

    for (name, _), timed in zip(hostile.items(), refused, strict=True):
        assert name in timed.answer
        assert "by reference" in timed.answer or "traces for 6,000 devices" in timed.answer
        assert timed.seconds < HOSTILE_SECONDS, f"{name}: {timed.seconds:.2f} s"
    assert "expandable_segments:True" in behind.answer
    assert behind.seconds <= 2 * alone.seconds + MARGIN_S, (behind.seconds, alone.seconds)
    assert list(tmp_path.glob("upload-*")) == []  # every upload deleted

    # The child's own figures for each refusal (its peak includes the fork server's pages).
    peaks = {}
    for name, data in hostile.items():
        path = tmp_path / name
        path.write_bytes(data)
        request = ClinicRequest(str(path), name, Locale.EN, 100 * MiB, None)
        ex = await asyncio.to_thread(clinic_executor.submit_clinic, request)
        await asyncio.wrap_future(ex.done)
        peaks[name] = ex.payload["resources"]["max_rss_mib"]
        assert ex.payload["reason"] in ("too_many_devices", "repeated_entries")
        assert peaks[name] < HOSTILE_PEAK_MIB, (name, ex.payload["resources"])
    print(
        f"\nhostile refusals {[round(t.seconds, 2) for t in refused]} s, child peaks {peaks} "
        f"MiB; valid alone {alone.seconds:.2f} s, behind the hostile ones {behind.seconds:.2f} s"
    )
