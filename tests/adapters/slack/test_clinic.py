"""The memory clinic on Slack: a member shares a snapshot in the bot's DM (an Events API
``message.im`` with a file), the bot downloads it from ``url_private`` with its token,
analyses it on the runner (a real fork-server child) and answers in the DM — a status line
edited as it goes, then the table, the line to copy and the plot."""

from __future__ import annotations

import json
import pickle
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot import basics, clinic_flow
from bot.config import Settings
from gpu_runner.executor import Executor, ExecutorConfig
from gpu_runner.local import LocalRunner
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import SlackHttp, SlackWith
from tests.adapters.slack.fake_slack import FakeSlack
from tests.clinic import snapshots

MiB = 1 << 20


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    with Executor(ExecutorConfig(torch=False, clinic_timeout=60.0)) as ex:
        yield ex


@pytest.fixture
def cap() -> int:
    """The clinic's size limit (QUIZBOT_CLINIC_MAX_MB); a test sets its own by
    parametrizing `cap`."""
    return 10 * MiB


@pytest.fixture
async def http_slack(
    slack_with: SlackWith, executor: Executor, cap: int
) -> AsyncIterator[SlackHttp]:
    """With the memory clinic, on a local runner (the module's fork server)."""
    runner = LocalRunner(executor=executor, clinic_max_bytes=cap)
    settings = Settings(ask_cooldown=30, clinic_max_mb=cap // MiB)
    async with slack_with(
        basics.feature, clinic_flow.feature, runner=runner, settings=settings
    ) as http:
        yield http


async def share(http: SlackHttp, event: dict[str, Any], text: str = "") -> int:
    event["event"]["text"] = text
    body = json.dumps(event)
    status, _ = await http.send(body, rq.json_headers(body))
    return status


def file_share(fake: FakeSlack, name: str, data: bytes, size: int | None = None) -> dict[str, Any]:
    return fake.share_file(name, data, user="U0ALICE", channel="D0BOT", size=size)


def dm_texts(fake: FakeSlack) -> list[str]:
    return [
        c.text
        for c in fake.calls_to("chat.postMessage", "chat.update")
        if c.args.get("channel") == "D0BOT"
    ]


def downloads(fake: FakeSlack) -> list[str]:
    return [c.args["file_id"] for c in fake.calls_to("file")]


@pytest.mark.timeout(120)
async def test_a_snapshot_in_a_dm_gets_the_clinics_answer_there(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    data = pickle.dumps(snapshots.growing_batch())
    event = file_share(fake_slack, "train.pickle", data)
    assert await share(http_slack, event) == 200
    # Slack retries an event it thinks was missed: taken once.
    assert await share(http_slack, event) == 200
    await http_slack.adapter.idle()

    texts = dm_texts(fake_slack)
    assert "Analysing `train.pickle`" in texts[0]
    assert any("replaying under" in t for t in texts)  # progress, edited in place
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in texts[-1]
    assert len(fake_slack.calls_to("chat.postMessage")) == 1  # one line, edited
    (complete,) = fake_slack.calls_to("files.completeUploadExternal")
    assert complete.args["channel_id"] == "D0BOT"  # the plot stays in the DM
    assert len(downloads(fake_slack)) == 1


@pytest.mark.parametrize("cap", [1 * MiB])
async def test_bad_files_in_a_dm_get_one_clear_line_each(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    too_big = file_share(fake_slack, "huge.pickle", b"x", size=50 * MiB)
    not_pickle = file_share(fake_slack, "notes.pickle", b"hello, not a pickle")
    a_text = file_share(fake_slack, "notes.txt", b"just notes")
    odd_size = file_share(fake_slack, "ok.pickle", b"\x80\x04N.")
    await share(http_slack, too_big)
    await share(http_slack, not_pickle)
    await share(http_slack, a_text)
    await share(http_slack, odd_size, text="0.75")
    await http_slack.adapter.idle()
    texts = "\n".join(dm_texts(fake_slack))
    # The clinic's own words, as on every platform (QUIZBOT_CLINIC_MAX_MB named).
    assert "huge.pickle is 50 MiB, over the clinic's limit of 1.0 MiB" in texts
    assert "QUIZBOT_CLINIC_MAX_MB" in texts
    assert "notes.pickle is not a pickle file" in texts
    assert "I did not take notes.txt" in texts and "memory snapshots" in texts
    assert "'0.75' is not a size in GiB" in texts
    # The oversized file was never downloaded.
    assert too_big["event"]["files"][0]["id"] not in downloads(fake_slack)


async def test_files_not_from_a_human_in_a_dm_are_ignored(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    data = pickle.dumps(snapshots.growing_batch())
    event = file_share(fake_slack, "train.pickle", data)
    event["event"]["bot_id"] = "B0OTHER"  # another bot's file
    assert await share(http_slack, event) == 200
    in_channel = file_share(fake_slack, "train.pickle", data)
    in_channel["event"]["channel_type"] = "channel"  # a file in a channel
    assert await share(http_slack, in_channel) == 200
    await http_slack.adapter.idle()
    assert dm_texts(fake_slack) == [] and downloads(fake_slack) == []


def test_the_temp_file_is_private(tmp_path: Path) -> None:
    from bot.uploads import private_temp_file

    path = private_temp_file("x.pickle")
    try:
        assert path.stat().st_mode & 0o077 == 0
    finally:
        path.unlink()
