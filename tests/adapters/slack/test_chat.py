"""`SlackChat` (the core's Chat port) against the fake Slack Web API."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from adapters.slack.chat import SlackChat
from bot.domain import ChannelRef, MessageRef, Platform, UserRef
from bot.errors import PlatformError
from bot.messages import Image, Message
from bot.metrics import QuizMetrics
from bot.ports import Chat
from tests.adapters.slack.fake_slack import BOT_TOKEN, FakeSlack

CHANNEL = ChannelRef(Platform.SLACK, "T0FAKE", "C0QUIZ")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40


def test_slack_chat_is_a_chat() -> None:
    chat: Chat = SlackChat(BOT_TOKEN)
    assert chat is not None


async def test_an_image_upload_is_three_calls_into_the_thread(
    fake_slack: FakeSlack, slack_chat: SlackChat
) -> None:
    parent = MessageRef(CHANNEL, "1700000000.000042")
    await slack_chat.upload_image(
        parent, Image("fragmentation.png", PNG, "Free blocks"), comment="Simulated allocator"
    )
    assert [c.method for c in fake_slack.calls] == [
        "files.getUploadURLExternal",
        "upload",
        "files.completeUploadExternal",
    ]
    get_url, upload, complete = fake_slack.calls
    assert get_url.args["filename"] == "fragmentation.png"
    assert int(get_url.args["length"]) == len(PNG)
    file_id = get_url.response["file_id"]
    assert upload.args == {"file_id": file_id, "size": len(PNG)}
    assert fake_slack.uploads[file_id] == PNG
    assert complete.args["files"] == [{"id": file_id, "title": "Free blocks"}]
    assert complete.args["channel_id"] == "C0QUIZ"
    assert complete.args["thread_ts"] == "1700000000.000042"
    assert complete.args["initial_comment"] == "Simulated allocator"
    assert complete.ok


async def test_thread_replies_private_messages_and_updates_reach_the_right_place(
    fake_slack: FakeSlack, slack_chat: SlackChat
) -> None:
    ref = await slack_chat.post_message(CHANNEL, Message(title="Q", body="Which?"))
    reply = await slack_chat.reply_in_thread(ref, Message(body="Answer: *C*"))
    await slack_chat.send_private(
        CHANNEL, UserRef(Platform.SLACK, "T0FAKE", "U1"), Message(body="hi")
    )
    await slack_chat.update_message(ref, Message(title="Q", body="Which? (closed)"))

    post, thread = fake_slack.calls_to("chat.postMessage")
    assert ref == MessageRef(CHANNEL, post.response["ts"])
    assert thread.args["thread_ts"] == ref.message and reply.message == thread.response["ts"]
    assert post.args["unfurl_links"] is False
    (private,) = fake_slack.calls_to("chat.postEphemeral")
    assert (private.args["channel"], private.args["user"]) == ("C0QUIZ", "U1")
    (update,) = fake_slack.calls_to("chat.update")
    assert update.args["ts"] == ref.message and "(closed)" in update.text


async def test_a_message_with_an_image_uploads_it_into_its_own_thread(
    fake_slack: FakeSlack, slack_chat: SlackChat
) -> None:
    ref = await slack_chat.post_message(CHANNEL, Message(body="Demo", image=Image("plot.png", PNG)))
    (complete,) = fake_slack.calls_to("files.completeUploadExternal")
    assert complete.args["thread_ts"] == ref.message


async def test_rate_limits_beyond_the_retry_budget_raise(
    fake_slack: FakeSlack, sleeps: list[float]
) -> None:
    fake_slack.rate_limit("chat.postMessage", retry_after=3, times=3)
    async with SlackChat(
        BOT_TOKEN, base_url=fake_slack.api_url, max_rate_limit_retries=2, sleep=_record(sleeps)
    ) as chat:
        with pytest.raises(PlatformError, match="429") as raised:
            await chat.post_message(CHANNEL, Message(body="x"))
    assert [int(s) for s in sleeps] == [3, 3]
    assert raised.value.method == "chat.postMessage" and raised.value.reason == "ratelimited"


@pytest.mark.parametrize(
    ("status", "body", "content_type", "reason"),
    [
        (
            500,
            "<html><body><h1>500 Internal Server Error</h1></body></html>",
            "text/html",
            "HTTP 500",
        ),
        (405, "Method Not Allowed", "text/plain", "HTTP 405: Method Not Allowed"),
        (503, "", "text/plain", "HTTP 503 with an empty body"),
    ],
)
async def test_an_api_error_whose_body_is_not_json_is_a_clear_platform_error(
    fake_slack: FakeSlack,
    slack_chat: SlackChat,
    sleeps: list[float],
    caplog: pytest.LogCaptureFixture,
    status: int,
    body: str,
    content_type: str,
    reason: str,
) -> None:
    slack_chat.metrics = QuizMetrics()
    fake_slack.outage("users.info", status, body, content_type)
    with pytest.raises(PlatformError) as raised:
        await slack_chat.user_info("U1")
    assert raised.value.status == status and raised.value.reason.startswith(reason)
    # 500 and 503 are tried twice more, after slack_sdk's backoff (waited through `sleep`).
    retried = status in (500, 503)
    assert len(fake_slack.calls_to("users.info", ok_only=False)) == (3 if retried else 1)
    assert len(sleeps) == (2 if retried else 0) and all(s > 0 for s in sleeps)
    assert f"Slack users.info failed: {status}" in caplog.text
    assert (
        slack_chat.metrics.platform_errors.value(
            platform="slack", method="users.info", status=str(status)
        )
        == 1
    )


async def test_a_refused_response_url_raises(fake_slack: FakeSlack, slack_chat: SlackChat) -> None:
    with pytest.raises(PlatformError, match="response_url"):
        await slack_chat.respond(f"http://127.0.0.1:{fake_slack.port}/nowhere", Message(body="x"))


def _record(sleeps: list[float]):  # type: ignore[no-untyped-def]
    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return sleep


@pytest.mark.parametrize(
    "url",
    [
        "http://files.slack.com/files-pri/T0-F0/snap.pickle",  # not https
        "https://files.slack.com:8443/files-pri/T0-F0/snap.pickle",  # not the default port
        "https://evil.slack.com/files-pri/T0-F0/snap.pickle",  # not a file host
        "https://files.slack.com.evil.example/snap.pickle",
        "https://cdn.slack-edge.com/snap.pickle",
        "http://127.0.0.1:1/files/F0/snap.pickle",  # the API's host, another port
        "https://127.0.0.1/files/F0/snap.pickle",  # the API's host, another scheme
    ],
)
async def test_files_are_downloaded_only_from_slacks_file_hosts_over_https(
    slack_chat: SlackChat, url: str
) -> None:
    with pytest.raises(PlatformError, match="not a Slack file URL"):
        await slack_chat.download(url, 1 << 20, lambda chunk: None)


async def test_a_file_download_follows_no_redirect_and_sends_the_token_nowhere_else() -> None:
    elsewhere: list[str] = []

    async def record(request: web.Request) -> web.Response:
        elsewhere.append(request.headers.get("Authorization", ""))
        return web.Response(body=b"a snapshot")

    other = web.Application()
    other.router.add_get("/grab", record)
    async with serve(other) as other_url:

        async def redirect(request: web.Request) -> web.Response:
            raise web.HTTPFound(f"{other_url}/grab")

        slack = web.Application()
        slack.router.add_get("/files/F0/snap.pickle", redirect)
        async with (
            serve(slack) as slack_url,
            SlackChat(BOT_TOKEN, base_url=f"{slack_url}/api/") as chat,
        ):
            with pytest.raises(PlatformError):
                await chat.download(f"{slack_url}/files/F0/snap.pickle", 1 << 20, print)
    assert elsewhere == []


@contextlib.asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
