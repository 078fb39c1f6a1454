"""Recorded Discord interaction payloads -> core values (pure `to_core` functions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.discord.payloads import (
    answer_click,
    channel_ref,
    command_text,
    focused_value,
    is_admin,
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


def test_answer_click_decodes_post_and_choice() -> None:
    assert answer_click(load("click_answer.json")["data"]) == (42, 2)
    assert answer_click({"custom_id": "quiz:demo:42:frag", "component_type": 2}) is None
    assert answer_click({"custom_id": "something:else", "component_type": 2}) is None
    assert answer_click({"custom_id": "quiz:answer:42:x", "component_type": 2}) is None


def test_focused_value_is_what_was_typed_in_the_autocompleted_option() -> None:
    assert focused_value(load("autocomplete_demo.json")["data"]) == "frag"
    assert focused_value(load("command_ask.json")["data"]) == ""
