"""A live round on two replicas of one database (SQLite and PostgreSQL): each step is
done once whoever ticks — both at once, or one after the other dies mid-question, mid-step
or between claiming a question and sending it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest

from bot import basics
from bot.bank import QuestionBank
from bot.clock import FakeClock, SystemClock
from bot.domain import ChannelRef, Locale, MessageRef, Platform
from bot.features import Feature, Parts
from bot.live import LiveRounds, live_feature
from bot.live.rounds import STEP_LEASE
from bot.messages import Message
from storage.store import SqlStore
from tests.live.harness import CHANNEL, Live, live_quiz, player, post_of
from tests.polling import eventually
from tests.quiz import quiz_of
from tests.scheduling.conftest import NamedChat

pytestmark = pytest.mark.slow

PLAYERS = [player(n) for n in ("ann", "bob", "cy", "dee")]


def titled(lives: Sequence[Live], kind: str, title: str) -> list[str]:
    """The titles of what every replica posted (`kind`: post or thread) starting so."""
    return [
        s.message.title
        for live in lives
        for s in live.chat.of(kind)
        if s.message is not None and s.message.title.startswith(title)
    ]


@asynccontextmanager
async def replicas(
    db_url: str, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[tuple[Live, Live]]:
    """Replicas A and B of the live rounds, each with its own store of the one database."""
    async with (
        SqlStore(db_url, clock=clock) as sa,
        SqlStore(db_url, clock=clock) as sb,
        live_quiz(sa, bank, clock, NamedChat("a")) as a,
        live_quiz(sb, bank, clock, NamedChat("b")) as b,
    ):
        yield a, b


async def both_tick(a: Live, b: Live) -> None:
    await asyncio.gather(a.tick(), b.tick())


async def test_two_replicas_ticking_together_post_every_step_once(
    db_url: str, bank: QuestionBank, clock: FakeClock
) -> None:
    async with replicas(db_url, bank, clock) as (a, b):
        await a.command("live 3 10")
        (again,) = await b.command("live 3 10")  # the other replica sees it running
        assert "already under way" in again.message.body
        clock.advance(timedelta(seconds=30))
        for _ in range(3):
            await both_tick(a, b)
            open_now = await a.quiz.service.open_post(CHANNEL)  # whoever posted it
            assert open_now is not None
            for i, p in enumerate(PLAYERS):
                await (a if i % 2 else b).answer(open_now.id, i % 4, p)
            clock.advance(timedelta(seconds=10))
        await both_tick(a, b)
        lives = (a, b)
        assert len(titled(lives, "post", "Live · question")) == 3
        assert sorted(titled(lives, "thread", "Results")) == [
            f"Results · question {k}" for k in (1, 2, 3)
        ]
        assert len(titled(lives, "post", "Live round: the podium")) == 1
        assert len(titled(lives, "thread", "Standings")) == 1
        assert sorted(titled(lives, "post", "Live · question")) == sorted(
            set(titled(lives, "post", "Live · question"))
        )
        board = await a.store.live.board(CHANNEL)
        assert sum(r.answered for r in board) == 12


async def test_instance_a_dies_mid_question_and_b_finishes_the_round(
    db_url: str, bank: QuestionBank, clock: FakeClock
) -> None:
    async with SqlStore(db_url, clock=clock) as sb, live_quiz(sb, bank, clock, NamedChat("b")) as b:
        async with (
            SqlStore(db_url, clock=clock) as sa,
            live_quiz(sa, bank, clock, NamedChat("a")) as a,
        ):
            await a.command("live 2 10")
            await a.at(timedelta(seconds=30))  # A posts question 1 ...
            (q1,) = a.questions()
            await a.answer(post_of(q1), 0, PLAYERS[0])
            await a.answer(post_of(q1), 1, PLAYERS[1])
        # ... and dies. B ticks at the deadline: it closes question 1, posts its results
        # and question 2, and ends the round.
        await b.at(timedelta(seconds=10))
        assert len(b.threads("Results · question 1")) == 1
        (q2,) = b.questions()
        await b.answer(post_of(q2), 0, PLAYERS[2])
        await b.at(timedelta(seconds=10))
        lives = (a, b)
        assert len(titled(lives, "post", "Live · question 1")) == 1
        assert len(titled(lives, "post", "Live · question 2")) == 1
        assert len(titled(lives, "thread", "Results")) == 2
        assert len(titled(lives, "post", "Live round: the podium")) == 1
        (table,) = b.threads("Standings")
        assert table.message is not None and len(table.message.body.splitlines()) == 3
        assert await b.active() is None


async def test_a_step_left_half_done_is_redone_once_after_its_lease(
    db_url: str, bank: QuestionBank, clock: FakeClock
) -> None:
    """A's results post fails (its process as good as dead mid-step, the lease taken), then
    A's send of question 2 fails after claiming it: B redoes each once its lease passed."""
    async with replicas(db_url, bank, clock) as (a, b):
        await a.command("live 2 10")
        await a.at(timedelta(seconds=30))
        assert isinstance(a.chat, NamedChat)
        a.chat.fail_threads = 1
        await a.at(timedelta(seconds=10))  # the close committed; the results failed
        assert a.threads("Results") == [] and a.questions()[1:] == []
        await b.tick()  # A's lease is fresh: B leaves the step alone
        assert b.threads("Results") == [] and b.questions() == []
        clock.advance(STEP_LEASE)
        a.chat.fail_posts = 1  # A's next try: results posted, question 2 claimed, not sent
        await a.tick()
        assert len(a.threads("Results · question 1")) == 1 and len(a.questions()) == 1
        await b.tick()
        assert b.questions() == []
        clock.advance(STEP_LEASE)
        await both_tick(a, b)  # one of them sends the claimed question 2, once
        lives = (a, b)
        assert len(titled(lives, "post", "Live · question 2")) == 1
        assert len(titled(lives, "thread", "Results · question 1")) == 1
        clock.advance(timedelta(seconds=10))
        await both_tick(a, b)
        assert len(titled(lives, "thread", "Results · question 2")) == 1
        assert len(titled(lives, "post", "Live round: the podium")) == 1


