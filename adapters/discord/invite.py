"""The invite URL: the scopes and the permission integer the bot needs, nothing more.

    python -m adapters.discord invite [--client-id ID]

Without ``--client-id`` the id is read from ``DISCORD_TOKEN`` (a bot token starts with the
bot user's id in base64, and a bot user's id is its application's id), so it works offline.
"""

from __future__ import annotations

import base64
import binascii

import discord

from bot.errors import ConfigError

SCOPES = ("bot", "applications.commands")


def required_permissions() -> discord.Permissions:
    """View Channel, Send Messages, Embed Links, Attach Files, Read Message History,
    Create Public Threads, Send Messages in Threads."""
    return discord.Permissions(
        view_channel=True,
        send_messages=True,
        embed_links=True,
        attach_files=True,
        read_message_history=True,
        create_public_threads=True,
        send_messages_in_threads=True,
    )


def invite_url(client_id: int | str) -> str:
    return discord.utils.oauth_url(
        str(client_id), permissions=required_permissions(), scopes=SCOPES
    )


def client_id_from_token(token: str) -> int:
    head = token.strip().split(".", 1)[0]
    try:
        return int(base64.b64decode(head + "=" * (-len(head) % 4), validate=True).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ConfigError(
            "DISCORD_TOKEN does not look like a bot token; pass the application id with "
            "--client-id (Developer Portal → your application → General Information)"
        ) from None


__all__ = ["SCOPES", "client_id_from_token", "invite_url", "required_permissions"]
