"""Forms on Slack: a click whose kind opens a form gets a modal (`views.open` with the
click's trigger), and its `view_submission` is answered in the acknowledgement — the
core's field errors shown in the form, or the form closed and a private confirmation."""

from __future__ import annotations

from bot import basics
from bot import generated as generated_questions
from bot.domain import Locale
from bot.features import ButtonKind, Feature, FeatureFactory, FormKind, Parts
from bot.forms import FieldKind, Form, FormField, Submission, SubmitReply
from bot.interactions import Click
from bot.messages import Message
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import SlackHttp, SlackWith
from tests.adapters.slack.fake_slack import FakeSlack


def number_form(got: list[Submission]) -> FeatureFactory:
    """A feature whose ``number`` button opens a one-field form; what is submitted goes in
    `got`."""

    async def opener(click: Click, locale: Locale) -> Form | Message:
        field = FormField("guess", "How many MiB are reserved?", FieldKind.NUMBER)
        return Form("number", click.post_id, "", "Your prediction", (field,))

    async def submitted(sub: Submission, locale: Locale) -> SubmitReply:
        try:
            value = float(sub.values["guess"])
        except ValueError:
            return SubmitReply(errors={"guess": f"{sub.values['guess']!r} is not a number"})
        got.append(sub)
        return SubmitReply(Message(body=f"Recorded {value:g}."))

    def feature(parts: Parts) -> Feature:
        return Feature(
            "number form",
            buttons=[ButtonKind("number", form=opener)],
            forms=[FormKind("number", submitted)],
        )

    return feature


async def test_a_form_opens_as_a_modal_and_field_errors_come_back_in_it(
    slack_with: SlackWith, fake_slack: FakeSlack
) -> None:
    got: list[Submission] = []
    async with slack_with(basics.feature, number_form(got)) as http_slack:
        post = await http_slack.ask()
        payload = rq.block_actions(post.id, "", action="number", user="U0ANN")
        body = rq.interaction_body(payload)
        assert (await http_slack.send(body, rq.signed_headers(body)))[0] == 200
        await http_slack.adapter.idle()
        (view,) = fake_slack.views
        assert view["callback_id"] == f"quiz:form:number:{post.id}:"
        assert view["blocks"][0]["block_id"] == "guess"

        bad = rq.interaction_body(rq.view_submission(view["callback_id"], {"guess": "lots"}))
        status, text = await http_slack.send(bad, rq.signed_headers(bad))
        assert status == 200 and '"response_action": "errors"' in text and "is not a number" in text
        assert got == []

        good = rq.interaction_body(
            rq.view_submission(view["callback_id"], {"guess": "42"}, user="U0ANN")
        )
        status, text = await http_slack.send(good, rq.signed_headers(good))
        assert (status, text) == (200, "")  # the modal closes
        await http_slack.adapter.idle()
        (sub,) = got
        assert sub.user.user == "U0ANN" and sub.channel.channel == rq.CHANNEL
        assert any("Recorded 42." in t for t in http_slack.private_to("U0ANN"))


async def test_a_submission_of_a_form_that_is_not_ours_is_refused(
    http_slack: SlackHttp,
) -> None:
    body = rq.interaction_body(rq.view_submission("someone_elses_modal", {"x": "1"}))
    status, _ = await http_slack.send(body, rq.signed_headers(body))
    assert status == 400


async def test_a_generated_question_is_answered_with_a_typed_number_in_a_modal(
    slack_with: SlackWith, fake_slack: FakeSlack
) -> None:
    from bot.numeric import numeric_target

    features = (basics.feature, generated_questions.feature)
    async with slack_with(*features, generated=True) as http_slack:
        service = http_slack.service
        await http_slack.command("ask request-rounding")
        await http_slack.adapter.idle()
        (posted,) = fake_slack.calls_to("chat.postMessage")
        number_id = next(a for a in posted.action_ids if a.startswith("quiz:number:"))
        post_id = int(number_id.split(":")[2])
        post = await service.store.posts.get(post_id)
        assert post is not None
        question = await service.store.questions.get(post.question_hash)
        assert question is not None and question.id.startswith("gen-request-rounding-")
        target = numeric_target(question)
        assert target is not None

        payload = rq.block_actions(post_id, "", action="number", user="U0ANN")
        body = rq.interaction_body(payload)
        assert (await http_slack.send(body, rq.signed_headers(body)))[0] == 200
        await http_slack.adapter.idle()
        (view,) = fake_slack.views
        typed = f"{target.value:.6f}".rstrip("0").rstrip(".")
        done = rq.interaction_body(
            rq.view_submission(view["callback_id"], {"value": typed}, user="U0ANN")
        )
        assert await http_slack.send(done, rq.signed_headers(done)) == (200, "")
        await http_slack.adapter.idle()
        assert any("✅ Correct" in t for t in http_slack.private_to("U0ANN"))
        (answer,) = await service.store.answers.for_post(post_id)
        assert answer.correct and answer.user.user == "U0ANN"

        await service.close(post_id)
        (thread,) = [c for c in fake_slack.calls_to("chat.postMessage") if "thread_ts" in c.args]
        assert "The number:" in thread.text and "1 typed prediction:" in thread.text
