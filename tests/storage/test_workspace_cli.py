"""`quizbot workspace forget slack:T…`: a workspace's members erased, its schedules off, its
Slack installs deleted; another workspace untouched."""

from __future__ import annotations

import asyncio

from slack_sdk.oauth.installation_store import Installation

from bot.clock import FakeClock
from bot.domain import ChannelRef, DemoPolicy, Platform, PostKind, UserRef
from storage.store import SqlStore
from tests.conftest import Cli
from tests.fakes import RecordingChat
from tests.quiz import quiz_of
from tests.scheduling.conftest import schedule_at


def test_workspace_forget_erases_one_workspace(cli: Cli, db_url: str, bank: object) -> None:
    one, two = ChannelRef(Platform.SLACK, "T1", "C1"), ChannelRef(Platform.SLACK, "T2", "C2")
    ann, bob = UserRef(Platform.SLACK, "T1", "UANN"), UserRef(Platform.SLACK, "T1", "UBOB")
    carl = UserRef(Platform.SLACK, "T2", "UCARL")

    async def seed() -> tuple[int, int]:
        async with SqlStore(db_url, clock=FakeClock()) as store:
            chats = {Platform.SLACK: RecordingChat()}
            async with quiz_of(store, chats, bank, store.clock, features=[]) as quiz:  # type: ignore[arg-type]
                service = quiz.service
                p1 = await service.ask(one, kind=PostKind.SCHEDULED)
                p2 = await service.ask(two, kind=PostKind.SCHEDULED)
                assert p1 is not None and p2 is not None
                await service.record_answer(p1.id, ann, 0)
                await service.record_answer(p1.id, bob, 1)
                await service.record_answer(p2.id, carl, 1)
            for channel in (one, two):
                await schedule_at(store, channel, "09:00", DemoPolicy.AUTO, store.clock.now())
            for team in ("T1", "T2"):
                await store.slack_installs.async_save(
                    Installation(team_id=team, bot_token=f"xoxb-{team}", user_id="UI")
                )
            return p1.id, p2.id

    p1, p2 = asyncio.run(seed())
    code, out, err = cli("workspace", "forget", "slack:T1")
    assert code == 0, err
    assert "2 members (2 answers), 1 schedules turned off, 1 Slack installs deleted" in out

    async def check() -> None:
        async with SqlStore(db_url, clock=FakeClock()) as store:
            assert await store.answers.for_post(p1) == []
            assert len(await store.answers.for_post(p2)) == 1
            assert await store.schedules.in_channel(one) == []  # turned off
            assert len(await store.schedules.in_channel(two)) == 1
            assert await store.slack_installs.bot_token("T1") is None
            assert await store.slack_installs.bot_token("T2") is not None

    asyncio.run(check())
    code, _, err = cli("workspace", "forget", "slack:T1")
    assert code == 1 and "nothing to erase" in err
    code, _, err = cli("workspace", "forget", "T1")
    assert code == 2 and "is not a workspace" in err
