"""Forms on Discord: a click whose kind opens a form is answered with the modal itself
(response type 9); its submission (interaction type 5) is answered privately with the
outcome, or with each problem named and what was typed given back (Discord cannot show
the modal again with errors). The typed answer of a generated question, end to end, over
the gateway and the HTTP endpoint."""

from __future__ import annotations

import asyncio

import pytest

from adapters.discord.forms import modal_response, modal_values, problems_message
from bot import basics
from bot.commands import Command, Invocation, Reply
from bot.domain import ChannelRef, Locale, Platform, UserRef
from bot.features import Feature, Parts, Quiz
from bot.forms import FieldKind, Form, FormField, Submission, SubmitReply
from bot.messages import Message
from bot.numeric import numeric_target
from bot.quiz import QuizService
from tests.adapters.discord.conftest import QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord, Json
from tests.adapters.discord.helpers import ADMIN, ask, custom_ids, modal_for, said, text_of

NUMBER_FIELD = FormField(
    "value",
    "Your prediction, in MiB (±1 counts as right, and more words here)",
    FieldKind.NUMBER,
    max_length=32,
    placeholder="a number, e.g. 42",
)


def test_a_form_becomes_a_modal_within_discords_limits() -> None:
    note = FormField("note", "Why", FieldKind.PARAGRAPH, required=False, value="draft")
    form = Form(
        "number",
        12,
        "",
        "A title far longer than the forty-five characters",
        (
            NUMBER_FIELD,
            note,
        ),
    )
    modal = modal_response(form)
    assert modal is not None and modal["type"] == 9
    data = modal["data"]
    assert data["custom_id"] == "quiz:form:number:12:" and len(data["title"]) <= 45
    (number,), (paragraph,) = (row["components"] for row in data["components"])
    assert all(row["type"] == 1 for row in data["components"])
    # The label's parenthesis moves to the placeholder instead of being cut off.
    assert number["label"] == "Your prediction, in MiB" and number["style"] == 1
    assert number["placeholder"].startswith("±1 counts as right")
    assert number["placeholder"].endswith("a number, e.g. 42")
    assert (number["type"], number["custom_id"], number["max_length"]) == (4, "value", 32)
    assert number["required"] and "value" not in number
    assert paragraph["style"] == 2 and not paragraph["required"] and paragraph["value"] == "draft"


def test_a_form_whose_id_cannot_come_back_is_not_opened() -> None:
    form = Form("x" * 40, 10**18, "v" * 64, "Title", (NUMBER_FIELD,))
    assert len(form.id) > 100 and modal_response(form) is None


def test_submitted_values_are_read_from_rows_and_labels() -> None:
    data: Json = {
        "custom_id": "quiz:form:number:1:",
        "components": [
            {"type": 1, "components": [{"type": 4, "custom_id": "value", "value": "42"}]},
            {"type": 18, "component": {"type": 4, "custom_id": "why", "value": "because"}},
            {"type": 10, "content": "text, not an input"},
        ],
    }
    assert modal_values(data) == {"value": "42", "why": "because"}  # type: ignore[arg-type]


def test_problems_name_each_field_and_give_back_what_was_typed() -> None:
    user = UserRef(Platform.DISCORD, "1", "2", "ann")
    channel = ChannelRef(Platform.DISCORD, "1", "3")
    typed = {"value": "lots ```of``` MiB", "note": ""}
    sub = Submission("number", 1, "", typed, user, channel)
    form = Form("number", 1, "", "T", (NUMBER_FIELD,))
    reply = SubmitReply(errors={"value": "'lots' is not a number"}, form=form)
    body = problems_message(sub, reply, Locale.EN).body
    assert "Nothing was saved" in body
    assert "*Your prediction, in MiB (±1" in body and "'lots' is not a number" in body
    # What was typed comes back in a code block that its own fences cannot end.
    assert "```\nlots `\u200b`\u200b`of`\u200b`\u200b` MiB\n```" in body
    greek = problems_message(sub, reply, Locale.EL).body
    assert "Δεν αποθηκεύτηκε" in greek


def number_button(message: Json) -> str:
    return next(i for i in custom_ids(message) if i.startswith("quiz:number:"))


