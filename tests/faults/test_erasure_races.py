"""The red team's erasure race, re-run: 20 members each click 9 answers on 3 open posts
(and some their practice question) through two bot processes (two `SqlStore`s on one
database), while 10 of them confirm forget-me on one process or the other, at a varied
point of the burst. Some of the 10 played before (both processes cache their ids), some
never did (their first clicks are still queued: "the quiz stores nothing about you").

Afterwards, on SQLite and PostgreSQL: no answer, score, practice card or member row of an
erased member is left but their anonymous tombstone — except answers of clicks stamped
after their erasure, which make them a new member; each forget-me's reply counts exactly
what it erased; every other member keeps exactly what they were told was recorded; and
every board equals a recomputation from the answers that remain.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import AnswerStatus, ChannelRef, Locale, Platform, PostKind, UserRef
from bot.mydata import Forgotten
from bot.practice import Practice
from bot.quiz import AnswerReply, QuizService
from storage.members import TOMBSTONE
from storage.models import (
    AnswerRow,
    ErasureRow,
    MemberRow,
    PracticeCardRow,
    ScoreDayRow,
    ScorePeriodRow,
    ScoreRow,
    ScoreTopicRow,
)
from storage.store import SqlStore
from tests.boards.test_aggregates import actual, recompute
from tests.fakes import RecordingChat
from tests.quiz import asked

pytestmark = pytest.mark.slow

CHANNEL = ChannelRef(Platform.SLACK, "T1", "C1")
MEMBERS = [UserRef(Platform.SLACK, "T1", f"U{n:02d}", f"member {n}") for n in range(20)]
ERASED = MEMBERS[:10]
PLAYED_BEFORE = MEMBERS[:5] + MEMBERS[10:15]  # cached on both processes
PRACTISING = MEMBERS[:3] + MEMBERS[10:12]
START = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)


class TickingClock(FakeClock):
    """Every reading is a millisecond after the last: a click stamped while an erasure
    runs is stamped before the erasure's own fence, as it is on a real clock."""

    def now(self) -> datetime:
        return self.advance(timedelta(milliseconds=1))


def service_of(store: SqlStore, bank: QuestionBank, clock: FakeClock) -> QuizService:
    return QuizService(
        store,
        {Platform.SLACK: RecordingChat()},
        bank,
        clock,
        rng=random.Random(5),
        count_update_interval=0.0,
    )


async def right_choice(service: QuizService, post_id: int) -> int:
    post = await service.store.posts.get(post_id)
    assert post is not None
    question = service.bank.get(post.question_id)
    assert question is not None
    return question.answer


async def burst(
    seed: int, services: tuple[QuizService, QuizService], open_posts: list[int]
) -> tuple[dict[UserRef, Forgotten], list[tuple[UserRef, datetime, AnswerReply]]]:
    """The race; returns each erasure's reply and every click's (user, stamp, reply)."""
    rng = random.Random(seed)
    clock = services[0].clock
    plan = [(who, post) for who in MEMBERS for post in open_posts for _ in range(3)]
    rng.shuffle(plan)
    stamped: list[tuple[UserRef, datetime, AnswerReply]] = []

    async def click(who: UserRef, post_id: int, service: QuizService) -> None:
        choice = rng.randrange(4)
        at = clock.now()  # the service stamps its own a tick later: still before a fence
        stamped.append((who, at, await service.record_answer(post_id, who, choice)))

    clicks = [asyncio.create_task(click(w, p, rng.choice(services))) for w, p in plan]
    for _ in range(rng.randrange(0, 60)):  # how far the burst gets before the erasures
        await asyncio.sleep(0)
    erasing = ERASED[:]
    rng.shuffle(erasing)
    sequential = rng.random() < 0.5

    async def forget(who: UserRef) -> tuple[UserRef, Forgotten]:
        return who, await rng.choice(services).store.members.forget(who)  # type: ignore[attr-defined]

    if sequential:
        done = [await forget(who) for who in erasing]
    else:
        done = list(await asyncio.gather(*(forget(who) for who in erasing)))
    await asyncio.gather(*clicks)
    return dict(done), stamped


async def fence_of(store: SqlStore) -> dict[str, datetime]:
    async with store.sessions() as s:
        rows = await s.execute(select(ErasureRow.user_id, ErasureRow.erased_at))
        return {user_id: at for user_id, at in rows}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", range(5))
