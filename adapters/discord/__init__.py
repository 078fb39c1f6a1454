"""The Discord adapter: `/quiz` generated from the core's commands, answers recorded before
they are acknowledged, over the gateway (discord.py) or Discord's HTTP interactions.

`DiscordAdapter` runs it (`quizbot serve` with ``DISCORD_TOKEN``; ``DISCORD_PUBLIC_KEY``
for HTTP mode); `DiscordChat` is the core's `Chat`; `render` turns core messages into
embeds within Discord's limits.
"""

from adapters.discord.adapter import DiscordAdapter, discord_rest, parse_shard_ids
from adapters.discord.chat import DiscordChat
from adapters.discord.invite import invite_url, required_permissions

__all__ = [
    "DiscordAdapter",
    "DiscordChat",
    "discord_rest",
    "invite_url",
    "parse_shard_ids",
    "required_permissions",
]
