"""The memory clinic on Discord: `/quiz clinic snapshot:<file> [gpu_memory:<GiB>]`. The
attachment (resolved in the command itself) is size-checked before anything is
downloaded, the command is deferred privately, the file is streamed into a private
temporary file and analysed on the runner (a real fork-server child); the deferred reply
is edited with the progress, then the table, the line to copy and the PNG."""

from __future__ import annotations

import asyncio
import pickle
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from pathlib import Path

import pytest

from adapters.discord.files import private_temp_file, resolved_attachment
from bot import basics, clinic_flow
from bot.clock import FakeClock
from bot.config import Settings
from bot.features import Feature, Parts, Quiz
from bot.intake import FileRoute, FileWork, PrivateReply, SentFile
from gpu_runner.executor import Executor, ExecutorConfig
from gpu_runner.local import LocalRunner
from tests.adapters.discord.conftest import QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord, Json
from tests.adapters.discord.helpers import answered_at_once, edits, final_edit, text_of
from tests.clinic import snapshots
from tests.clinic.test_input import bad_files

MiB = 1 << 20
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    with Executor(ExecutorConfig(torch=False, clinic_timeout=60.0)) as ex:
        yield ex


ClinicQuiz = Callable[..., AbstractAsyncContextManager[Quiz]]


