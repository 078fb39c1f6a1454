"""Recorded Discord interaction payloads -> core values (pure `to_core` functions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.payloads import (
    Malformed,
    channel_ref,
    command_text,
    focused_option,
    is_admin,
    read_interaction,
    stored,
    user_locale,
    user_ref,
)
from bot.domain import ChannelRef, Locale, Platform, UserRef

PAYLOADS = Path(__file__).parent / "payloads"


def load(name: str) -> Any:
    return json.loads((PAYLOADS / name).read_text())


def test_guild_command_maps_to_guild_channel_and_member_nick() -> None:
    p = load("command_ask.json")
    assert channel_ref(p) == ChannelRef(
        Platform.DISCORD, "811111111111111111", "822222222222222222"
    )
    user = user_ref(p)
    assert user == UserRef(Platform.DISCORD, "811111111111111111", "300000000000000001")
    assert user.name == "Μαρία"  # the guild nick wins over the global name


def test_member_without_nick_or_global_name_is_shown_by_username() -> None:
    assert user_ref(load("click_answer.json")).name == "nikos_p"


def test_dm_command_uses_the_user_and_the_dm_workspace() -> None:
    p = load("command_schedule_dm.json")
    assert channel_ref(p).workspace == "@me"
    assert user_ref(p) == UserRef(Platform.DISCORD, "@me", "300000000000000004")
    assert not is_admin(p)  # no member, no guild permissions


def test_command_text_is_the_subcommand_then_option_values() -> None:
    assert command_text(load("command_ask.json")["data"]) == "ask fragmentation"
    # Free text is passed as typed: the core splits it into words.
    schedule = command_text(load("command_schedule_dm.json")["data"])
    assert schedule == "schedule 09:30 mon-fri Europe/Athens"


def test_command_without_options_is_just_its_name() -> None:
    data = {"id": "1", "name": "quiz", "options": [{"name": "stats", "type": 1}]}
    assert command_text(data) == "stats"  # type: ignore[arg-type]


def test_user_locale_maps_supported_tags_and_drops_others() -> None:
    assert user_locale(load("command_ask.json")) is Locale.EL
    assert user_locale(load("click_answer.json")) is Locale.EN  # en-GB
    assert user_locale(load("autocomplete_demo.json")) is None  # de: the channel's applies


def test_admin_is_manage_server_or_the_admin_role_or_a_listed_user() -> None:
    ask = load("command_ask.json")
    click = load("click_answer.json")
    assert is_admin(ask)  # Manage Server bit set
    assert not is_admin(click)
    assert is_admin(click, admin_role=None, admin_ids={"300000000000000002"})
    member_with_role = load("command_ask.json")
    member_with_role["member"]["permissions"] = "0"
    assert not is_admin(member_with_role)
    assert is_admin(member_with_role, admin_role="844444444444444444")


def test_command_text_follows_the_declared_option_order() -> None:
    data = {
        "id": "1",
        "name": "quiz",
        "options": [
            {
                "name": "leaderboard",
                "type": 1,
                "options": [
                    {"name": "scope", "type": 3, "value": "workspace"},
                    {"name": "window", "type": 3, "value": "week"},
                ],
            }
        ],
    }
    assert command_text(data, ["window", "scope"]) == "leaderboard week workspace"  # type: ignore[arg-type]
    assert command_text(data) == "leaderboard workspace week"  # type: ignore[arg-type]


def test_focused_option_is_the_option_and_what_was_typed_in_it() -> None:
    assert focused_option(load("autocomplete_demo.json")["data"]) == ("id", "frag")
    assert focused_option(load("command_ask.json")["data"]) == ("", "")


@pytest.mark.parametrize("name", sorted(p.name for p in PAYLOADS.glob("*.json")))
def test_recorded_payloads_are_read_with_their_target(name: str) -> None:
    raw = load(name)
    interaction = read_interaction(raw)
    assert interaction.target is not None and interaction.target.token == raw["token"]
    assert interaction.key == f"discord:{raw['id']}"
    kept = stored(interaction.payload)
    assert read_interaction(kept).payload == kept  # what the delivery log keeps replays


def without(raw: dict[str, Any], *path: str) -> dict[str, Any]:
    out = json.loads(json.dumps(raw))
    target = out
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return out


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        (lambda r: without(r, "data"), "no data"),
        (lambda r: without(r, "member"), "no member or user"),
        (lambda r: without(r, "member", "user", "id"), "no id"),
        (lambda r: without(r, "token"), "no token"),
        (lambda r: without(r, "id"), "no id"),
        (lambda r: {**r, "channel_id": "12; DROP"}, "no channel_id"),
        (lambda r: {**r, "type": 6}, "unknown type"),
        (lambda r: {**r, "type": 5}, "no modal components"),  # a submitted modal
        (lambda r: {**r, "type": "3"}, "no type"),
        (lambda r: {**r, "data": {"custom_id": "x" * 101}}, "no custom_id"),
        (lambda r: {**r, "data": {"component_type": 2}}, "no custom_id"),
        (lambda r: [r], "not an object"),
        (lambda r: None, "not an object"),
    ],
)
def test_malformed_interactions_are_refused_with_a_kind(change: Any, kind: str) -> None:
    with pytest.raises(Malformed) as caught:
        read_interaction(change(load("click_answer.json")))
    assert caught.value.kind == kind


def test_a_ping_needs_nothing_else() -> None:
    ping = read_interaction({"type": 1, "id": "1", "application_id": "2"})
    assert ping.type == 1 and ping.target is None
