"""Team packs through the core, on SQLite and PostgreSQL: a member submits, an admin
approves, `/quiz ask team` asks it, a member flags it, the admin sees and retires it; bad
forms, non-admins and second decisions are told what is wrong and change nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import ChannelRef, Locale, Platform, PostKind
from bot.flags import FLAG
from bot.forms import Form
from bot.messages import Message
from bot.mydata import FORGET
from bot.review import APPROVE, REJECT, RETIRE
from bot.team import SubmissionState, Workspace
from tests.conftest import user
from tests.core.team import GOOD, TeamQuiz, buttons, team_quiz, text_of
from tests.fakes import RecordingChat
from tests.quiz import asked
from tests.scheduling.conftest import schedule_at

CHANNEL = ChannelRef(Platform.SLACK, "T1", "C1")
REVIEW = ChannelRef(Platform.SLACK, "T1", "CREVIEW")
WS = Workspace(Platform.SLACK, "T1")
ANN, BOB, ROOT = user("ann"), user("bob"), user("root")


@pytest.fixture
async def quiz(
    store: Any, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[TeamQuiz]:
    async with team_quiz(store, chat, bank, clock, admins={ROOT.user}) as quiz:
        yield quiz


async def test_submit_review_ask_flag_and_retire_a_team_question(quiz: TeamQuiz) -> None:
    chat, store = quiz.chat, quiz.service.store
    assert "New submissions will appear" in text_of(await quiz.run(REVIEW, ROOT, "review here"))

    done = await quiz.submit(ANN, CHANNEL)
    assert done.ok and done.message is not None and "waits for review" in done.message.body
    (card,) = [s for s in chat.of("post") if s.channel == REVIEW]
    assert card.message is not None and GOOD["prompt"] in card.message.body
    approve = buttons(card.message, APPROVE)[0]

    refused = await quiz.click(approve, BOB, REVIEW)
    assert isinstance(refused, Message) and "Only workspace admins" in refused.body
    (pending,) = await store.team.listing(WS, SubmissionState.PENDING)  # type: ignore[attr-defined]

    approved = await quiz.click(approve, ROOT, REVIEW)
    assert isinstance(approved, Message) and "joins the team pack" in approved.body
    again = await quiz.click(approve, ROOT, REVIEW)
    assert isinstance(again, Message) and "already approved by root" in again.body
    reject = buttons(card.message, REJECT)[0]
    late = await quiz.click(reject, ROOT, REVIEW)
    assert isinstance(late, Message) and "already approved" in late.body
    # The author is told privately where they submitted; the card loses its buttons.
    (told,) = [s for s in chat.of("private") if s.user == ANN]
    assert told.channel == CHANNEL and told.message is not None
    assert "was approved by root" in told.message.body
    (edited,) = [s for s in chat.of("update") if s.channel == REVIEW]
    assert edited.message is not None and not edited.message.buttons

    await quiz.run(CHANNEL, ANN, "ask team")
    (post,) = await quiz.service.store.posts.open_in_channel(CHANNEL)
    assert post.question_id == pending.question.id
    await quiz.service.record_answer(post.id, BOB, 1)
    reveal = await quiz.service.close(post.id)
    assert reveal is not None and reveal.correct_count == 1
    board = await quiz.service.leaderboard(CHANNEL, BOB)
    assert board.caller is not None and board.caller.points == 10

    (thread,) = chat.of("thread")
    assert thread.message is not None
    (report,) = buttons(thread.message, FLAG)
    form = await quiz.click(report, BOB, CHANNEL)
    assert isinstance(form, Form) and form.title == "Report a problem"
    bad = await quiz.fill(form, {"reason": "meh", "note": ""}, BOB, CHANNEL)
    assert "'meh' is not a reason" in bad.errors["reason"]
    good = await quiz.fill(form, {"reason": "1", "note": "it moved to gpu-c"}, BOB, CHANNEL)
    assert good.message is not None and "the admins will look" in good.message.body
    twice = await quiz.fill(form, {"reason": "typo", "note": ""}, BOB, CHANNEL)
    assert twice.message is not None and "already reported" in twice.message.body

    listing = await quiz.run(CHANNEL, ROOT, "review")
    assert "No question is waiting for review" in text_of(listing)
    flagged = listing[1].message
    assert f"{post.question_id}" in flagged.body and "1 report (wrong answer 1)" in flagged.body
    assert "it moved to gpu-c" in flagged.body
    report = text_of(await quiz.run(CHANNEL, ROOT, "report"))
    assert f"*{post.question_id}*" in report and "reported 1 time" in report
    (retire,) = buttons(flagged, RETIRE)
    assert "Only workspace admins" in str(await quiz.click(retire, BOB, CHANNEL))
    retired = await quiz.click(retire, ROOT, CHANNEL)
    assert isinstance(retired, Message) and "never asked again" in retired.body
    assert "no approved questions" in text_of(await quiz.run(CHANNEL, ANN, "ask team"))
    assert "(retired)" in (await quiz.run(CHANNEL, ROOT, "review"))[1].message.body
    assert "is back" in text_of(await quiz.run(CHANNEL, ROOT, f"retire {post.question_id} undo"))


async def test_a_rejection_asks_a_reason_and_the_author_reads_it(quiz: TeamQuiz) -> None:
    await quiz.submit(ANN, CHANNEL)
    (pending, flags) = await quiz.run(CHANNEL, ROOT, "review")
    assert (
        "Waiting for review" in pending.message.title
        and "No question has been" in flags.message.body
    )
    reject = buttons(pending.message, REJECT)[0]
    assert "Only workspace admins" in str(await quiz.click(reject, BOB, CHANNEL))
    form = await quiz.click(reject, ROOT, CHANNEL)
    assert isinstance(form, Form)
    empty = await quiz.fill(form, {"reason": "  "}, ROOT, CHANNEL)
    assert "Write a reason" in empty.errors["reason"]
    by_bob = await quiz.fill(form, {"reason": "no"}, BOB, CHANNEL)
    assert by_bob.message is not None and "Only workspace admins" in by_bob.message.body
    done = await quiz.fill(form, {"reason": "the job moved last week"}, ROOT, CHANNEL)
    assert done.message is not None and "Rejected question" in done.message.body
    (told,) = [s for s in quiz.chat.of("private") if s.user == ANN]
    assert told.message is not None and "Reason: the job moved last week" in told.message.body
    again = await quiz.submit(ANN, CHANNEL)
    assert again.message is not None and "not accepted" in again.message.body


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({**GOOD, "prompt": " "}, "prompt", "Write the question"),
        ({**GOOD, "choices": "only one"}, "choices", "you wrote 1"),
        ({**GOOD, "answer": "D"}, "answer", "'D' is not one of your choices"),
        ({**GOOD, "explanation": ""}, "explanation", "Write why the answer is right"),
        ({**GOOD, "details": ""}, "details", "Write a topic first"),
        ({**GOOD, "details": "our-cluster, hard"}, "details", "'hard' is not a difficulty"),
        ({**GOOD, "prompt": "x" * 301}, "prompt", "301 characters, the limit is 300"),
        ({**GOOD, "choices": "same\nSame"}, "choices", "every choice must differ"),
        ({**GOOD, "details": "Our_Cluster!"}, "details", "is not kebab-case"),
        ({**GOOD, "details": "our-cluster, 2, http://x"}, "details", "is not an https:// link"),
    ],
)
async def test_a_bad_form_comes_back_with_the_problem_under_its_field(
    quiz: TeamQuiz, values: dict[str, str], field: str, words: str
) -> None:
    reply = await quiz.submit(ANN, CHANNEL, values)
    assert words in reply.errors[field], reply.errors
    assert reply.form is not None and reply.form.fields[0].value == values["prompt"]
    assert await quiz.service.store.team.listing(WS) == []  # type: ignore[attr-defined]


async def test_every_empty_field_is_named_at_once(quiz: TeamQuiz) -> None:
    reply = await quiz.submit(ANN, CHANNEL, dict.fromkeys(GOOD, ""))
    assert set(reply.errors) == set(GOOD)


async def test_a_greek_only_team_question_is_shown_in_greek_in_an_english_channel(
    quiz: TeamQuiz,
) -> None:
    greek = ChannelRef(Platform.SLACK, "T1", "CEL")
    await quiz.service.set_locale(greek, Locale.EL)
    values = {**GOOD, "prompt": "Ποιος κόμβος τρέχει τη νυχτερινή εκπαίδευση;"}
    assert (await quiz.submit(ANN, greek, values)).ok
    (sub,) = await quiz.service.store.team.listing(WS)  # type: ignore[attr-defined]
    assert sub.question.locales == (Locale.EL,)
    await quiz.click(
        buttons((await quiz.run(CHANNEL, ROOT, "review"))[0].message, APPROVE)[0],
        ROOT,
        CHANNEL,
    )
    await quiz.run(CHANNEL, ANN, "ask team")
    (posted,) = [s for s in quiz.chat.of("post") if s.channel == CHANNEL]
    assert posted.message is not None and "Ποιος κόμβος" in posted.message.body


async def test_packs_choose_what_a_channel_gets_and_practice_follows(quiz: TeamQuiz) -> None:
    service = quiz.service
    shown = text_of(await quiz.run(CHANNEL, ANN, "packs"))
    assert "Built-in questions: on" in shown and "Team pack: on (0 approved)" in shown
    assert "Only workspace admins" in text_of(await quiz.run(CHANNEL, ANN, "packs team off"))
    assert "without questions" in text_of(await quiz.run(CHANNEL, ROOT, "packs builtin off"))
    await quiz.submit(ANN, CHANNEL)
    (pending, _) = await quiz.run(CHANNEL, ROOT, "review")
    await quiz.click(buttons(pending.message, APPROVE)[0], ROOT, CHANNEL)
    changed = text_of(await quiz.run(CHANNEL, ROOT, "packs builtin off"))
    assert "Built-in questions: off" in changed and "Team pack: on (1 approved)" in changed
    settings = await service.store.settings.get(CHANNEL)
    assert not settings.builtin_pack and settings.team_pack
    history: list[str] = []
    for _ in range(3):  # only the team question is left: it repeats
        picked = await service.pick(CHANNEL, history, settings)
        assert picked is not None and picked.id.startswith("team-")
        history.insert(0, picked.id)
    practice = text_of(await quiz.run(CHANNEL, BOB, "practice"))
    assert GOOD["prompt"] in practice
    assert "'nope on' is not a pack setting" in text_of(
        await quiz.run(CHANNEL, ROOT, "packs nope on")
    )
    await quiz.run(CHANNEL, ROOT, "packs builtin on")
    await quiz.run(CHANNEL, ROOT, "packs team off")
    settings = await service.store.settings.get(CHANNEL)
    pool = await service.pools.for_channel(CHANNEL, settings)
    assert len(pool) == len(service.bank) and not any(q.id.startswith("team-") for q in pool)


async def test_a_retired_bank_question_is_never_picked_in_that_workspace_only(
    quiz: TeamQuiz,
) -> None:
    service = quiz.service
    first = service.bank.in_id_order()[0]
    assert "Unknown question id" in text_of(await quiz.run(CHANNEL, ROOT, "retire no-such-id"))
    assert "Retired" in text_of(await quiz.run(CHANNEL, ROOT, f"retire {first.id}"))
    assert "already retired" in text_of(await quiz.run(CHANNEL, ROOT, f"retire {first.id}"))
    settings = await service.store.settings.get(CHANNEL)
    assert first.id not in await service.pools.for_channel(CHANNEL, settings)
    elsewhere = ChannelRef(Platform.SLACK, "T2", "C9")
    assert first.id in await service.pools.for_channel(
        elsewhere, replace(settings, channel=elsewhere)
    )
    history: list[str] = []
    for _ in range(len(service.bank)):  # a whole round: every other question once
        picked = await service.pick(CHANNEL, history, replace(settings, generated_share=0))
        assert picked is not None and picked.id != first.id
        history.insert(0, picked.id)


async def test_mydata_sends_a_private_file_and_forget_me_needs_the_owners_click(
    quiz: TeamQuiz,
) -> None:
    service = quiz.service
    await quiz.submit(ANN, CHANNEL)
    post = await asked(service, CHANNEL, kind=PostKind.SCHEDULED)
    await service.record_answer(post.id, ANN, 0)
    await service.record_answer(post.id, BOB, 0)
    await service.close(post.id)
    assert "I sent you a file" in text_of(await quiz.run(CHANNEL, ANN, "mydata"))
    (sent,) = quiz.chat.of("file")
    assert sent.user == ANN and sent.file is not None
    data = json.loads(sent.file.data)
    assert data["member"]["user"] == ANN.user and len(data["answers"]) == 1
    assert data["answers"][0]["question_id"] == post.question_id
    assert data["submitted_questions"][0]["state"] == "pending"
    assert data["scores"][0]["answered"] == 1

    (confirm,) = await quiz.run(CHANNEL, ANN, "forget-me")
    (erase,) = buttons(confirm.message, FORGET)
    other = await quiz.click(erase, BOB, CHANNEL)
    assert isinstance(other, Message) and "belongs to someone else" in other.body
    assert (await service.leaderboard(CHANNEL, ANN)).caller is not None
    done = await quiz.click(erase, ANN, CHANNEL)
    assert isinstance(done, Message) and "1 answer and" in done.body
    board = await service.leaderboard(CHANNEL, ANN)
    assert board.caller is None and [r.user.user for r in board.rows] == [BOB.user]
    (kept,) = await service.store.team.listing(WS)  # type: ignore[attr-defined]
    assert kept.author is None
    nothing = await quiz.click(erase, ANN, CHANNEL)
    assert isinstance(nothing, Message) and "nothing to erase" in nothing.body


async def test_mydata_where_the_platform_cannot_send_files_names_the_operator_command(
    quiz: TeamQuiz,
) -> None:
    class NoFiles(RecordingChat):
        send_file = None  # type: ignore[assignment]

    quiz.service.chats = {Platform.SLACK: NoFiles()}  # type: ignore[dict-item]
    said = text_of(await quiz.run(CHANNEL, ANN, "mydata"))
    assert "quizbot member export slack:T1:UANN" in said


@pytest.mark.parametrize("locale", list(Locale))
async def test_every_form_fits_slack_and_discord_limits_in_each_language(
    quiz: TeamQuiz, locale: Locale
) -> None:
    await quiz.service.set_locale(CHANNEL, locale)
    (reply,) = await quiz.run(CHANNEL, ANN, "submit")
    assert reply.form is not None
    await quiz.fill(reply.form, GOOD, ANN, CHANNEL)
    (pending, _) = await quiz.run(CHANNEL, ROOT, "review")
    reject = await quiz.click(buttons(pending.message, REJECT)[0], ROOT, CHANNEL)
    post = await asked(quiz.service, CHANNEL, kind=PostKind.SCHEDULED)
    await quiz.service.close(post.id)
    (thread,) = quiz.chat.of("thread")
    assert thread.message is not None
    flag = await quiz.click(buttons(thread.message, FLAG)[0], BOB, CHANNEL)
    for form in (reply.form, reject, flag):
        assert isinstance(form, Form)
        assert len(form.title) <= 24, form.title  # Slack's modal title
        for f in form.fields:
            assert len(f.label) <= 45, f.label  # Discord's text input label
            assert len(f.placeholder) <= 100, f.placeholder  # Discord's placeholder
            assert f.max_length <= 4000  # Discord's text input
        assert len(form.id) <= 100  # Discord's custom_id


async def test_scheduled_picks_follow_the_channels_packs_and_see_a_new_revision(
    quiz: TeamQuiz,
) -> None:
    from bot.domain import DemoPolicy

    store = quiz.service.store
    schedule = await schedule_at(store, CHANNEL, "09:00", DemoPolicy.OFF, quiz.service.clock.now())
    await quiz.submit(ANN, CHANNEL)
    (pending, _) = await quiz.run(CHANNEL, ROOT, "review")
    await quiz.click(buttons(pending.message, APPROVE)[0], ROOT, CHANNEL)
    await quiz.run(CHANNEL, ROOT, "packs builtin off")
    inputs = await store.schedules.claim_inputs([schedule.id])  # type: ignore[attr-defined]
    settings, history = inputs[schedule.id]
    assert (settings.builtin_pack, settings.team_pack, settings.pack_revision) == (False, True, 1)
    picked = await quiz.service.pick(CHANNEL, history, replace(settings, generated_share=0))
    assert picked is not None and picked.id.startswith("team-")
    await quiz.run(CHANNEL, ROOT, f"retire {picked.id}")
    fresh = (await store.schedules.claim_inputs([schedule.id]))[schedule.id][0]  # type: ignore[attr-defined]
    assert fresh.pack_revision == 2  # read with the settings: the pick reloads the pack
    assert await quiz.service.pick(CHANNEL, history, replace(fresh, generated_share=0)) is None


async def test_buttons_and_forms_for_another_workspace_or_out_of_range_change_nothing(
    quiz: TeamQuiz,
) -> None:
    from bot.forms import Submission
    from bot.messages import Button

    await quiz.submit(ANN, CHANNEL)
    (sub,) = await quiz.service.store.team.listing(WS)  # type: ignore[attr-defined]
    elsewhere = ChannelRef(Platform.SLACK, "T2", "C2")
    intruder = replace(ROOT, workspace="T2")
    for value in (str(sub.id), "9" * 40, "٣"):
        said = await quiz.click(Button("", APPROVE, 0, value), intruder, elsewhere)
        assert isinstance(said, Message) and "not available" in said.body
    post = await asked(quiz.service, CHANNEL, kind=PostKind.SCHEDULED)
    flag = Submission(
        "flag", post.id, "", {"reason": "1", "note": ""}, replace(BOB, workspace="T2"), elsewhere
    )
    reply = await quiz.interactions.submit(flag)
    assert reply.message is not None and "not available" in reply.message.body
    assert await quiz.service.store.team.flagged(WS) == []  # type: ignore[attr-defined]
    assert (await quiz.service.store.team.get(sub.id)).state is SubmissionState.PENDING  # type: ignore[attr-defined,union-attr]
