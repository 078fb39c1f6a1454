"""The Discord adapter (discord.py 2.x): slash commands, persistent buttons, threads.

`DiscordAdapter` runs it (`quizbot serve` with ``DISCORD_TOKEN``); `DiscordChat` is the
core's `Chat`; `render` turns core messages into embeds within Discord's limits.
"""

from adapters.discord.chat import DiscordChat
from adapters.discord.client import DiscordAdapter, parse_shard_ids
from adapters.discord.invite import invite_url, required_permissions

__all__ = ["DiscordAdapter", "DiscordChat", "invite_url", "parse_shard_ids", "required_permissions"]
