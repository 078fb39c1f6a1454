"""Team packs on Discord, end to end against the fake Discord: `/quiz submit` opens a
modal whose problems come back privately with the text to retry; review buttons (admins
only, one decision; Reject asks the reason in a modal); the author told by DM; the review
channel's cards; `/quiz ask team`; "Report a problem" on the reveal; `/quiz mydata` as a
file in a DM; `/quiz forget-me` leaving every board equal to a recomputation; and
`/quiz import file:<attachment>`."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from adapters.discord.payloads import stored
from bot.clock import FakeClock
from bot.domain import Delivery, Platform, UserRef
from bot.features import Quiz
from bot.mydata import export_file
from bot.team import SubmissionState, Workspace
from storage.store import SqlStore
from tests.adapters.discord.conftest import Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord, Json
from tests.adapters.discord.helpers import (
    ADMIN,
    answered,
    ask,
    button,
    channel_of,
    custom_ids,
    dm_to,
    modal_for,
    said,
    text_of,
)
from tests.boards.test_aggregates import actual, recompute
from tests.core.team import GOOD

ANN, BOB, ROOT = "7601", "7602", "7603"  # ROOT has Manage Server
OTHER_CHANNEL = "822222222222229999"  # another channel of the same server
MANAGE_SERVER = "Only members with the Manage Server permission"


def workspace(fake: FakeDiscord) -> Workspace:
    return Workspace.of(channel_of(fake))


async def first_said(fake: FakeDiscord, interaction: Json) -> str:
    return text_of((await said(fake, interaction))[0])


async def submitted(fake: FakeDiscord, values: dict[str, str], user_id: str, **kw: Any) -> str:
    """`/quiz submit`, the modal filled with `values`: what the member was told."""
    modal = await modal_for(fake, await fake.command("submit", user_id=user_id, **kw))
    sub = await fake.submit_modal(modal["custom_id"], values, user_id=user_id, **kw)
    (reply,) = await said(fake, sub)
    assert reply["flags"] == EPHEMERAL
    return text_of(reply)


@both_modes
async def test_a_member_submits_an_admin_approves_it_is_asked_scored_flagged_then_forgotten(
    fake: FakeDiscord, run_adapter: Runner, team: Quiz, store: SqlStore
) -> None:
    async with run_adapter(quiz=team):
        # The form: five fields, Discord's limit; problems come back with the text to retry.
        modal = await modal_for(fake, await fake.command("submit", user_id=ANN))
        assert modal["title"] == "Submit a question"
        fields = [row["components"][0] for row in modal["components"]]
        assert [f["custom_id"] for f in fields] == list(GOOD)
        assert all(len(f["label"]) <= 45 for f in fields)
        bad = await fake.submit_modal(
            modal["custom_id"], {**GOOD, "answer": "Q", "details": ""}, user_id=ANN
        )
        (refused,) = await said(fake, bad)
        shown = text_of(refused)
        assert refused["flags"] == EPHEMERAL and "Nothing was saved" in shown
        assert "'Q' is not one of your choices" in shown and "Write a topic first" in shown
        assert f"```\n{GOOD['prompt']}\n```" in shown  # to paste back in
        assert await store.team.listing(workspace(fake)) == []
        good = await fake.submit_modal(modal["custom_id"], GOOD, user_id=ANN)
        assert "waits for review" in await first_said(fake, good)

        # Review: admins only, one decision; the author is told by DM.
        assert MANAGE_SERVER in await first_said(fake, await fake.command("review", user_id=BOB))
        listing = await fake.command("review", user_id=ROOT, permissions=ADMIN)
        pending, reported = await said(fake, listing, 2)
        assert GOOD["prompt"] in text_of(pending) and pending["flags"] == EPHEMERAL
        assert "No question has been reported" in text_of(reported)
        approve = button(pending, "quiz:approve:0:")
        assert any(i.startswith("quiz:reject:0:") for i in custom_ids(pending))
        assert MANAGE_SERVER in await first_said(fake, await fake.click("0", approve, user_id=BOB))
        (sub,) = await store.team.listing(workspace(fake))
        assert sub.state is SubmissionState.PENDING
        first = await fake.click("0", approve, user_id=ROOT, permissions=ADMIN)
        assert "joins the team pack" in await first_said(fake, first)
        again = await fake.click("0", approve, user_id=ROOT, permissions=ADMIN)
        assert "already approved by" in await first_said(fake, again)
        await fake.until(lambda: any("was approved by" in text_of(m) for m in dm_to(fake, ANN)))
        assert len(dm_to(fake, ANN)) == 1

        # /quiz ask team asks it; answers are scored.
        message, post_id = await ask(fake, "team", user_id=ANN)
        assert GOOD["prompt"] in text_of(message)
        right = custom_ids(message)[1]  # B
        assert "✅ Correct" in await first_said(
            fake, await fake.click(message["id"], right, user_id=BOB)
        )
        wrong = await fake.click(message["id"], custom_ids(message)[0], user_id=ANN)
        assert "Not quite" in await first_said(fake, wrong)
        await answered(fake, await fake.command("close", user_id=ROOT, permissions=ADMIN))

        # "Report a problem" on the reveal, in the question's thread: a modal.
        await fake.until(
            lambda: any(m["channel_id"] == message["id"] for m in fake.messages.values())
        )
        (reveal,) = [m for m in fake.messages.values() if m["channel_id"] == message["id"]]
        flag = button(reveal, f"quiz:flag:{post_id}:")
        click = await fake.click(reveal["id"], flag, user_id=BOB, channel_id=message["id"])
        form = await modal_for(fake, click)
        assert form["title"] == "Report a problem"
        # A reason that is not one: the private message names the field by its label.
        refused = await fake.submit_modal(
            form["custom_id"], {"reason": "nonsense"}, user_id=BOB, channel_id=message["id"]
        )
        shown = await first_said(fake, refused)
        assert "**Reason: a number or a word**: 'nonsense' is not a reason" in shown, shown
        report = await fake.submit_modal(
            form["custom_id"],
            {"reason": "2", "note": "which job?"},
            user_id=BOB,
            channel_id=message["id"],
        )
        assert "the admins will look at this question" in await first_said(fake, report)

        # The admin sees it in /quiz review (with Retire) and /quiz report.
        listing = await fake.command("review", user_id=ROOT, permissions=ADMIN)
        _, reported = await said(fake, listing, 2)
        assert "1 report (ambiguous 1)" in text_of(reported) and "which job?" in text_of(reported)
        retire = button(reported, "quiz:retire:0:")
        shown = await first_said(
            fake, await fake.command("report", user_id=ROOT, permissions=ADMIN)
        )
        assert "reported 1 time" in shown
        retired = await fake.click("0", retire, user_id=ROOT, permissions=ADMIN)
        assert f"Retired {sub.question.id}" in await first_said(fake, retired)

        # /quiz mydata: a JSON file in a DM.
        mydata = await fake.command("mydata", user_id=BOB)
        assert "I sent you a file" in await first_said(fake, mydata)
        (sent,) = [c for c in fake.of("POST", rf"/channels/{fake.dms[BOB]}/messages")]
        ((name, _),) = sent.files
        assert name == f"quizbot-data-discord-{BOB}.json"
        assert sent.json["attachments"] == [{"id": 0, "filename": name, "description": "quizbot"}]
        data = json.loads(sent.contents[0])
        assert data["member"]["user"] == BOB and len(data["answers"]) == 1
        assert data["reports"][0]["note"] == "which job?"

        # /quiz forget-me: only the owner's click erases them.
        confirm = await fake.command("forget-me", user_id=BOB)
        (asked,) = await said(fake, confirm)
        erase = button(asked, "quiz:forget:0:")
        assert asked["flags"] == EPHEMERAL
        assert "belongs to someone else" in await first_said(
            fake, await fake.click("0", erase, user_id=ANN)
        )
        assert len(await store.answers.for_post(post_id)) == 2
        done = await fake.click("0", erase, user_id=BOB)
        assert "1 answer and 0 practice cards" in await first_said(fake, done)
    (kept,) = await store.answers.for_post(post_id)
    assert kept.user.user == ANN
    board = await team.service.leaderboard(channel_of(fake), None)
    assert [r.user.user for r in board.rows] == [ANN]
    assert await actual(store) == await recompute(store)


async def test_an_admins_approval_replayed_after_a_crash_is_still_an_admins(
    fake: FakeDiscord, run_adapter: Runner, team: Quiz, store: SqlStore, clock: FakeClock
) -> None:
    async with run_adapter(quiz=team) as adapter:
        assert "waits for review" in await submitted(fake, GOOD, ANN)
        (sub,) = await store.team.listing(workspace(fake))
        # ROOT's click was stored, then the process that took it died: this process has
        # never seen ROOT, so only the stored interaction can say they are an admin.
        click = fake.click_payload("0", f"quiz:approve:0:{sub.id}", user_id=ROOT, permissions=ADMIN)
        fake.interactions[click["id"]] = fake.interaction_record(click)
        stored_click = {"interaction": stored(click)}
        await adapter.path.replay(Delivery(click["id"], "discord", clock.now(), 1, stored_click))
    (decided,) = await store.team.listing(workspace(fake))
    assert decided.state is SubmissionState.APPROVED and decided.decided_by is not None
    assert decided.decided_by.user == ROOT


async def test_the_review_channel_shows_each_submission_as_a_card_rejected_with_a_reason(
    fake: FakeDiscord, run_adapter: Runner, team: Quiz, store: SqlStore
) -> None:
    async with run_adapter(quiz=team):
        here = await fake.command("review", {"where": "here"}, user_id=ROOT, permissions=ADMIN)
        (set_up,) = await said(fake, here)
        assert "appear in this channel" in text_of(set_up) and not set_up.get("flags")  # public
        cards = rf"/channels/{fake.channel_id}/messages"
        before = len(fake.of("POST", cards))
        told = await submitted(fake, GOOD, ANN, channel_id=OTHER_CHANNEL)
        assert "waits for review" in told
        (posted,) = (await fake.wait_for("POST", cards, before + 1))[before:]
        card = next(m for m in fake.messages.values() if m["embeds"] == posted.json["embeds"])
        assert "A question for review" in text_of(card) and GOOD["prompt"] in text_of(card)
        reject, approve = button(card, "quiz:reject:0:"), button(card, "quiz:approve:0:")

        # Reject opens the reason's modal, for admins only.
        assert MANAGE_SERVER in await first_said(
            fake, await fake.click(card["id"], reject, user_id=BOB)
        )
        form = await modal_for(
            fake, await fake.click(card["id"], reject, user_id=ROOT, permissions=ADMIN)
        )
        assert form["title"] == "Reject the question"
        blank = await fake.submit_modal(
            form["custom_id"], {"reason": "  "}, user_id=ROOT, permissions=ADMIN
        )
        assert "Write a reason: the author sees it." in await first_said(fake, blank)
        (sub,) = await store.team.listing(workspace(fake))
        assert sub.state is SubmissionState.PENDING
        because = "the answer depends on the driver version"
        done = await fake.submit_modal(
            form["custom_id"], {"reason": because}, user_id=ROOT, permissions=ADMIN
        )
        assert "its author is told why" in await first_said(fake, done)

        # The card loses its buttons and says who decided; the author reads why, by DM.
        await fake.until(lambda: not fake.messages[card["id"]]["components"])
        assert "Rejected by" in text_of(fake.messages[card["id"]])
        await fake.until(lambda: bool(dm_to(fake, ANN)))
        (notice,) = dm_to(fake, ANN)
        assert "was not accepted by" in text_of(notice) and because in text_of(notice)
        late = await fake.click(card["id"], approve, user_id=ROOT, permissions=ADMIN)
        assert "already rejected by" in await first_said(fake, late)
    (sub,) = await store.team.listing(workspace(fake))
    assert sub.state is SubmissionState.REJECTED and sub.reason == because


async def test_mydata_tells_a_member_who_takes_no_dms_how_to_allow_them_in_their_language(
    fake: FakeDiscord, run_adapter: Runner, team: Quiz
) -> None:
    fake.closed_dms.add(BOB)
    async with run_adapter(quiz=team):
        english = await first_said(fake, await fake.command("mydata", user_id=BOB))
        assert "Discord refused a direct message" in english and "Privacy Settings" in english
        assert "I sent you a file" not in english
        greek = await first_said(fake, await fake.command("mydata", user_id=BOB, locale="el"))
        assert "Ρυθμίσεις απορρήτου" in greek and "προσωπικά μηνύματα" in greek
    assert not [c for c in fake.of("POST", r"/channels/\d+/messages") if c.files and c.status < 300]


@pytest.mark.parametrize("compressible", [True, False])
async def test_a_data_file_over_discords_limit_goes_compressed_or_names_the_operator_command(
    fake: FakeDiscord, run_adapter: Runner, team: Quiz, store: SqlStore, compressible: bool
) -> None:
    async with run_adapter(quiz=team) as adapter:
        await submitted(fake, GOOD, BOB)  # something to export
        bob = UserRef(Platform.DISCORD, fake.guild_id, BOB)
        size = len(export_file(bob, await store.members.export(bob)).data)
        # Just over the limit (gzip makes it fit), or a limit nothing fits in.
        adapter.chat.file_limit = size - 1 if compressible else 20
        said_back = await first_said(fake, await fake.command("mydata", user_id=BOB))
    sent = [c for c in fake.of("POST", r"/channels/\d+/messages") if c.files]
    if compressible:
        (upload,) = sent
        assert upload.files[0][0] == f"quizbot-data-discord-{BOB}.json.gz"
        data = json.loads(gzip.decompress(upload.contents[0]))
        assert data["submitted_questions"][0]["state"] == "pending"
        assert "I sent you a file" in said_back
    else:
        assert sent == []
        assert "even compressed, over Discord's" in said_back
        assert f"quizbot member export discord:{fake.guild_id}:{BOB}" in said_back
