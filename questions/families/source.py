"""The families as the bot's `QuestionSource` port (wired by the composition root)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.domain import ChannelRef, Question
from questions.families.channel import next_for_channel
from questions.families.registry import FamilyRegistry, default_families


class FamilySource:
    def __init__(self, families: FamilyRegistry | None = None) -> None:
        self.families = families or default_families()

    def names(self) -> list[str]:
        return list(self.families.ids())

    def next_for(
        self, channel: ChannelRef, history: Sequence[str], name: str | None = None
    ) -> Question:
        return next_for_channel(self.families, channel.key, history, name).question


__all__ = ["FamilySource"]
