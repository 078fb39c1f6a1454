"""The questions a channel's picks draw from: the built-in bank and the workspace's team
pack, as the channel's `/quiz packs` setting says, less the questions its admins retired.

A pool is built once per (workspace, packs) and kept while the workspace's pack revision
stays the same: a pick costs one lookup of that number, and a change made on any replica
(an approval, a retirement) is seen at the next pick everywhere.
"""

from __future__ import annotations

from bot.bank import QuestionBank
from bot.domain import ChannelRef, ChannelSettings, Question
from bot.team import PackState, TeamPackRepository, Workspace

_REMEMBERED_WORKSPACES = 10_000


class QuestionPools:
    def __init__(self, bank: QuestionBank, team: TeamPackRepository | None = None) -> None:
        self.bank = bank
        self.team = team  # None: the built-in bank only (no team packs, nothing retired)
        self._states: dict[Workspace, PackState] = {}
        self._pools: dict[tuple[Workspace, bool, bool], tuple[int, QuestionBank]] = {}

    async def state(self, workspace: Workspace, revision: int | None = None) -> PackState:
        """The workspace's approved team questions and retired ids, reloaded only when
        its revision moved (`revision`: as just read with the channel's settings, which
        spares the lookup when the cache has it)."""
        if self.team is None:
            return PackState(0)
        cached = self._states.get(workspace)
        if revision is not None and cached is not None and cached.revision >= revision:
            return cached
        fresh = await self.team.state(workspace, cached.revision if cached else None)
        if cached is not None and fresh.revision == cached.revision:
            return cached
        if len(self._states) >= _REMEMBERED_WORKSPACES:
            self._states.clear()
            self._pools.clear()
        self._states[workspace] = fresh
        return fresh

    async def for_channel(self, channel: ChannelRef, settings: ChannelSettings) -> QuestionBank:
        """The channel's pool, as its packs setting says."""
        return await self._pool(
            Workspace.of(channel), settings.builtin_pack, settings.team_pack, settings.pack_revision
        )

    async def team_pool(self, channel: ChannelRef) -> QuestionBank:
        """The workspace's team pack alone (`/quiz ask team`)."""
        return await self._pool(Workspace.of(channel), builtin=False, team=True)

    async def _pool(
        self, workspace: Workspace, builtin: bool, team: bool, revision: int | None = None
    ) -> QuestionBank:
        state = await self.state(workspace, revision)
        key = (workspace, builtin, team)
        hit = self._pools.get(key)
        if hit is not None and hit[0] == state.revision:
            return hit[1]
        if self.team is None and builtin:
            pool = self.bank
        else:
            chosen: dict[str, Question] = {}
            if builtin:
                chosen.update((q.id, q) for q in self.bank if q.id not in state.retired)
            if team:
                chosen.update((q.id, q) for q in state.approved if q.id not in state.retired)
            pool = QuestionBank(chosen.values())
        self._pools[key] = (state.revision, pool)
        return pool


__all__ = ["QuestionPools"]
