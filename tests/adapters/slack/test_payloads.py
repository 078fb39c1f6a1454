"""Recorded Slack payloads to core values (pure functions)."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.slack.inbound import form_fields
from adapters.slack.payloads import (
    BlockActionsPayload,
    SlashCommandForm,
    clicks_to_core,
    command_to_core,
)
from bot.demos import DEMO
from bot.domain import ChannelRef, Platform, UserRef
from bot.messages import ANSWER
from tests.adapters.slack import slack_requests as rq

FORM_CHARS = 'ab=&%+#?;: 0A9fΑλ"{}\n'


def test_a_recorded_slash_command_becomes_a_command_call() -> None:
    form: SlashCommandForm = rq._sample("slash_command.json")  # type: ignore[assignment]
    call = command_to_core(form)
    assert call.channel == ChannelRef(Platform.SLACK, "T0FAKE", "C0QUIZ")
    assert call.user == UserRef(Platform.SLACK, "T0FAKE", "U0ALICE")
    assert call.user.display == "alice"
    assert (call.text, call.subcommand) == ("ask", "ask")
    assert call.trigger_id == "13345224609.738474920.8088930838d88f008e0"
    assert call.response_url is not None and call.response_url.startswith("https://hooks.")


def test_subcommand_is_the_first_word_lowercased_and_empty_text_is_empty() -> None:
    form = rq.slash_command("  LeaderBoard week ")
    assert command_to_core(form).subcommand == "leaderboard"  # type: ignore[arg-type]
    assert command_to_core(rq.slash_command("")).subcommand == ""  # type: ignore[arg-type]


def test_a_recorded_block_actions_payload_becomes_an_answer_click() -> None:
    payload: BlockActionsPayload = rq._sample("block_actions.json")  # type: ignore[assignment]
    (button,) = clicks_to_core(payload)
    click = button.click
    assert (click.kind, click.post_id, click.choice) == (ANSWER, 1, 3)
    assert click.user == UserRef(Platform.SLACK, "T0FAKE", "U0ALICE")
    assert click.channel == ChannelRef(Platform.SLACK, "T0FAKE", "C0QUIZ")
    assert button.message_ts == "1700000000.000001" and not button.ephemeral
    assert button.trigger_id.endswith("8e1")


def test_a_command_and_a_click_in_the_same_channel_agree_on_the_refs() -> None:
    call = command_to_core(rq.slash_command("ask"))  # type: ignore[arg-type]
    (button,) = clicks_to_core(rq.block_actions(5, 0))  # type: ignore[arg-type]
    assert (call.channel, call.user) == (button.click.channel, button.click.user)


def test_clicks_on_an_ephemeral_message_without_team_use_the_users_team() -> None:
    payload = rq.block_actions(7, 2)
    payload["team"] = None
    del payload["channel"]
    payload["container"]["is_ephemeral"] = True
    (button,) = clicks_to_core(payload)  # type: ignore[arg-type]
    assert button.click.channel == ChannelRef(Platform.SLACK, "T0FAKE", "C0QUIZ")
    assert button.click.user.workspace == "T0FAKE" and button.ephemeral


def test_other_actions_are_left_out_and_a_garbled_value_is_an_invalid_choice() -> None:
    payload = rq.block_actions(7, "x")
    payload["actions"].append({"action_id": "something_else", "type": "button", "value": "1"})
    payload["actions"].append({"action_id": "quiz:demo:7:fragmentation", "type": "button"})
    clicks = [b.click for b in clicks_to_core(payload)]  # type: ignore[arg-type]
    assert [(c.kind, c.value) for c in clicks] == [
        (ANSWER, "x"),
        (DEMO, "fragmentation"),
    ]
    assert clicks[0].choice == -1


@pytest.mark.parametrize(
    "action_id",
    [
        f"quiz:answer:{2**63}:0",  # beyond BIGINT: never reaches the database
        "quiz:answer:0:0",
        "quiz:answer:-5:0",
        "quiz:answer:+5:0",
        "quiz:answer:٥:0",  # a Unicode digit int() would accept
        "quiz:answer:5:" + "9" * 100,
    ],
)
def test_out_of_range_or_foreign_button_ids_are_not_clicks(action_id: str) -> None:
    payload = rq.block_actions(7, 0)
    payload["actions"] = [{"action_id": action_id, "type": "button", "value": action_id}]
    assert clicks_to_core(payload) == []  # type: ignore[arg-type]


def test_a_well_formed_id_of_any_kind_is_a_click_for_the_registry_to_judge() -> None:
    # Which kinds exist is the features' registry's to say (`Interactions.knows`, asked by
    # the adapter before the core: test_http_mode), not the payload's.
    payload = rq.block_actions(7, 0)
    payload["actions"] = [{"action_id": "quiz:nope:5:0", "type": "button"}]
    (button,) = clicks_to_core(payload)  # type: ignore[arg-type]
    assert (button.click.kind, button.click.post_id, button.click.value) == ("nope", 5, "0")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet=FORM_CHARS, max_size=8), st.text(alphabet=FORM_CHARS, max_size=12)
        ),
        max_size=5,
    ),
    st.booleans(),
)
def test_form_bodies_are_read_as_urllib_reads_them(
    fields: list[tuple[str, str]], encode: bool
) -> None:
    """Encoded the way Slack sends forms or raw (stray `%`, `+`, `&`, `=`, `#`)."""
    body = urlencode(fields) if encode else "&".join(f"{k}={v}" for k, v in fields)
    assert form_fields(body) == dict(parse_qsl(body, keep_blank_values=True))


def test_a_recorded_click_form_decodes_to_its_payload() -> None:
    payload = rq._sample("block_actions.json")
    body = urlencode({"payload": json.dumps(payload, ensure_ascii=False)})
    assert json.loads(form_fields(body)["payload"]) == payload
