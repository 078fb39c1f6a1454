"""Slack's requests to the app, built from the recorded samples in `payloads/` and signed
the way Slack signs them (`slack_sdk.signature.SignatureVerifier`)."""

from __future__ import annotations

import copy
import itertools
import json
import time
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

PAYLOADS = Path(__file__).parent / "payloads"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TEAM = "T0FAKE"
CHANNEL = "C0QUIZ"

_triggers = itertools.count(1)


@cache
def _sample(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / name).read_text())
    return data


def new_trigger_id() -> str:
    return f"13345224609.738474920.{next(_triggers):019x}"


def slash_command(
    text: str,
    *,
    user: str = "U0ALICE",
    channel: str = CHANNEL,
    response_url: str | None = None,
    trigger_id: str | None = None,
    team: str = TEAM,
) -> dict[str, str]:
    form = dict(_sample("slash_command.json"))
    form.update(
        team_id=team,
        text=text,
        user_id=user,
        user_name=user.removeprefix("U0").lower(),
        channel_id=channel,
        trigger_id=trigger_id or new_trigger_id(),
    )
    if response_url is not None:
        form["response_url"] = response_url
    return form


def block_actions(
    post_id: int,
    choice: int | str,
    *,
    user: str = "U0ALICE",
    channel: str = CHANNEL,
    response_url: str | None = None,
    trigger_id: str | None = None,
    message_ts: str = "1700000000.000001",
    action: str = "answer",
    team: str = TEAM,
) -> dict[str, Any]:
    payload = copy.deepcopy(_sample("block_actions.json"))
    action_id = f"quiz:{action}:{post_id}:{choice}"
    payload["user"].update(id=user, username=user.removeprefix("U0").lower())
    if team != TEAM:
        payload["team"] = {**(payload.get("team") or {}), "id": team}
        payload["user"]["team_id"] = team
    payload["channel"]["id"] = channel
    payload["container"].update(channel_id=channel, message_ts=message_ts)
    payload["trigger_id"] = trigger_id or new_trigger_id()
    payload["actions"][0].update(action_id=action_id, value=action_id)
    if response_url is not None:
        payload["response_url"] = response_url
    return payload


def form_body(fields: dict[str, str]) -> str:
    return urlencode(fields)


def interaction_body(payload: dict[str, Any]) -> str:
    return urlencode({"payload": json.dumps(payload)})


def signed_headers(
    body: str,
    *,
    secret: str = SIGNING_SECRET,
    timestamp: int | None = None,
    retry_num: int | None = None,
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    assert signature is not None
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
    }
    if retry_num is not None:
        headers["X-Slack-Retry-Num"] = str(retry_num)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    return headers


def raw_interaction(path: str, port: int, payload: dict[str, Any]) -> bytes:
    """The whole signed HTTP request of an interaction, as bytes to write on a socket."""
    return raw_request(path, port, interaction_body(payload))


def raw_request(
    path: str, port: int, text: str, content_type: str = "application/x-www-form-urlencoded"
) -> bytes:
    """The whole signed HTTP request of `text` (a form or an Events API JSON body)."""
    body = text.encode()
    signed = signed_headers(text) | {"Content-Type": content_type}
    headers = "".join(f"{k}: {v}\r\n" for k, v in signed.items())
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def view_submission(
    callback_id: str,
    values: dict[str, str],
    *,
    user: str = "U0ALICE",
    channel: str = CHANNEL,
) -> dict[str, Any]:
    """A ``view_submission`` of a modal opened in `channel` (its ``private_metadata``)."""
    return {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "fake"},
        "user": {"id": user, "username": user.removeprefix("U0").lower(), "team_id": TEAM},
        "api_app_id": "A0FAKE",
        "trigger_id": new_trigger_id(),
        "view": {
            "id": "V0FORM",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": json.dumps({"channel": channel}),
            "state": {
                "values": {
                    name: {name: {"type": "plain_text_input", "value": value}}
                    for name, value in values.items()
                }
            },
        },
    }


def json_headers(body: str, **kwargs: Any) -> dict[str, str]:
    return {**signed_headers(body, **kwargs), "Content-Type": "application/json"}
