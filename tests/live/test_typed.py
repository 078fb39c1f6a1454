"""Typed answers in a live round: a generated question with a numeric target opens its
form while it is open; a submission in time is locked in (and scored for speed when within
the tolerance); one after the deadline is refused with the time it missed by."""

from __future__ import annotations

from datetime import timedelta

from bot.admin import NOBODY
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import UserRef
from bot.forms import Form, Submission
from bot.interactions import Click
from bot.numeric import TYPE_NUMBER, numeric_target
from storage.store import SqlStore
from tests.live.harness import CHANNEL, Live, live_quiz, player

ANN, BOB, CY = player("ann"), player("bob"), player("cy")


async def open_form(live: Live, post_id: int, user: UserRef) -> Form:
    click = Click.parse(f"quiz:{TYPE_NUMBER}:{post_id}:", user, CHANNEL, admin=NOBODY)
    assert click is not None
    form = await live.quiz.interactions.open_form(click)
    assert isinstance(form, Form), form
    return form


async def submit(live: Live, form: Form, value: str, user: UserRef) -> str:
    sub = Submission.parse(form.id, {"value": value}, user, CHANNEL)
    assert sub is not None
    reply = await live.quiz.interactions.submit(sub)
    assert reply.ok and reply.message is not None, reply
    return reply.message.body


async def test_typed_answers_in_a_live_round_in_time_and_late(
    store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> None:
    async with live_quiz(store, bank, clock, generated=True) as live:
        assert await live.command("live 1 20 generated") == []
        running = await live.active()
        assert running is not None
        await live.at(timedelta(seconds=30))
        (posted,) = live.questions()
        assert posted.message is not None
        typed = [b for b in posted.message.buttons if b.action == TYPE_NUMBER]
        assert len(typed) == 1
        post_id = typed[0].post_id
        post = await store.posts.get(post_id)
        assert post is not None
        question = await store.questions.get(post.question_hash)
        assert question is not None
        target = numeric_target(question)
        assert target is not None
        clock.advance(timedelta(seconds=10))
        form = await open_form(live, post_id, ANN)
        assert "Locked in" in await submit(live, form, f"{target.value:g}", ANN)  # 750
        late_form = await open_form(live, post_id, BOB)  # opens in time ...
        clock.advance(timedelta(seconds=12))
        refused = await submit(live, late_form, f"{target.value:g}", BOB)  # ... sent late
        assert "2 s late" in refused and "not counted" in refused
        await live.tick()
        (results,) = live.threads("Results · question 1")
        assert results.message is not None and "1 of 1 right" in results.message.body
        (podium,) = live.posts("Live round: the podium")
        assert podium.message is not None and "ann — 750 points" in podium.message.body
        answers = await store.live.answers(running.id)
        assert [(a.user.user, a.correct) for a in answers] == [("UANN", True)]
