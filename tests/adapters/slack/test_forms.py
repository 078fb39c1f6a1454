"""Forms on Slack: a click whose kind opens a form gets a modal (`views.open` with the
click's trigger), and its `view_submission` is answered in the acknowledgement — the
core's field errors shown in the form, or the form closed and a private confirmation."""

from __future__ import annotations

from bot.domain import Locale
from bot.forms import FieldKind, Form, FormField, Submission, SubmitReply
from bot.interactions import Click
from bot.messages import ActionKind, Message
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import SlackHttp
from tests.adapters.slack.fake_slack import FakeSlack


def install_number_form(http: SlackHttp) -> list[Submission]:
    got: list[Submission] = []

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

    http.adapter.interactions.register_form(ActionKind.NUMBER, opener)
    http.adapter.interactions.register_submit("number", submitted)
    return got


async def test_a_form_opens_as_a_modal_and_field_errors_come_back_in_it(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    got = install_number_form(http_slack)
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