@pytest.fixture
def clinic(quiz_with: QuizWith, executor: Executor) -> ClinicQuiz:
    """``async with clinic(cap) as quiz``: the quiz with the memory clinic, on a local
    runner (the module's fork server) taking snapshots up to `cap` bytes
    (QUIZBOT_CLINIC_MAX_MB)."""

    def make(cap: int = 10 * MiB) -> AbstractAsyncContextManager[Quiz]:
        runner = LocalRunner(executor=executor, clinic_max_bytes=cap)
        settings = Settings(ask_cooldown=0, clinic_max_mb=cap // MiB)
        return quiz_with(basics.feature, clinic_flow.feature, runner=runner, settings=settings)

    return make


def unique(suffix: str = ".pickle") -> str:
    return f"snap-{uuid.uuid4().hex[:8]}{suffix}"


@both_modes
async def test_a_snapshot_attached_to_quiz_clinic_gets_a_private_report_with_its_plot(
    fake: FakeDiscord, run_adapter: Runner, clinic: ClinicQuiz
) -> None:
    name = unique()
    snapshot = fake.attach(name, pickle.dumps(snapshots.growing_batch()))
    async with clinic() as quiz, run_adapter(quiz=quiz) as adapter:
        inter = await fake.command("clinic", {"snapshot": snapshot}, user_id="7901")
        done = await final_edit(fake, inter, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
        await adapter.idle()
        assert await adapter.path.deliveries.replay_due() == 0  # marked done
    (callback,) = fake.callbacks(inter)
    assert callback.json == {"type": 5, "data": {"flags": EPHEMERAL}}  # private, at once
    texts = [text_of(c.json) for c in edits(fake, inter)]
    assert f"Analysing `{name}`" in texts[0]
    assert any("replaying under" in t for t in texts)  # progress, edited in place
    assert done is edits(fake, inter)[-1]
    # The plot is attached to the final edit and shown in its embed.
    assert done.files and done.files[0][0] == "memory-clinic.png" and done.files[0][1] > 1000
    assert done.json["attachments"][0]["filename"] == "memory-clinic.png"
    assert done.json["embeds"][0]["image"]["url"] == "attachment://memory-clinic.png"
    # Downloaded once; nothing said in the channel; the temporary file is gone.
    assert fake.downloads == [snapshot["id"]]
    assert fake.of("POST", r"/channels/\d+/messages") == []
    assert list(Path(tempfile.gettempdir()).glob(f"quizbot-*{name}")) == []


async def test_bad_snapshots_each_get_one_clear_private_line(
    fake: FakeDiscord, run_adapter: Runner, clinic: ClinicQuiz, tmp_path: Path
) -> None:
    files = bad_files(tmp_path)
    cases = {
        "text": "is not a pickle file",
        "truncated": "is cut short",
        "callable": "was refused before anything in it ran",
        "no device_traces": "was recorded without memory history",
    }
    async with clinic() as quiz, run_adapter(quiz=quiz) as adapter:
        sent = []
        for n, (case, expected) in enumerate(cases.items()):
            attached = fake.attach(unique(), files[case][0])
            # one member each: a member's second snapshot waits for their first
            inter = await fake.command("clinic", {"snapshot": attached}, user_id=f"792{n}")
            sent.append((inter, attached, expected))
        for inter, attached, expected in sent:
            done = await final_edit(fake, inter, expected)
            assert attached["filename"] in text_of(done.json) and not done.files
        await adapter.idle()
    assert not (tmp_path / "ran").exists()  # nothing in the refused pickle ran


@both_modes
async def test_a_members_second_snapshot_waits_for_the_first(
    fake: FakeDiscord, run_adapter: Runner, clinic: ClinicQuiz
) -> None:
    data = pickle.dumps(snapshots.growing_batch())
    first, second = fake.attach(unique(), data), fake.attach(unique(), data)
    async with clinic() as quiz, run_adapter(quiz=quiz) as adapter:
        one = await fake.command("clinic", {"snapshot": first}, user_id="7940")
        two = await fake.command("clinic", {"snapshot": second}, user_id="7940")

        def texts(inter: Json) -> list[str]:
            # Refused before its download (the initial response), or after it (an edit).
            answers = [c.json.get("data") or {} for c in fake.callbacks(inter)]
            return [text_of(a) for a in answers] + [text_of(c.json) for c in edits(fake, inter)]

        def said(expected: str) -> list[Json]:
            return [i for i in (one, two) if any(expected in t for t in texts(i))]

        await fake.until(lambda: said("is still being checked") and said("expandable_segments"))
        await adapter.idle()
    (waited,), (analysed,) = said("is still being checked"), said("expandable_segments")
    assert waited is not analysed
    name = (first if analysed is one else second)["filename"]
    assert name in texts(waited)[-1]  # it names the one in the clinic


@both_modes
async def test_what_can_be_refused_before_the_download_is_refused_at_once(
    fake: FakeDiscord, run_adapter: Runner, clinic: ClinicQuiz
) -> None:
    good = pickle.dumps(snapshots.well_packed(2))
    huge = fake.attach("huge.pickle", good, size=50 * MiB)  # as Discord announces it
    odd_gpu = fake.attach("ok.pickle", good)
    async with clinic(cap=1 * MiB) as quiz, run_adapter(quiz=quiz) as adapter:
        inter = await fake.command("clinic", {"snapshot": huge}, user_id="7903")
        assert "huge.pickle is 50 MiB, over the clinic's limit of 1.0 MiB" in (
            await answered_at_once(fake, inter)
        )
        options = {"snapshot": odd_gpu, "gpu_memory": 0.5}
        inter = await fake.command("clinic", options, user_id="7903")
        assert "gpu_memory '0.5' is not a size in GiB" in await answered_at_once(fake, inter)
        await adapter.idle()
    assert fake.downloads == []  # neither file was fetched


async def test_a_file_larger_than_announced_stops_downloading_at_the_cap(
    fake: FakeDiscord, run_adapter: Runner, clinic: ClinicQuiz
) -> None:
    liar = fake.attach(unique(), bytes(2 * MiB), size=10)
    async with clinic(cap=1 * MiB) as quiz, run_adapter(quiz=quiz) as adapter:
        inter = await fake.command("clinic", {"snapshot": liar}, user_id="7904")
        done = await final_edit(fake, inter, "could not download")
        assert "larger than its announced size" in text_of(done.json)
        await adapter.idle()
    assert list(Path(tempfile.gettempdir()).glob(f"quizbot-*{liar['filename']}")) == []


async def test_with_the_runner_off_the_clinic_says_so_without_downloading(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith
) -> None:
    attached = fake.attach("train.pickle", pickle.dumps(snapshots.well_packed(2)))
    # No runner given: QUIZBOT_RUNNER=off's.
    async with quiz_with(basics.feature, clinic_flow.feature) as quiz, run_adapter(quiz=quiz):
        inter = await fake.command("clinic", {"snapshot": attached}, user_id="7905")
        assert "QUIZBOT_RUNNER=off" in await answered_at_once(fake, inter)
    assert fake.downloads == []


@pytest.mark.parametrize("forged", ["missing", "http://cdn.example/x.pickle"])
async def test_only_a_file_resolved_in_the_command_itself_is_fetched(
    fake: FakeDiscord, run_adapter: Runner, clinic: ClinicQuiz, forged: str
) -> None:
    attached = fake.attach("train.pickle", b"data")
    if forged == "missing":
        attached = {**attached, "id": "123456789"}  # not the id Discord resolved
        payload = _command_with(fake, attached, resolved={})
    else:
        payload = _command_with(fake, {**attached, "url": forged})
    async with clinic() as quiz, run_adapter(quiz=quiz):
        await fake.dispatch("INTERACTION_CREATE", payload)
        assert "did not arrive with the command" in await answered_at_once(fake, payload)
    assert fake.downloads == []


def _command_with(
    fake: FakeDiscord, attached: Json, resolved: dict[str, Json] | None = None
) -> Json:
    option = {"name": "snapshot", "type": 11, "value": attached["id"]}
    data: Json = {
        "id": "1",
        "name": "quiz",
        "type": 1,
        "options": [{"name": "clinic", "type": 1, "options": [option]}],
        "resolved": {"attachments": {attached["id"]: attached} if resolved is None else resolved},
    }
    return fake.interaction(2, data, user_id="7906")


async def test_a_restart_runs_a_clinic_request_whose_process_died(
    fake: FakeDiscord,
    run_adapter: Runner,
    quiz_with: QuizWith,
    clinic: ClinicQuiz,
    clock: FakeClock,
) -> None:
    attached = fake.attach(unique(), pickle.dumps(snapshots.growing_batch()))

    async def hangs(sent: SentFile) -> FileWork:
        async def work(path: Path, reply: PrivateReply) -> None:
            await asyncio.Event().wait()  # the process is killed while this runs

        return work

    def hanging(parts: Parts) -> Feature:
        route = FileRoute("clinic", "snapshot", 10 * MiB, lambda name: True, hangs)
        return Feature("hanging clinic", files=[route])

    async with quiz_with(basics.feature, hanging) as quiz, run_adapter(quiz=quiz) as first:
        inter = await fake.command("clinic", {"snapshot": attached}, user_id="7907")
        await fake.until(lambda: len(fake.downloads) == 1)
        await first.tasks.cancel()  # as `kill -9` would
    clock.advance(timedelta(seconds=61))  # the dead handler's lease has passed
    async with clinic() as quiz, run_adapter(quiz=quiz) as second:
        assert await second.path.deliveries.replay_due() == 1
        await final_edit(fake, inter, "PYTORCH_CUDA_ALLOC_CONF=")
        await second.idle()
    assert fake.downloads == [attached["id"]] * 2


def test_the_temporary_file_is_private_and_named_without_a_path() -> None:
    path = private_temp_file("../../etc/passwd x.pickle")
    try:
        assert path.stat().st_mode & 0o077 == 0
        assert path.parent == Path(tempfile.gettempdir())
        assert path.name.endswith("-.._.._etc_passwd_x.pickle")
    finally:
        path.unlink()


@pytest.mark.parametrize(
    "resolved",
    [
        None,
        [],
        {"attachments": []},
        {"attachments": {"9": {"filename": "a.pickle", "url": "https://cdn/a"}}},  # no size
        {"attachments": {"9": {"filename": "a.pickle", "url": "https://cdn/a", "size": True}}},
        {"attachments": {"9": {"filename": "", "url": "https://cdn/a", "size": 3}}},
        {"attachments": {"8": {"filename": "a.pickle", "url": "https://cdn/a", "size": 3}}},
    ],
)
def test_an_attachment_not_resolved_in_the_command_is_none(resolved: object) -> None:
    data: Json = {"id": "1", "name": "quiz", "resolved": resolved}
    assert resolved_attachment(data, "9") is None  # type: ignore[arg-type]
    good = {"attachments": {"9": {"filename": "a.pickle", "url": "https://cdn/a", "size": 3}}}
    assert resolved_attachment({**data, "resolved": good}, "9") is not None  # type: ignore[arg-type]
