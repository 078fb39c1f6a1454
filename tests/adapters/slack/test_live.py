"""A live round on Slack end to end: the real adapter and slack_sdk client against the
fake Slack, the fake clock driving the scheduler's pass. Two questions, three players:
the lobby and each question carry Slack's self-updating `<!date^…>` closing time, clicks
are answered privately, results go in each question's thread, the podium at the end."""

from __future__ import annotations

from datetime import timedelta

from bot.app import FEATURES
from bot.clock import FakeClock
from bot.scheduling import Scheduler
from tests.adapters.slack.conftest import SlackWith
from tests.quiz import service_of


def action_ids(args: dict[str, object]) -> list[str]:
    blocks = args.get("blocks") or []
    assert isinstance(blocks, list)
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def test_a_live_round_is_played_on_slack(slack_with: SlackWith, clock: FakeClock) -> None:
    async with slack_with(*FEATURES) as http:
        scheduler = service_of(http.quiz, Scheduler)
        status, _ = await http.command("live 2 10", user="U0ALICE")  # not an admin
        await http.adapter.idle()
        assert status == 200 and any("admin" in t for t in http.private_to("U0ALICE"))
        assert http.fake.calls_to("chat.postMessage") == []
        status, _ = await http.command("live 2 10", user="U0ROOT")
        await http.adapter.idle()
        (lobby,) = http.fake.calls_to("chat.postMessage")
        start = int((clock.now() + timedelta(seconds=30)).timestamp())
        assert f"<!date^{start}^{{time_secs}}|" in lobby.text
        join = next(a for a in action_ids(lobby.args) if a.startswith("quiz:live-join:"))
        for user in ("U0ALICE", "U0BOB", "U0CY"):
            await http.press(join, user=user)
        await http.adapter.idle()
        assert any("You're in" in t for t in http.private_to("U0BOB"))
        for k in (1, 2):
            clock.advance(timedelta(seconds=30 if k == 1 else 0))
            await scheduler.tick()
            posted = [
                c for c in http.fake.calls_to("chat.postMessage") if f"question {k} of 2" in c.text
            ]
            (question,) = posted
            deadline = int((clock.now() + timedelta(seconds=10)).timestamp())
            assert f"<!date^{deadline}^{{time_secs}}|" in question.text
            answers = [a for a in action_ids(question.args) if a.startswith("quiz:answer:")]
            for i, user in enumerate(("U0ALICE", "U0BOB", "U0CY")):
                post_id, choice = answers[i].split(":")[2], i
                status, _ = await http.click(int(post_id), choice, user=user)
                assert status == 200
                clock.advance(timedelta(seconds=2))
            await http.adapter.idle()
            assert any("Locked in" in t for t in http.private_to("U0CY"))
            clock.advance(timedelta(seconds=4))
            await scheduler.tick()
            results = [
                c
                for c in http.fake.calls_to("chat.postMessage")
                if c.args.get("thread_ts") and f"Results · question {k}" in c.text
            ]
            assert len(results) == 1 and "Top 3 of the round" in results[0].text
            late_before = len(http.private_to("U0ALICE"))
            await http.click(int(answers[0].split(":")[2]), 0, user="U0ALICE")
            await http.adapter.idle()
            assert any("not counted" in t for t in http.private_to("U0ALICE")[late_before:])
        podium = [c for c in http.fake.calls_to("chat.postMessage") if "the podium" in c.text]
        assert len(podium) == 1 and "🥇" in podium[0].text
        standings = [
            c
            for c in http.fake.calls_to("chat.postMessage")
            if c.args.get("thread_ts") and "Standings" in c.text
        ]
        assert len(standings) == 1
        # Coarse edits only: the lobby once, each question's face once at its close.
        assert len(http.fake.calls_to("chat.update")) == 3
