"""The team pack repository on SQLite and PostgreSQL: idempotent adds, one winner per
decision, the revision that tells replicas to reload, retirements, review channel, flags."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.clock import FakeClock
from bot.domain import ChannelRef, Locale, MessageRef, Platform, PostKind, Question
from bot.team import FlagReason, Origin, SubmissionState, Workspace, team_question
from storage.store import SqlStore
from tests.conftest import user

WS = Workspace(Platform.SLACK, "T1")
CHANNEL = ChannelRef(Platform.SLACK, "T1", "C1")


def make_question(n: int, locale: str = "en") -> Question:
    data: dict[str, Any] = {
        "id": "x",
        "topic": "our-cluster",
        "difficulty": 2,
        "answer": 1,
        "demo": None,
        "references": [],
        locale: {
            "prompt": f"Which node runs job {n}?",
            "choices": ["gpu-a", "gpu-b", "gpu-c"],
            "explanation": f"Job {n} is pinned to gpu-b.",
        },
    }
    return team_question(data)


async def test_adding_the_same_questions_twice_adds_nothing_the_second_time(
    store: SqlStore, clock: FakeClock
) -> None:
    questions = [make_question(n) for n in range(3)]
    first = await store.team.add(
        WS, questions, origin=Origin.IMPORT, approved=False, now=clock.now()
    )
    again = await store.team.add(
        WS, [*questions, make_question(3)], origin=Origin.IMPORT, approved=False, now=clock.now()
    )
    assert [t.question.id for t in first] == [q.id for q in questions]
    assert [t.question.id for t in again] == [make_question(3).id]
    assert len(await store.team.listing(WS)) == 4
    other = Workspace(Platform.DISCORD, "G1")  # another workspace has a pack of its own
    assert (
        len(
            await store.team.add(
                other, questions, origin=Origin.IMPORT, approved=True, now=clock.now()
            )
        )
        == 3
    )


async def test_of_two_admins_approving_at_once_exactly_one_wins(
    store: SqlStore, clock: FakeClock
) -> None:
    (sub,) = await store.team.add(
        WS,
        [make_question(1, "el")],
        origin=Origin.CHAT,
        approved=False,
        now=clock.now(),
        author=user("ann"),
        channel=CHANNEL,
    )
    assert sub.author == user("ann") and sub.channel == CHANNEL
    before = await store.team.state(WS)
    results = await asyncio.gather(
        store.team.decide(sub.id, WS, SubmissionState.APPROVED, user("root"), clock.now()),
        store.team.decide(sub.id, WS, SubmissionState.REJECTED, user("boss"), clock.now(), "no"),
    )
    assert sorted(won for won, _ in results) == [False, True]
    fresh = await store.team.get(sub.id)
    assert fresh is not None and fresh.state is not SubmissionState.PENDING
    after = await store.team.state(WS, before.revision)
    if fresh.state is SubmissionState.APPROVED:
        assert after.revision == before.revision + 1
        (approved,) = (await store.team.state(WS)).approved
        assert (
            approved.locales == (Locale.EL,) and approved.content_hash == sub.question.content_hash
        )
    else:
        assert fresh.reason == "no" and after.revision == before.revision
    # Another workspace's admin cannot decide it.
    won, seen = await store.team.decide(
        sub.id, Workspace(Platform.SLACK, "T2"), SubmissionState.APPROVED, user("x"), clock.now()
    )
    assert (won, seen) == (False, None)


async def test_the_revision_moves_with_approvals_and_retirements_only(
    store: SqlStore, clock: FakeClock
) -> None:
    empty = await store.team.state(WS)
    assert (empty.revision, empty.approved, empty.retired) == (0, (), frozenset())
    await store.team.add(
        WS, [make_question(1)], origin=Origin.IMPORT, approved=False, now=clock.now()
    )
    assert (await store.team.state(WS, 0)).revision == 0  # pending: picks are unchanged
    await store.team.add(
        WS, [make_question(2)], origin=Origin.IMPORT, approved=True, now=clock.now()
    )
    state = await store.team.state(WS, 0)
    assert state.revision == 1 and [q.id for q in state.approved] == [make_question(2).id]
    assert (await store.team.state(WS, 1)).approved == ()  # unchanged: only the number read
    assert await store.team.retire(WS, "bank-question", user("root"), clock.now())
    assert not await store.team.retire(WS, "bank-question", user("root"), clock.now())
    state = await store.team.state(WS, 1)
    assert state.revision == 2 and state.retired == {"bank-question"}
    assert await store.team.restore(WS, "bank-question")
    assert not await store.team.restore(WS, "bank-question")
    assert (await store.team.state(WS, 2)).retired == frozenset()


async def test_review_channel_and_review_message_are_remembered(
    store: SqlStore, clock: FakeClock
) -> None:
    assert await store.team.review_channel(WS) is None
    review = ChannelRef(Platform.SLACK, "T1", "CREVIEW")
    await store.team.set_review_channel(review)
    await store.team.set_review_channel(review)
    assert await store.team.review_channel(WS) == review
    (sub,) = await store.team.add(
        WS, [make_question(5)], origin=Origin.CHAT, approved=False, now=clock.now()
    )
    await store.team.set_review_message(sub.id, MessageRef(review, "1700.1"))
    fresh = await store.team.get(sub.id)
    assert fresh is not None and fresh.review_message == MessageRef(review, "1700.1")


async def test_flags_count_once_per_member_and_post_and_rank_most_reported_first(
    store: SqlStore, clock: FakeClock, service: Any
) -> None:
    posts = []
    for _ in range(2):
        post = await service.ask(CHANNEL, kind=PostKind.SCHEDULED)
        posts.append(post)
    q0 = await store.questions.get(posts[0].question_hash)
    q1 = await store.questions.get(posts[1].question_hash)
    assert q0 is not None and q1 is not None
    assert await store.team.flag(posts[0], q0, user("ann"), FlagReason.TYPO, "teh", clock.now())
    assert not await store.team.flag(
        posts[0], q0, user("ann"), FlagReason.WRONG_ANSWER, "", clock.now()
    )
    for name in ("bob", "cy"):
        assert await store.team.flag(
            posts[1], q1, user(name), FlagReason.WRONG_ANSWER, f"by {name}", clock.now()
        )
    await store.team.retire(WS, q1.id, None, clock.now())
    top = await store.team.flagged(WS)
    assert [(f.question_id, f.count, f.retired) for f in top] == [
        (q1.id, 2, True),
        (q0.id, 1, False),
    ]
    assert top[0].reasons == {FlagReason.WRONG_ANSWER: 2} and top[0].latest_note == "by cy"
    assert await store.team.flagged(Workspace(Platform.SLACK, "T2")) == []


async def test_the_migration_renames_the_consoles_workspace_and_keeps_its_boards(
    db_url: str,
) -> None:
    from sqlalchemy import text

    from storage.engine import create_engine
    from tests.databases import migrate

    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(migrate, "0007")
            await conn.execute(
                text(
                    "INSERT INTO channels (platform, workspace, channel, locale, timezone, "
                    "demo_policy, created_at) VALUES ('console', 'local', 'quiz', 'en', 'UTC', "
                    "'auto', '2027-01-01 00:00:00')"
                )
            )
            await conn.execute(
                text(
                    "INSERT INTO members (platform, workspace, user_id, display_name) "
                    "VALUES ('console', 'local', 'you', 'you')"
                )
            )
            await conn.execute(
                text(
                    "INSERT INTO score_histograms (board, starts, points, players) VALUES "
                    "('workspace:console:local:all', '1970-01-01', 10, 1)"
                )
            )
        async with engine.begin() as conn:
            await conn.run_sync(migrate, "head")
            found = await conn.execute(
                text(
                    "SELECT (SELECT workspace FROM channels), (SELECT workspace FROM members), "
                    "(SELECT board FROM score_histograms)"
                )
            )
            assert tuple(found.one()) == ("console", "console", "workspace:console:console:all")
    finally:
        await engine.dispose()
