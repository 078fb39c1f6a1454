"""What the adapter reads from Discord, as `TypedDict`s of the wire format, and the pure
functions that turn it into core values (`ChannelRef`, `UserRef`, `Locale`, command text).

Field names are Discord's (``guild_id``, ``member.user.global_name``, ``data.options``);
snowflakes arrive as strings. Only the fields the adapter uses are declared.
`read_interaction` checks them once, at the door: anything else is `Malformed` (logged,
counted and dropped by the caller), never an exception deeper in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict, cast

from bot.domain import ChannelRef, Locale, Platform, UserRef

DM_WORKSPACE = "@me"  # Discord's own name for "no guild"

ADMINISTRATOR = 1 << 3
MANAGE_GUILD = 1 << 5

# Interaction types.
PING = 1
APPLICATION_COMMAND = 2
MESSAGE_COMPONENT = 3
AUTOCOMPLETE = 4
MODAL_SUBMIT = 5
HANDLED_TYPES = frozenset(
    {PING, APPLICATION_COMMAND, MESSAGE_COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT}
)
# Option types that nest: a subcommand, a subcommand group.
_NESTED = (1, 2)
ATTACHMENT_OPTION = 11

_SNOWFLAKE = re.compile(r"[0-9]{1,20}")
MAX_TOKEN = 500  # interaction tokens are ~200 characters
MAX_CUSTOM_ID = 100  # Discord's own limit


class Malformed(ValueError):
    """A payload that is not what Discord sends; `kind` labels it in the metrics."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}{f': {detail}' if detail else ''}")
        self.kind = kind


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


class AttachmentPayload(TypedDict):
    id: str
    filename: str
    size: int
    url: str  # a signed CDN URL, valid for a while
    content_type: NotRequired[str]


class ResolvedPayload(TypedDict, total=False):
    attachments: dict[str, AttachmentPayload]  # by id: an attachment option's value


class CommandDataPayload(TypedDict):
    id: str
    name: str
    type: NotRequired[int]
    options: NotRequired[list[CommandOptionPayload]]
    guild_id: NotRequired[str]
    resolved: NotRequired[ResolvedPayload]


class ComponentDataPayload(TypedDict):
    custom_id: str
    component_type: int


class ModalComponentPayload(TypedDict):
    type: int  # 1 action row (of one text input), 4 text input, 18 label (of one input)
    custom_id: NotRequired[str]
    value: NotRequired[str]
    components: NotRequired[list[ModalComponentPayload]]
    component: NotRequired[ModalComponentPayload]


class ModalDataPayload(TypedDict):
    custom_id: str  # the form's id (`bot.forms.Form.id`)
    components: list[ModalComponentPayload]


class InteractionPayload(TypedDict):
    id: str
    application_id: str
    type: int  # 1 ping, 2 application command, 3 component, 4 autocomplete
    token: str
    channel_id: str
    guild_id: NotRequired[str]
    member: NotRequired[MemberPayload]  # in a guild
    user: NotRequired[UserPayload]  # in a DM
    locale: NotRequired[str]  # the acting user's client language
    guild_locale: NotRequired[str]
    data: NotRequired[CommandDataPayload | ComponentDataPayload | ModalDataPayload]


@dataclass(frozen=True, slots=True)
class Target:
    """Where everything said about one interaction goes (the token is a credential for
    15 minutes: never logged)."""

    id: str
    token: str
    application_id: str


@dataclass(frozen=True, slots=True)
class Interaction:
    """An interaction whose fields were checked (`read_interaction`)."""

    type: int
    payload: InteractionPayload
    target: Target | None = None  # None only for PING

    @property
    def key(self) -> str:
        """Its id in the delivery log."""
        return f"discord:{self.payload['id']}"

    @property
    def custom_id(self) -> str:
        return cast(ComponentDataPayload, self.payload["data"])["custom_id"]

    @property
    def command(self) -> CommandDataPayload:
        return cast(CommandDataPayload, self.payload["data"])

    @property
    def modal(self) -> ModalDataPayload:
        return cast(ModalDataPayload, self.payload["data"])


def read_interaction(raw: object) -> Interaction:
    """Check what the adapter will read from an interaction; `Malformed` otherwise."""
    if not isinstance(raw, Mapping):
        raise Malformed("not an object")
    kind = raw.get("type")
    if not isinstance(kind, int) or isinstance(kind, bool):
        raise Malformed("no type")
    if kind not in HANDLED_TYPES:
        raise Malformed("unknown type", str(kind)[:10])
    if kind == PING:
        return Interaction(kind, cast(InteractionPayload, raw))
    for key in ("id", "application_id", "channel_id"):
        _snowflake(raw, key)
    if "guild_id" in raw:
        _snowflake(raw, "guild_id")
    token = raw.get("token")
    if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN:
        raise Malformed("no token")
    _check_user(raw)
    data = raw.get("data")
    if not isinstance(data, Mapping):
        raise Malformed("no data")
    if kind in (MESSAGE_COMPONENT, MODAL_SUBMIT):
        custom_id = data.get("custom_id")
        if not isinstance(custom_id, str) or len(custom_id) > MAX_CUSTOM_ID:
            raise Malformed("no custom_id")
        if kind == MODAL_SUBMIT and not isinstance(data.get("components"), list):
            raise Malformed("no modal components")
    elif not isinstance(data.get("name"), str) or not isinstance(data.get("options", []), list):
        raise Malformed("no command name")
    # Only the fields read are kept: the message, guild and channel objects Discord sends
    # along (most of a click's 4 KB) are freed now, not scanned by the garbage collector
    # while the answer is recorded.
    payload = cast(InteractionPayload, stored(raw))
    return Interaction(kind, payload, Target(raw["id"], token, raw["application_id"]))


