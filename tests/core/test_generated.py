"""Generated questions in the quiz (`/quiz ask generated`, `/quiz ask <family>`, the
channel's share) and typed "predict the number" answers, through the core's commands and
interactions on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from bot import basics, generated
from bot.admin import AdminStatus, known
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import Invocation, run_command
from bot.domain import ChannelRef, Locale, Platform, Post
from bot.forms import Form, Submission
from bot.generated import FIELD
from bot.interactions import Click, Interactions
from bot.numeric import TYPE_NUMBER, numeric_target
from bot.quiz import QuizService
from questions.families import default_families
from questions.families.source import FamilySource
from storage.store import SqlStore
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.quiz import asked, quiz_of


@pytest.fixture
async def quiz(
    store: SqlStore, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[tuple[QuizService, Interactions]]:
    async with quiz_of(
        store,
        {Platform.SLACK: chat},
        bank,
        clock,
        features=[basics.feature, generated.feature],
        generated=FamilySource(default_families()),
        seed=5,
    ) as q:
        q.service.commands = q.commands  # type: ignore[attr-defined]
        yield q.service, q.interactions


async def run(service: QuizService, channel: ChannelRef, text: str, admin: bool = True) -> str:
    inv = Invocation(
        channel, user("ann"), Locale.EN, known(AdminStatus.YES if admin else AdminStatus.NO)
    )
    replies = await run_command(service.commands, service, inv, text)  # type: ignore[attr-defined]
    return "\n".join(r.message.body for r in replies)


async def test_ask_generated_and_ask_a_family_post_generated_questions(
    quiz: tuple[QuizService, Interactions], channel: ChannelRef, chat: RecordingChat
) -> None:
    service, _ = quiz
    await run(service, channel, "ask generated")
    await run(service, channel, "ask kv-cache-size")
    posts = await service.store.posts.history(channel)
    ids = [p.question_id for p in reversed(posts)]
    assert ids[0].startswith("gen-") and ids[1].startswith("gen-kv-cache-size-")
    stored = await service.store.questions.get(posts[0].question_hash)
    assert stored is not None and stored.inputs["generated"]["family"] == "kv-cache-size"
    unknown = await run(service, channel, "ask no-such-family")
    assert "generated" in unknown and "kv-cache-size" in unknown


async def test_a_channel_never_sees_a_generated_scenario_twice(
    quiz: tuple[QuizService, Interactions], channel: ChannelRef
) -> None:
    service, _ = quiz
    for _ in range(40):
        post = await asked(service, channel, topic="generated")
        await service.close(post.id)
    history = [p.question_id for p in await service.store.posts.history(channel)]
    assert len(history) == 40 and len(set(history)) == 40
    hashes = [p.question_hash for p in await service.store.posts.history(channel)]
    assert len(set(hashes)) == 40


async def test_the_generated_share_is_a_channel_setting_for_admins(
    quiz: tuple[QuizService, Interactions], channel: ChannelRef
) -> None:
    service, _ = quiz
    assert "25%" in await run(service, channel, "generated", admin=False)
    assert "Only workspace admins" in await run(service, channel, "generated 100", admin=False)
    assert "is not a share" in await run(service, channel, "generated 250")
    assert "100%" in await run(service, channel, "generated 100")
    for _ in range(5):
        post = await service.ask(channel)
        assert post is not None and post.question_id.startswith("gen-")
        await service.close(post.id)
    await run(service, channel, "generated 0")
    for _ in range(5):
        post = await service.ask(channel)
        assert post is not None and not post.question_id.startswith("gen-")
        await service.close(post.id)


async def test_scheduled_picks_follow_the_share(
    quiz: tuple[QuizService, Interactions], channel: ChannelRef
) -> None:
    service, _ = quiz
    settings = await service.store.settings.get(channel)
    picked = await service.pick(channel, [], replace(settings, generated_share=100))
    assert picked is not None and picked.id.startswith("gen-")
    picked = await service.pick(channel, [], replace(settings, generated_share=0))
    assert picked is not None and not picked.id.startswith("gen-")


async def _numeric_post(service: QuizService, channel: ChannelRef) -> Post:
    for _ in range(20):
        post = await asked(service, channel, topic="generated")
        q = await service.store.questions.get(post.question_hash)
        if q is not None and numeric_target(q) is not None:
            return post
        await service.close(post.id)
    raise AssertionError("no generated question with a typed answer in 20 draws")


async def test_a_typed_answer_is_right_within_the_tolerance_and_counts_once(
    quiz: tuple[QuizService, Interactions], channel: ChannelRef, chat: RecordingChat
) -> None:
    service, interactions = quiz
    post = await _numeric_post(service, channel)
    question = await service.store.questions.get(post.question_hash)
    assert question is not None
    target = numeric_target(question)
    assert target is not None
    shown = chat.of("post")[-1].message
    assert shown is not None
    (number_button,) = [b for b in shown.buttons if b.action == TYPE_NUMBER]

    click = Click.parse(number_button.encode(), user("ann"), channel)
    assert click is not None
    form = await interactions.open_form(click)
    assert isinstance(form, Form) and target.unit in form.fields[0].label

    def submit(who: str, text: str) -> Submission:
        sub = Submission.parse(form.id, {FIELD: text}, user(who), channel)
        assert sub is not None
        return sub

    for bad in ("lots", "-3", "nan", "1e99", ""):
        reply = await interactions.submit(submit("ann", bad))
        assert FIELD in reply.errors and reply.message is None
    assert await service.store.answers.for_post(post.id) == []

    exact = f"{target.value:.6f}".rstrip("0").rstrip(".")
    reply = await interactions.submit(submit("ann", exact))
    assert reply.message is not None and "✅ Correct" in reply.message.body
    off = str(target.value + target.tolerance * 3 + 1)
    wrong = await interactions.submit(submit("bob", off))
    assert wrong.message is not None and "❌ Not quite" in wrong.message.body
    again = await interactions.submit(submit("ann", off))
    assert again.message is not None and "already answered" in again.message.body
    assert sorted(await service.store.answers.values(post.id)) == sorted([float(exact), float(off)])

    reveal = await service.close(post.id)
    assert reveal is not None and len(reveal.guesses) == 2
    (thread,) = [s for s in chat.of("thread") if s.parent == post.message]
    assert thread.message is not None
    assert "The number:" in thread.message.body and "2 typed predictions:" in thread.message.body
    board = await service.leaderboard(channel, user("ann"))
    assert board.caller is not None and board.caller.correct == 1


async def test_a_typed_answer_on_a_bank_question_is_refused(
    quiz: tuple[QuizService, Interactions], channel: ChannelRef
) -> None:
    service, interactions = quiz
    await run(service, channel, "generated 0")
    post = await asked(service, channel)
    click = Click.parse(f"quiz:number:{post.id}:", user("ann"), channel)
    assert click is not None
    result = await interactions.open_form(click)
    assert not isinstance(result, Form) and "takes no typed answer" in result.body
    forged = Submission.parse(f"quiz:form:number:{post.id}:", {FIELD: "4"}, user("ann"), channel)
    assert forged is not None
    reply = await interactions.submit(forged)
    assert reply.message is not None and "not available" in reply.message.body
    assert await service.store.answers.for_post(post.id) == []


def test_a_trace_questions_reveal_gives_its_inputs_to_the_allocator_trace_demo(
    channel: ChannelRef,
) -> None:
    from bot.demos.dispatcher import question_demo_params
    from gpu_runner.demos import default_registry

    question = FamilySource().next_for(channel, [], "reserved-after-frees")
    assert question.demo == "allocator-trace"
    params = question_demo_params(question.inputs)
    inputs = params["inputs"]
    assert isinstance(inputs, dict) and "generated" not in inputs
    assert inputs["kind"] == "allocator-trace" and inputs["ops"]
    checked = default_registry().check("allocator-trace", params)  # within the demo's bounds
    assert checked["inputs"]
    assert question_demo_params({"kind": "kv-cache-bytes"}) == {}


@pytest.mark.parametrize(("agree", "words"), [(True, "holds"), (False, "not the question's")])
def test_a_gpu_runs_verdict_leads_the_demo_result(agree: bool, words: str) -> None:
    from bot.demos.messages import result_message
    from bot.domain import DemoResult, DemoState

    metrics = {"gpu_value": 4194304, "simulator_value": 2097152, "agree": agree, "ask": "x"}
    result = DemoResult(1, "allocator-trace", DemoState.SUCCEEDED, "NVIDIA H200", "report", metrics)
    body = result_message("allocator-trace", Locale.EN, result).body
    assert words in body.splitlines()[0] and body.endswith("report")
    simulated = replace(result, metrics={"gpu_value": None, "agree": None})
    assert result_message("allocator-trace", Locale.EN, simulated).body == "report"


async def test_a_typed_answer_is_refused_with_its_reason_and_echoed_whole(
    quiz: tuple[QuizService, Interactions], channel: ChannelRef
) -> None:
    service, interactions = quiz
    post = await _numeric_post(service, channel)
    question = await service.store.questions.get(post.question_hash)
    target = numeric_target(question) if question else None
    assert target is not None
    form_id = f"quiz:form:number:{post.id}:"

    async def refusal(text: str, locale: Locale = Locale.EN) -> str:
        sub = Submission.parse(form_id, {FIELD: text}, user("ann"), channel, locale)
        assert sub is not None
        reply = await interactions.submit(sub)
        assert reply.message is None, text
        return reply.errors[FIELD]

    digits = "9" * 44
    assert f"'{digits}' is too large: a prediction is at most 1" in await refusal(digits)
    assert "'-3' is negative" in await refusal("-3")
    assert "'lots' is not a number" in await refusal("lots")
    assert f"without 'GB' — the answer is in {target.unit}" in await refusal("80 GB")
    assert "'1.500' can be read as 1.5 or as 1500" in await refusal("1.500")
    assert "'1,500' μπορεί να διαβαστεί ως 1,5 ή ως 1500" in await refusal("1,500", Locale.EL)
    assert "είναι αρνητικός" in await refusal("-3", Locale.EL)
    assert await service.store.answers.for_post(post.id) == []


async def test_minus_zero_is_taken_as_zero(
    quiz: tuple[QuizService, Interactions], channel: ChannelRef
) -> None:
    service, interactions = quiz
    post = await _numeric_post(service, channel)
    sub = Submission.parse(f"quiz:form:number:{post.id}:", {FIELD: "-0"}, user("ann"), channel)
    assert sub is not None
    reply = await interactions.submit(sub)
    assert reply.message is not None and "-0" not in reply.message.body
    assert await service.store.answers.values(post.id) == [0.0]
