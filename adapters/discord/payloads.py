"""What the adapter reads from Discord, as `TypedDict`s of the wire format, and the pure
functions that turn it into core values (`ChannelRef`, `UserRef`, `Locale`, command text).

Field names are Discord's (``guild_id``, ``member.user.global_name``, ``data.options``);
snowflakes arrive as strings. Only the fields the adapter uses are declared.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NotRequired, TypedDict

from bot.domain import ChannelRef, Locale, Platform, UserRef
from bot.messages import ActionKind, Button

DM_WORKSPACE = "@me"  # Discord's own name for "no guild"

ADMINISTRATOR = 1 << 3
MANAGE_GUILD = 1 << 5


class UserPayload(TypedDict):
    id: str
    username: str
    global_name: NotRequired[str | None]


class MemberPayload(TypedDict):
    user: UserPayload
    nick: NotRequired[str | None]
    roles: list[str]
    permissions: NotRequired[str]  # the member's permissions in the channel, as a decimal


class CommandOptionPayload(TypedDict):
    name: str
    type: int  # 1 subcommand, 2 group, 3 string, 4 integer, ...
    value: NotRequired[str | int | float | bool]
    options: NotRequired[list[CommandOptionPayload]]
    focused: NotRequired[bool]


class CommandDataPayload(TypedDict):
    id: str
    name: str
    type: NotRequired[int]
    options: NotRequired[list[CommandOptionPayload]]
    guild_id: NotRequired[str]


class ComponentDataPayload(TypedDict):
    custom_id: str
    component_type: int


class InteractionPayload(TypedDict):
    id: str
    type: int  # 2 application command, 3 component, 4 autocomplete
    channel_id: str
    guild_id: NotRequired[str]
    member: NotRequired[MemberPayload]  # in a guild
    user: NotRequired[UserPayload]  # in a DM
    locale: NotRequired[str]  # the clicking user's client language
    guild_locale: NotRequired[str]


def channel_ref(payload: InteractionPayload) -> ChannelRef:
    return ChannelRef(
        Platform.DISCORD, payload.get("guild_id") or DM_WORKSPACE, payload["channel_id"]
    )


def user_ref(payload: InteractionPayload) -> UserRef:
    """The acting user; the name is what the guild shows (nick, then display name)."""
    workspace = payload.get("guild_id") or DM_WORKSPACE
    member = payload.get("member")
    if member is not None:
        user = member["user"]
        name = member.get("nick") or user.get("global_name") or user["username"]
    else:
        user = payload["user"]
        name = user.get("global_name") or user["username"]
    return UserRef(Platform.DISCORD, workspace, user["id"], name)


def user_locale(payload: InteractionPayload) -> Locale | None:
    """The user's own language when the quiz speaks it (``el``, ``en-US``); else None, and
    the channel's language applies."""
    tag = payload.get("locale")
    return Locale.parse(tag) if tag else None


def is_admin(
    payload: InteractionPayload, admin_role: str | None = None, admin_ids: Iterable[str] = ()
) -> bool:
    """Manage Server (or Administrator), the configured admin role, or a listed user id."""
    member = payload.get("member")
    if member is None:
        return False
    if member["user"]["id"] in set(admin_ids):
        return True
    if admin_role is not None and admin_role in member["roles"]:
        return True
    perms = int(member.get("permissions") or 0)
    return bool(perms & (ADMINISTRATOR | MANAGE_GUILD))


def command_text(data: CommandDataPayload) -> str:
    """``/quiz ask topic:gpu`` -> ``"ask gpu"``: the subcommand then its option values, in
    the order Discord sends them. Free text stays as typed (``schedule 09:30 mon-fri``): the
    core splits it into words, as it does Slack's text."""
    words: list[str] = []
    options = data.get("options", [])
    while options:
        nested = next((o for o in options if o["type"] in (1, 2)), None)
        if nested is None:
            break
        words.append(nested["name"])
        options = nested.get("options", [])
    for option in options:
        if "value" in option and option["value"] != "":
            words.append(str(option["value"]))
    return " ".join(words)


def focused_value(data: CommandDataPayload) -> str:
    """The text typed so far in the focused option of an autocomplete interaction."""
    options = data.get("options", [])
    while options:
        for option in options:
            if option.get("focused"):
                return str(option.get("value", ""))
        nested = next((o for o in options if o["type"] in (1, 2)), None)
        options = nested.get("options", []) if nested is not None else []
    return ""


def answer_click(data: ComponentDataPayload) -> tuple[int, int] | None:
    """``quiz:answer:<post>:<choice>`` -> ``(post, choice)``; None for any other button."""
    decoded = Button.decode(data["custom_id"])
    if decoded is None or decoded[0] is not ActionKind.ANSWER or not decoded[2].isdigit():
        return None
    return decoded[1], int(decoded[2])


__all__ = [
    "CommandDataPayload",
    "CommandOptionPayload",
    "ComponentDataPayload",
    "InteractionPayload",
    "MemberPayload",
    "UserPayload",
    "answer_click",
    "channel_ref",
    "command_text",
    "focused_value",
    "is_admin",
    "user_locale",
    "user_ref",
]