@both_modes
async def test_a_generated_question_is_answered_with_a_typed_number_in_a_modal(
    fake: FakeDiscord,
    run_adapter: Runner,
    generated: Quiz,
) -> None:
    store = generated.service.store
    async with run_adapter(quiz=generated):
        message, post_id = await ask(fake, "request-rounding")
        post = await store.posts.get(post_id)
        assert post is not None
        question = await store.questions.get(post.question_hash)
        assert question is not None and question.id.startswith("gen-request-rounding-")
        target = numeric_target(question)
        assert target is not None

        click = await fake.click(message["id"], number_button(message), user_id="7801")
        modal = await modal_for(fake, click)
        (callback,) = fake.callbacks(click)
        assert callback.json["type"] == 9  # the modal is the initial response itself
        assert modal["custom_id"] == f"quiz:form:number:{post_id}:"
        ((field,),) = (row["components"] for row in modal["components"])
        assert field["custom_id"] == "value" and len(field["label"]) <= 45
        assert "counts as right" in field["label"] + field["placeholder"]

        bad = await fake.submit_modal(modal["custom_id"], {"value": "lots"}, user_id="7801")
        (refused,) = await said(fake, bad)
        assert refused["flags"] == EPHEMERAL
        assert "Nothing was saved" in text_of(refused)
        assert "'lots' is not a number" in text_of(refused) and "```\nlots\n```" in text_of(refused)
        assert await store.answers.for_post(post_id) == []

        typed = f"{target.value:.6f}".rstrip("0").rstrip(".")
        good = await fake.submit_modal(modal["custom_id"], {"value": typed}, user_id="7801")
        (outcome,) = await said(fake, good)
        assert outcome["flags"] == EPHEMERAL and "✅ Correct" in text_of(outcome)
        (answer,) = await store.answers.for_post(post_id)
        assert answer.correct and answer.user.user == "7801"

        again = await fake.submit_modal(modal["custom_id"], {"value": "1"}, user_id="7801")
        (second,) = await said(fake, again)
        assert "only your first answer counts" in text_of(second)
        assert len(await store.answers.for_post(post_id)) == 1

        close = await fake.command("close", permissions=ADMIN, user_id="7802")
        # Inline it says "Done."; after a deferral (a slow close) the line is removed.
        await fake.until(lambda: fake.settled(close))
        (reveal,) = await fake.wait_for("POST", rf"/channels/{message['id']}/messages")
    shown = text_of(reveal.json)
    assert "The number:" in shown and "1 typed prediction:" in shown


async def test_a_typed_answer_button_on_a_question_without_a_number_says_so(
    fake: FakeDiscord, run_adapter: Runner, generated: Quiz
) -> None:
    async with run_adapter(quiz=generated):
        message, post_id = await ask(fake, "fragmentation")  # a bank question
        click = await fake.click(message["id"], f"quiz:number:{post_id}:", user_id="7803")
        (reply,) = await said(fake, click)
        assert fake.modal_of(click) is None and reply["flags"] == EPHEMERAL
        assert "takes no typed answer" in text_of(reply)


@both_modes
async def test_a_submission_of_a_form_that_is_not_ours_changes_nothing(
    fake: FakeDiscord, run_adapter: Runner, generated: Quiz
) -> None:
    async with run_adapter(quiz=generated):
        _, post_id = await ask(fake, "request-rounding")
        for custom_id in ("someone_elses_modal", f"quiz:form:number:{10**30}:"):
            sub = await fake.submit_modal(custom_id, {"value": "1"}, user_id="7804")
            (reply,) = await said(fake, sub)
            assert "not available any more" in text_of(reply)
        assert await generated.service.store.answers.for_post(post_id) == []


NOTE = Form("note", 0, "", "Leave a note", (FormField("text", "Your note", FieldKind.PARAGRAPH),))


@pytest.mark.parametrize("slow", [False, True])
async def test_a_command_whose_answer_is_a_form_opens_it(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith, slow: bool
) -> None:
    release = asyncio.Event()
    if not slow:
        release.set()

    async def note(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        await release.wait()
        return [Reply(Message(body="Use /quiz note again to leave a note."), form=NOTE)]

    def notes(parts: Parts) -> Feature:
        return Feature("notes", commands=[Command("note", note, "note", "leave a note")])

    async with quiz_with(basics.feature, notes) as quiz, run_adapter(quiz=quiz, ack_deadline=0.2):
        inter = await fake.command("note", user_id="7805")
        if not slow:
            modal = await modal_for(fake, inter)
            assert modal["custom_id"] == "quiz:form:note:0:"
            assert modal["components"][0]["components"][0]["style"] == 2
            return
        # The core was slower than the deadline: a modal cannot follow a deferral, so the
        # form's fallback message replaces "thinking…".
        await fake.until(lambda: bool(fake.callbacks(inter)))
        release.set()
        (reply,) = await said(fake, inter)
        assert fake.modal_of(inter) is None and fake.callbacks(inter)[0].json["type"] == 5
        assert "leave a note" in text_of(reply)
