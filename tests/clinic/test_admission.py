"""Admission to the memory clinic, in the core: one snapshot per member in flight, at most
``QUIZBOT_CLINIC_MAX_JOBS`` per bot process; a job turned away gets one private line and
its upload is deleted. The runner here is a fake at the edge: it holds each job until the
test lets it finish."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.clinic import ClinicJob, ClinicResult, ProgressCallback
from bot.clinic_flow import Clinic, ClinicAdmission
from bot.config import load_settings
from bot.domain import Locale, Platform, UserRef
from bot.errors import ConfigError
from bot.messages import Message
from bot.quiz import QuizService

ON_SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # for `service`


def member(name: str) -> UserRef:
    return UserRef(Platform.SLACK, "T1", name)


class HeldRunner:
    """Starts every job and finishes it when the test says so."""

    enabled = True

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release: dict[str, asyncio.Event] = {}

    async def run_clinic(
        self, job: ClinicJob, progress: ProgressCallback | None = None
    ) -> ClinicResult:
        self.started.append(job.name)
        gate = self.release.setdefault(job.name, asyncio.Event())
        try:
            await gate.wait()
        finally:
            job.discard()  # as the real runners do, whatever happened
        return ClinicResult(f"done {job.name}", "text", "table", None, None)


class Lines:
    def __init__(self) -> None:
        self.statuses: list[str] = []
        self.results: list[Message] = []

    async def status(self, message: Message) -> None:
        self.statuses.append(message.body)

    async def result(self, message: Message) -> None:
        self.results.append(message)


def upload(tmp_path: Path, name: str, who: UserRef | None, locale: Locale = Locale.EN) -> ClinicJob:
    path = tmp_path / f"upload-{name}"
    path.write_bytes(b"\x80\x04.")
    return ClinicJob.upload(path, locale, name=name, member=who)


async def until(condition: object, what: str) -> None:
    """Poll (event-loop turns, no clock) until `condition()` holds."""
    for _ in range(1000):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never: {what}")


@ON_SQLITE
async def test_a_members_second_snapshot_waits_for_the_first_and_is_deleted(
    service: QuizService, tmp_path: Path
) -> None:
    runner = HeldRunner()
    clinic = Clinic(runner, service)
    ann = member("U0ANN")
    first, second = Lines(), Lines()
    running = asyncio.create_task(clinic.examine(upload(tmp_path, "a.pickle", ann), first))
    await until(lambda: runner.started == ["a.pickle"], "the first job starts")
    busy = upload(tmp_path, "b.pickle", ann, Locale.EL)
    await clinic.examine(busy, second)
    assert runner.started == ["a.pickle"]  # never sent to the runner
    assert not Path(str(busy.snapshot)).exists()
    (line,) = second.results
    assert "b.pickle" in line.body and "a.pickle" in line.body and "ελέγχεται ακόμη" in line.body
    assert second.statuses == []
    runner.release["a.pickle"].set()
    await running
    assert first.results[-1].title == "done a.pickle"
    # Once the first answer is out, the member may send another.
    third = Lines()
    runner.release["c.pickle"] = asyncio.Event()
    runner.release["c.pickle"].set()
    await clinic.examine(upload(tmp_path, "c.pickle", ann), third)
    assert third.results[-1].title == "done c.pickle"
    assert clinic.admission.jobs == 0


@ON_SQLITE
async def test_a_full_clinic_asks_to_try_again_and_frees_a_place_when_a_job_ends(
    service: QuizService, tmp_path: Path
) -> None:
    runner = HeldRunner()
    clinic = Clinic(runner, service, max_jobs=2)
    lines = {name: Lines() for name in ("1", "2", "3", "4")}
    tasks = [
        asyncio.create_task(clinic.examine(upload(tmp_path, n, member(f"U{n}")), lines[n]))
        for n in ("1", "2")
    ]
    await until(lambda: len(runner.started) == 2, "two jobs run")
    turned_away = upload(tmp_path, "3", member("U3"))
    await clinic.examine(turned_away, lines["3"])
    (line,) = lines["3"].results
    assert "busy with 2 snapshots" in line.body and "`3`" in line.body
    assert "few minutes" in line.body and not Path(str(turned_away.snapshot)).exists()
    assert runner.started == ["1", "2"]
    runner.release["1"].set()
    await tasks[0]
    fourth = asyncio.create_task(clinic.examine(upload(tmp_path, "4", None), lines["4"]))
    await until(lambda: runner.started == ["1", "2", "4"], "a freed place is taken")
    runner.release["2"].set()
    runner.release["4"].set()
    await asyncio.gather(tasks[1], fourth)
    assert [lines[n].results[-1].title for n in ("1", "2", "4")] == ["done 1", "done 2", "done 4"]


@ON_SQLITE
async def test_a_job_that_fails_gives_its_place_back(service: QuizService, tmp_path: Path) -> None:
    class Broken(HeldRunner):
        async def run_clinic(
            self, job: ClinicJob, progress: ProgressCallback | None = None
        ) -> ClinicResult:
            raise RuntimeError("the runner fell over")

    clinic = Clinic(Broken(), service, max_jobs=1)
    ann = member("U0ANN")
    for name in ("a", "b"):
        lines = Lines()
        await clinic.examine(upload(tmp_path, name, ann), lines)
        assert "busy" not in lines.results[-1].body and "still being" not in lines.results[-1].body
    assert clinic.admission.jobs == 0


def test_clinic_max_jobs_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().clinic_max_jobs == 4
    monkeypatch.setenv("QUIZBOT_CLINIC_MAX_JOBS", "12")
    assert load_settings().clinic_max_jobs == 12
    monkeypatch.setenv("QUIZBOT_CLINIC_MAX_JOBS", "0")
    with pytest.raises(ConfigError, match="QUIZBOT_CLINIC_MAX_JOBS"):
        load_settings()
    with pytest.raises(ValueError, match="at least 1"):
        ClinicAdmission(0)