def _snowflake(raw: Mapping[str, Any], key: str) -> None:
    value = raw.get(key)
    if not isinstance(value, str) or not _SNOWFLAKE.fullmatch(value):
        raise Malformed(f"no {key}")


def _check_user(raw: Mapping[str, Any]) -> None:
    member = raw.get("member")
    if member is not None:
        if not isinstance(member, Mapping) or not isinstance(member.get("roles", []), list):
            raise Malformed("bad member")
        account = member.get("user")
    else:
        account = raw.get("user")
    if not isinstance(account, Mapping):
        raise Malformed("no member or user")
    _snowflake(account, "id")
    if not isinstance(account.get("username"), str):
        raise Malformed("no username")


# -- to core ------------------------------------------------------------------------------


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
    return UserRef(Platform.DISCORD, workspace, user["id"], str(name))


def user_locale(payload: InteractionPayload) -> Locale | None:
    """The user's own language when the quiz speaks it (``el``, ``en-US``); else None, and
    the channel's language applies."""
    tag = payload.get("locale")
    return Locale.parse(tag) if isinstance(tag, str) and tag else None


def is_admin(
    payload: InteractionPayload, admin_role: str | None = None, admin_ids: Iterable[str] = ()
) -> bool:
    """Manage Server (or Administrator), the configured admin role, or a listed user id —
    all in the payload, so Discord's answer is never "unknown"."""
    member = payload.get("member")
    if member is None:
        return False
    if member["user"]["id"] in set(admin_ids):
        return True
    if admin_role is not None and admin_role in member.get("roles", []):
        return True
    try:
        perms = int(member.get("permissions") or 0)
    except (TypeError, ValueError):
        return False
    return bool(perms & (ADMINISTRATOR | MANAGE_GUILD))


def subcommand(data: CommandDataPayload) -> tuple[str, list[CommandOptionPayload]]:
    """``/quiz ask topic:gpu`` -> ``("ask", [the topic option])``: the subcommand's name
    (group and subcommand joined by a space) and its own options."""
    words: list[str] = []
    options = _options(data.get("options"))
    while options:
        nested = next((o for o in options if o.get("type") in _NESTED), None)
        if nested is None:
            break
        words.append(str(nested.get("name", "")))
        options = _options(nested.get("options"))
    return " ".join(words), options


def command_text(data: CommandDataPayload, order: Sequence[str] = ()) -> str:
    """``/quiz ask topic:gpu`` -> ``"ask gpu"``: the subcommand then its option values,
    in `order` (the names the command declares) and then as Discord sent them. Free text
    stays as typed (``schedule 09:30 mon-fri``): the core splits it into words, as it does
    Slack's text. An attachment is not text (its id would mean nothing to the core): the
    adapter hands the file over itself."""
    name, options = subcommand(data)
    rank = {n: i for i, n in enumerate(order)}
    options = sorted(options, key=lambda o: rank.get(str(o.get("name")), len(rank)))
    values = [
        _word(o["value"])
        for o in options
        if "value" in o and o["value"] != "" and o.get("type") != ATTACHMENT_OPTION
    ]
    return " ".join(w for w in (name, *values) if w)


def _word(value: object) -> str:
    # A number option arrives as a float: 80.0 is typed "80".
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def focused_option(data: CommandDataPayload) -> tuple[str, str]:
    """The option being autocompleted and what was typed in it so far (``("", "")``
    when none is focused)."""
    for option in subcommand(data)[1]:
        if option.get("focused"):
            return str(option.get("name", "")), str(option.get("value", ""))
    return "", ""


def option_values(data: CommandDataPayload) -> dict[str, str | int | float | bool]:
    """The subcommand's option values by name (``{"gpu_memory": 80.0, "snapshot": "12"}``)."""
    return {
        str(o.get("name")): o["value"]
        for o in subcommand(data)[1]
        if "value" in o and isinstance(o["value"], str | int | float | bool)
    }


def _options(value: object) -> list[CommandOptionPayload]:
    if not isinstance(value, list):
        return []
    return [cast(CommandOptionPayload, o) for o in value if isinstance(o, Mapping)]


_STORED = (
    "id",
    "application_id",
    "type",
    "token",
    "guild_id",
    "channel_id",
    "member",
    "user",
    "locale",
    "guild_locale",
    "data",
)


def stored(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The fields the adapter reads (what the delivery log keeps to replay an interaction):
    without the message, guild and channel objects Discord sends along."""
    return {k: payload[k] for k in _STORED if k in payload}


__all__ = [
    "APPLICATION_COMMAND",
    "AUTOCOMPLETE",
    "DM_WORKSPACE",
    "MESSAGE_COMPONENT",
    "MODAL_SUBMIT",
    "PING",
    "AttachmentPayload",
    "CommandDataPayload",
    "CommandOptionPayload",
    "ComponentDataPayload",
    "Interaction",
    "InteractionPayload",
    "Malformed",
    "MemberPayload",
    "ModalDataPayload",
    "Target",
    "UserPayload",
    "channel_ref",
    "command_text",
    "focused_option",
    "is_admin",
    "option_values",
    "read_interaction",
    "stored",
    "subcommand",
    "user_locale",
    "user_ref",
]