async def test_an_erased_member_keeps_no_row_whatever_the_interleaving(
    db_url: str, bank: QuestionBank, seed: int
) -> None:
    clock = TickingClock(START)
    async with SqlStore(db_url, clock=clock) as one, SqlStore(db_url, clock=clock) as two:
        services = (service_of(one, bank, clock), service_of(two, bank, clock))
        before: dict[UserRef, int] = defaultdict(int)  # answers kept before the race
        for service in services:  # both processes cache these members' ids
            post = await asked(service, CHANNEL, kind=PostKind.SCHEDULED)
            for who in PLAYED_BEFORE:
                await service.record_answer(post.id, who, await right_choice(service, post.id))
                before[who] += 1
            await service.close(post.id)
        open_posts = []
        for _ in range(3):
            post = await services[0].ask(CHANNEL, kind=PostKind.SCHEDULED)
            assert post is not None
            open_posts.append(post.id)
        practice = {}
        for who in PRACTISING:
            post, _ = await Practice(services[0], one.practice).next_question(
                CHANNEL, who, Locale.EN
            )
            practice[who] = (post.id, await right_choice(services[0], post.id))

        async def practise(
            who: UserRef, service: QuizService
        ) -> tuple[UserRef, datetime, AnswerReply]:
            post_id, answer = practice[who]
            at = clock.now()
            return who, at, await service.record_answer(post_id, who, answer)

        pick = random.Random(seed)
        practising = [
            asyncio.create_task(practise(who, pick.choice(services))) for who in PRACTISING
        ]
        erased, stamped = await burst(seed, services, open_posts)
        stamped += await asyncio.gather(*practising)
        fences = await fence_of(one)

        # A few clicks after the erasures: those members are new members now.
        late = ERASED[seed % 10]
        stamped.append((late, clock.now(), await services[1].record_answer(open_posts[0], late, 0)))
        for post_id in open_posts:
            await services[seed % 2].close(post_id)

        recorded: dict[UserRef, list[datetime]] = defaultdict(list)
        for who, at, reply in stamped:
            if reply.outcome.status is AnswerStatus.RECORDED:
                recorded[who].append(at)
            if reply.outcome.status is AnswerStatus.ERASED:
                assert who in ERASED and at <= fences[who.user]
                assert "forget you" in reply.message.body

        async with one.sessions() as s:
            members = (await s.execute(select(MemberRow))).scalars().all()
            for who in ERASED:
                fence = fences[who.user]
                kept_before = [at for at in recorded[who] if at <= fence]
                after = [at for at in recorded[who] if at > fence]
                # The erasure's reply is the truth: what it erased is what had been kept.
                assert erased[who].answers == before[who] + len(kept_before), who
                if who in PLAYED_BEFORE or who in PRACTISING:
                    assert erased[who].members == 1
                elif erased[who].members == 0:  # "the quiz stores nothing about you"
                    assert kept_before == []
                rows = [m for m in members if m.user_id == who.user]
                assert len(rows) == (1 if after else 0), (who, rows)
                for m in rows:  # a new member: only clicks after the fence
                    answered = select(AnswerRow.answered_at).where(AnswerRow.member_id == m.id)
                    assert all(at > fence for at in (await s.execute(answered)).scalars())
            tombstones = [m for m in members if m.user_id.startswith("forgotten-")]
            for m in tombstones:
                assert (m.user_id, m.display_name, m.locale) == (
                    TOMBSTONE.format(id=m.id),
                    "",
                    None,
                )
                for model in (
                    AnswerRow,
                    PracticeCardRow,
                    ScoreRow,
                    ScoreDayRow,
                    ScorePeriodRow,
                    ScoreTopicRow,
                ):
                    count = select(func.count()).where(model.member_id == m.id)
                    assert (await s.execute(count)).scalar_one() == 0, (model, m.id)
            for who in MEMBERS[10:]:  # the others keep what they were told was recorded
                (m,) = [m for m in members if m.user_id == who.user]
                count = select(func.count()).where(AnswerRow.member_id == m.id)
                assert (await s.execute(count)).scalar_one() == before[who] + len(recorded[who])
            left = sum(1 for m in members if m.user_id in {w.user for w in ERASED})
        expected = await recompute(one)
        assert await actual(one) == expected
        statuses = [reply.outcome.status for who, _, reply in stamped if who in ERASED]
        print(
            f"\nseed {seed}: erased members' clicks {len(statuses)}: "
            f"{statuses.count(AnswerStatus.ERASED)} refused, "
            f"{statuses.count(AnswerStatus.RECORDED)} recorded (then erased, or after the "
            f"fence); erasures told 'nothing stored': "
            f"{sum(not f.members for f in erased.values())}, answers erased "
            f"{sum(f.answers for f in erased.values())}; member rows left of the erased: "
            f"{left} (the one who clicked again after), tombstones {len(tombstones)} with 0 rows"
        )
