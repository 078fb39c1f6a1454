"""Discord wire payloads for the fake Discord: users, members, guilds, channels,
messages and interactions, shaped as Discord sends them (snowflakes as strings, members
with ``flags``, interactions with ``attachment_size_limit``)."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1420070400000
EPHEMERAL = 1 << 6
LOADING = 1 << 7
MEMBER_PERMISSIONS = (1 << 10) | (1 << 11) | (1 << 14) | (1 << 15) | (1 << 16)
BOT_PERMISSIONS = MEMBER_PERMISSIONS | (1 << 35) | (1 << 38)

Json = dict[str, Any]


class DiscordPayloads:
    """One guild with one text channel, the bot, and the payloads around them."""

    def __init__(
        self,
        *,
        guild_id: int = 811111111111111111,
        channel_id: int = 822222222222222222,
        app_id: int = 833333333333333333,
        guild_locale: str = "en-US",
    ) -> None:
        self.guild_id = str(guild_id)
        self.channel_id = str(channel_id)
        self.app_id = str(app_id)
        self.guild_locale = guild_locale
        self.bot = user(self.app_id, "quizbot", bot=True)
        self.messages: dict[str, Json] = {}
        self.roles: list[Json] = []  # beside @everyone; add before the client connects
        self._ids = itertools.count(1)

    def snowflake(self) -> str:
        ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        return str((ms << 22) | (next(self._ids) & 0x3FFFFF))

    def channel(self, channel_id: str | None = None) -> Json:
        return {
            "id": channel_id or self.channel_id,
            "type": 0,
            "guild_id": self.guild_id,
            "name": "quiz",
            "position": 0,
            "permission_overwrites": [],
            "nsfw": False,
            "parent_id": None,
            "topic": None,
            "rate_limit_per_user": 0,
            "last_message_id": None,
        }

    def guild(self) -> Json:
        return {
            "id": self.guild_id,
            "name": "Fake guild",
            "icon": None,
            "owner_id": "1",
            "preferred_locale": self.guild_locale,
            "features": [],
            "roles": [role(self.guild_id, "@everyone", MEMBER_PERMISSIONS), *self.roles],
            "emojis": [],
            "stickers": [],
            "member_count": 2,
            "members": [self.member(self.bot, permissions=None)],
            "channels": [self.channel()],
            "threads": [],
            "presences": [],
            "voice_states": [],
            "large": False,
            "unavailable": False,
            "mfa_level": 0,
            "verification_level": 0,
            "explicit_content_filter": 0,
            "default_message_notifications": 0,
            "premium_tier": 0,
            "nsfw_level": 0,
            "system_channel_flags": 0,
            "joined_at": now(),
        }

    def add_role(self, role_id: str, name: str, permissions: int = 0) -> None:
        self.roles.append(role(role_id, name, permissions))

    def member(
        self, account: Json, *, permissions: int | None, roles: tuple[str, ...] = ()
    ) -> Json:
        m: Json = {
            "user": account,
            "roles": list(roles),
            "joined_at": now(),
            "deaf": False,
            "mute": False,
            "flags": 0,
            "nick": None,
        }
        if permissions is not None:
            m["permissions"] = str(permissions)
        return m

    def message(self, channel_id: str, body: Json, *, flags: int = 0, msg_type: int = 0) -> Json:
        msg: Json = {
            "id": self.snowflake(),
            "channel_id": channel_id,
            "guild_id": self.guild_id,
            "author": self.bot,
            "content": body.get("content") or "",
            "timestamp": now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": body.get("embeds") or [],
            "components": body.get("components") or [],
            "pinned": False,
            "type": msg_type,
            "flags": flags | int(body.get("flags") or 0),
        }
        if body.get("message_reference"):
            msg["message_reference"] = body["message_reference"]
            msg["type"] = 19
        return msg

    def interaction(
        self,
        itype: int,
        data: Json,
        *,
        user_id: str,
        name: str = "",
        locale: str = "en-US",
        permissions: int = MEMBER_PERMISSIONS,
        roles: tuple[str, ...] = (),
        message: Json | None = None,
        channel_id: str | None = None,
    ) -> Json:
        channel_id = channel_id or self.channel_id
        payload: Json = {
            "id": self.snowflake(),
            "application_id": self.app_id,
            "type": itype,
            "token": f"tok-{next(self._ids)}",
            "version": 1,
            "guild_id": self.guild_id,
            "guild": {"id": self.guild_id, "locale": self.guild_locale, "features": []},
            "channel_id": channel_id,
            "channel": self.channel(channel_id),
            "member": self.member(
                user(user_id, name or f"user{user_id[-4:]}"), permissions=permissions, roles=roles
            ),
            "locale": locale,
            "guild_locale": self.guild_locale,
            "app_permissions": str(BOT_PERMISSIONS),
            "entitlements": [],
            "authorizing_integration_owners": {"0": self.guild_id},
            "context": 0,
            "attachment_size_limit": 10 * 1024 * 1024,
            "data": data,
        }
        if message is not None:
            payload["message"] = message
        return payload

    def click_payload(
        self,
        message_id: str,
        custom_id: str,
        *,
        user_id: str,
        locale: str = "en-US",
        message: Json | None = None,
        **kw: Any,
    ) -> Json:
        """A button click on `message_id` as it is now (or as `message` shows it: a client
        that has not seen an edit yet)."""
        message = message or self.messages.get(message_id) or self.message(self.channel_id, {})
        data = {"custom_id": custom_id, "component_type": 2}
        return self.interaction(3, data, user_id=user_id, locale=locale, message=message, **kw)

    def application(self) -> Json:
        return {
            "id": self.app_id,
            "name": "quizbot",
            "icon": None,
            "description": "",
            "rpc_origins": [],
            "bot_public": True,
            "bot_require_code_grant": False,
            "owner": user("1", "owner"),
            "verify_key": "0" * 64,
            "team": None,
            "flags": 0,
            "interactions_endpoint_url": None,
        }

    def command_record(self, body: Json) -> Json:
        return {
            "id": self.snowflake(),
            "application_id": self.app_id,
            "version": "1",
            "type": 1,
            "default_member_permissions": None,
            "dm_permission": True,
            "nsfw": False,
            **body,
            "guild_id": self.guild_id,
        }


def user(uid: str, name: str = "", *, bot: bool = False) -> Json:
    return {
        "id": uid,
        "username": name or f"user{uid[-4:]}",
        "global_name": name or None,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
    }


def role(rid: str, name: str, permissions: int) -> Json:
    return {
        "id": rid,
        "name": name,
        "permissions": str(permissions),
        "position": 0,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


def now() -> str:
    return datetime.now(UTC).isoformat()


def option_type(value: Any) -> int:
    """Discord's option type for a value a test gives `FakeDiscord.command`."""
    if isinstance(value, dict):
        return 11  # an attachment
    if isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return 4
    if isinstance(value, float):
        return 10
    return 3
