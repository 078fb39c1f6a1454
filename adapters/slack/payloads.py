"""The Slack payloads the adapter reads, as `TypedDict`s, and pure `to_core` functions.

Slack's types stop here: the rest of the adapter and the core see `ChannelRef`, `UserRef`
and the small values below.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from bot.domain import ChannelRef, Platform, UserRef
from bot.forms import Submission
from bot.interactions import Click


class SlashCommandForm(TypedDict):
    """A slash command: form-encoded fields (HTTP) or the envelope payload (Socket Mode)."""

    team_id: str
    channel_id: str
    user_id: str
    command: str
    text: str
    trigger_id: str
    token: NotRequired[str]
    team_domain: NotRequired[str]
    enterprise_id: NotRequired[str]
    channel_name: NotRequired[str]
    user_name: NotRequired[str]
    api_app_id: NotRequired[str]
    response_url: NotRequired[str]


class UserPayload(TypedDict):
    id: str
    username: NotRequired[str]
    name: NotRequired[str]
    team_id: NotRequired[str]


class TeamPayload(TypedDict):
    id: str
    domain: NotRequired[str]


class ChannelPayload(TypedDict):
    id: str
    name: NotRequired[str]


class ContainerPayload(TypedDict):
    type: str
    message_ts: NotRequired[str]
    channel_id: NotRequired[str]
    is_ephemeral: NotRequired[bool]


class ActionPayload(TypedDict):
    action_id: str
    type: str
    block_id: NotRequired[str]
    value: NotRequired[str]
    action_ts: NotRequired[str]


class BlockActionsPayload(TypedDict):
    """The JSON in an interaction's ``payload=`` form field, for ``type == "block_actions"``."""

    type: str
    user: UserPayload
    actions: list[ActionPayload]
    trigger_id: str
    team: NotRequired[TeamPayload | None]
    channel: NotRequired[ChannelPayload]
    container: NotRequired[ContainerPayload]
    response_url: NotRequired[str]
    api_app_id: NotRequired[str]


@dataclass(frozen=True, slots=True)
class CommandCall:
    """A `/quiz ...` invocation."""

    channel: ChannelRef
    user: UserRef
    text: str
    trigger_id: str
    response_url: str | None = None

    @property
    def subcommand(self) -> str:
        words = self.text.split(maxsplit=1)
        return words[0].lower() if words else ""


@dataclass(frozen=True, slots=True)
class ButtonClick:
    """A click on one of the quiz's buttons: the core's `Click`, and where to answer it."""

    click: Click
    trigger_id: str
    action_id: str
    response_url: str | None = None
    message_ts: str | None = None
    ephemeral: bool = False

    @property
    def key(self) -> str:
        """The click's identity across Slack's redeliveries."""
        return f"slack:click:{self.trigger_id}:{self.action_id}"


def command_to_core(form: SlashCommandForm) -> CommandCall:
    # The team id, as in block_actions' `team.id`: a post's channel and its clicks agree.
    workspace = form["team_id"]
    return CommandCall(
        channel=ChannelRef(Platform.SLACK, workspace, form["channel_id"]),
        user=UserRef(Platform.SLACK, workspace, form["user_id"], form.get("user_name", "")),
        text=form.get("text", "").strip(),
        trigger_id=form.get("trigger_id", ""),
        response_url=form.get("response_url") or None,
    )


def clicks_to_core(payload: BlockActionsPayload) -> list[ButtonClick]:
    """The quiz button clicks in a block_actions payload (other actions are left out)."""
    user = payload["user"]
    team = payload.get("team") or {"id": user.get("team_id", "")}
    workspace = team["id"]
    container = payload.get("container") or {"type": "message"}
    channel = payload.get("channel")
    channel_id = channel["id"] if channel else container.get("channel_id", "")
    who = UserRef(
        Platform.SLACK, workspace, user["id"], user.get("username") or user.get("name", "")
    )
    where = ChannelRef(Platform.SLACK, workspace, channel_id)
    clicks = []
    for action in payload.get("actions", []):
        action_id = str(action.get("action_id", ""))
        click = Click.parse(action_id, who, where) or Click.parse(
            str(action.get("value", "")), who, where
        )
        if click is None:
            continue
        clicks.append(
            ButtonClick(
                click=click,
                trigger_id=str(payload.get("trigger_id", "")),
                action_id=action_id,
                response_url=payload.get("response_url") or None,
                message_ts=container.get("message_ts"),
                ephemeral=bool(container.get("is_ephemeral", False)),
            )
        )
    return clicks


def form_metadata(channel: ChannelRef) -> str:
    """What a modal carries back in ``private_metadata``: the channel it was opened in
    (a ``view_submission`` payload has no channel of its own)."""
    return json.dumps({"channel": channel.channel})


def submission_to_core(payload: dict[str, Any]) -> Submission | None:
    """A ``view_submission`` of one of our forms; None for any other view."""
    user = payload["user"]
    team = payload.get("team") or {"id": user.get("team_id", "")}
    view = payload["view"]
    try:
        channel_id = str(json.loads(view.get("private_metadata") or "{}").get("channel", ""))
    except (ValueError, AttributeError):
        channel_id = ""
    values: dict[str, str] = {}
    for block_id, actions in (view.get("state", {}).get("values") or {}).items():
        for state in actions.values():
            values[str(block_id)] = str(state.get("value") or "")
    who = UserRef(Platform.SLACK, team["id"], user["id"], user.get("username") or "")
    where = ChannelRef(Platform.SLACK, team["id"], channel_id)
    return Submission.parse(str(view.get("callback_id", "")), values, who, where)


__all__ = [
    "BlockActionsPayload",
    "ButtonClick",
    "CommandCall",
    "SlashCommandForm",
    "clicks_to_core",
    "command_to_core",
    "form_metadata",
    "submission_to_core",
]
