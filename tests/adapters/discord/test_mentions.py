"""No message the bot sends can ping anyone: every message body — posts, edits, thread
replies, DMs, interaction responses, follow-ups and edits of @original — carries
``allowed_mentions: {"parse": []}``, so a question, a member's name or a typed answer that
contains ``@everyone`` or ``<@id>`` stays text."""

from __future__ import annotations

import re

from tests.adapters.discord.conftest import Runner, both_modes
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.helpers import ADMIN, ask, said

MESSAGE_ROUTES = re.compile(
    r"^/channels/\d+/messages(/\d+)?$|^/webhooks/\d+/[^/]+(/messages/@original)?$"
)


def message_bodies(fake: FakeDiscord) -> list[tuple[str, dict[str, object]]]:
    out: list[tuple[str, dict[str, object]]] = []
    for c in fake.calls:
        if c.method not in ("POST", "PATCH") or not isinstance(c.json, dict):
            continue
        if c.path.endswith("/callback"):
            if c.json.get("type") in (4, 7):
                out.append((f"{c.method} {c.path}", c.json["data"]))
        elif MESSAGE_ROUTES.match(c.path):
            out.append((f"{c.method} {c.path}", c.json))
    return out


def without_mentions(calls: list[tuple[str, dict[str, object]]]) -> list[str]:
    return [route for route, body in calls if body.get("allowed_mentions") != {"parse": []}]


@both_modes
async def test_every_message_the_bot_sends_allows_no_mentions(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message, post_id = await ask(fake)
        click = await fake.click(message["id"], f"quiz:answer:{post_id}:0", user_id="7001")
        await said(fake, click)
        helped = await fake.command("help")
        await said(fake, helped)
        posts = len(fake.of("POST", r"/channels/\d+/messages"))
        await fake.command("close", permissions=ADMIN)  # public: the reveal, in a thread
        await fake.until(lambda: len(fake.of("POST", r"/channels/\d+/messages")) > posts)
        await adapter.service.drain_updates()
    sent = message_bodies(fake)
    kinds = {
        route.split(" ")[0] + (" callback" if "callback" in route else "") for route, _ in sent
    }
    assert {"POST", "PATCH", "POST callback"} <= kinds, [route for route, _ in sent]
    assert without_mentions(sent) == []