class SlowChat(NamedChat):
    """A platform answering a live question's post only once `answer` is set (a 429 waited
    out by the client); `posting` is when the post came in, on the loop's clock."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.answer = asyncio.Event()
        self.posting: float | None = None

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        if message.title.startswith("Live · question"):
            self.posting = asyncio.get_running_loop().time()
            await self.answer.wait()
        return await super().post_message(channel, message)


async def test_a_step_in_hand_keeps_its_lease_past_its_length(
    db_url: str, bank: QuestionBank
) -> None:
    """On the system clock, with a lease of 0.3 s: A's post of question 1 hangs until B has
    ticked on after three leases' length; B never posts it, since A renews the lease while
    it waits."""
    clock = SystemClock()
    slow, other = SlowChat("a"), NamedChat("b")

    def leased(parts: Parts) -> Feature:
        short = timedelta(milliseconds=300)
        rounds = LiveRounds(parts.service, parts.store.live, parts.clock, lobby=short, lease=short)
        return live_feature(rounds)

    async with (
        SqlStore(db_url, clock=clock) as sa,
        SqlStore(db_url, clock=clock) as sb,
        quiz_of(sa, {Platform.SLACK: slow}, bank, clock, features=[basics.feature, leased]) as a,
        quiz_of(sb, {Platform.SLACK: other}, bank, clock, features=[basics.feature, leased]) as b,
    ):
        ra, rb = a.registry.service(LiveRounds), b.registry.service(LiveRounds)
        assert ra is not None and rb is not None
        r = await ra.start(
            CHANNEL,
            player("admin"),
            questions=1,
            seconds=5,
            topic=None,
            counted=False,
            locale=Locale.EN,
        )
        await eventually(lambda: clock.now() >= r.next_at, timeout=5)
        posting = asyncio.ensure_future(ra.tick())
        await eventually(lambda: slow.posting is not None, timeout=5)  # A holds the step
        loop = asyncio.get_running_loop()

        async def b_ticks_past_three_leases() -> bool:
            begun = loop.time()
            assert await rb.tick() == 0 and not posting.done()
            return begun - (slow.posting or begun) > 0.9

        await eventually(b_ticks_past_three_leases, timeout=10, interval=0.05)
        slow.answer.set()
        assert await posting == 1
        questions = [
            s for s in slow.of("post") if s.message and s.message.title.startswith("Live · q")
        ]
        assert len(questions) == 1 and other.of("post") == []
