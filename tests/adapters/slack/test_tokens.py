"""`WorkspaceTokens` over an installation store that answers when told: a kept token is
served while it is read again (a burst never waits on the store), an uninstall or a
refusal seen meanwhile wins over that read, and an idle workspace's token is read
before use."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from adapters.slack.tokens import NotInstalled, WorkspaceTokens
from bot.clock import FakeClock
from tests.polling import eventually


@dataclass(frozen=True)
class Token:
    key: str
    token: str
    refresh_token: str | None = None
    expires_at: datetime | None = None


class GatedStore:
    """The installs' store (`TokenStore`): each read waits until `gate` is open."""

    def __init__(self) -> None:
        self.tokens: dict[str, str] = {}
        self.reads = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def bot_token(self, team_id: str, enterprise_id: str | None = None) -> Token | None:
        self.reads += 1
        await self.gate.wait()
        found = self.tokens.get(team_id)
        return Token(team_id, found) if found is not None else None

    async def bot_tokens(self, team_ids: Sequence[str]) -> dict[str, Token | None]:
        self.reads += 1
        await self.gate.wait()
        return {t: Token(t, self.tokens[t]) if t in self.tokens else None for t in team_ids}

    async def claim_refresh(self, key: str, refresh_token: str, lease: timedelta) -> bool:
        raise AssertionError("no rotating token here")

    async def finish_refresh(self, *args: object) -> bool:
        raise AssertionError("no rotating token here")

    async def release_refresh(self, key: str) -> None:
        raise AssertionError("no rotating token here")


@pytest.fixture
async def store() -> GatedStore:
    s = GatedStore()
    s.tokens["T0AAA"] = "xoxb-old"
    return s


async def test_a_kept_token_is_served_while_it_is_read_again(
    store: GatedStore, clock: FakeClock
) -> None:
    tokens = WorkspaceTokens(store, clock)
    assert await tokens.token("T0AAA") == "xoxb-old"
    clock.advance(tokens.ttl + timedelta(seconds=1))
    store.tokens["T0AAA"] = "xoxb-new"  # rotated on another replica
    store.gate.clear()  # the store is slow: nobody may wait on it
    got = await asyncio.wait_for(
        asyncio.gather(*(tokens.token("T0AAA") for _ in range(10))), timeout=5
    )
    assert got == ["xoxb-old"] * 10
    await eventually(lambda: store.reads == 2)  # one read behind the ten, not ten
    store.gate.set()
    await eventually(lambda: tokens._behind == {})
    assert await tokens.token("T0AAA") == "xoxb-new"
    assert store.reads == 2
    await tokens.shutdown()


async def test_an_idle_workspaces_token_is_read_before_use(
    store: GatedStore, clock: FakeClock
) -> None:
    tokens = WorkspaceTokens(store, clock)
    await tokens.token("T0AAA")
    clock.advance(tokens.ttl + tokens.stale)
    del store.tokens["T0AAA"]  # uninstalled, seen on another replica
    with pytest.raises(NotInstalled):
        await tokens.token("T0AAA")


async def test_an_uninstall_during_a_read_behind_wins(store: GatedStore, clock: FakeClock) -> None:
    tokens = WorkspaceTokens(store, clock)
    await tokens.token("T0AAA")
    clock.advance(tokens.ttl + timedelta(seconds=1))
    store.gate.clear()
    assert await tokens.token("T0AAA") == "xoxb-old"  # and a read starts behind it
    await eventually(lambda: store.reads == 2)
    tokens.forget("T0AAA")  # app_uninstalled (or Slack said token_revoked) meanwhile
    store.gate.set()  # the read behind answers what it saw before the uninstall
    await eventually(lambda: tokens._behind == {})
    del store.tokens["T0AAA"]
    with pytest.raises(NotInstalled):  # its token was not kept: the store is asked
        await tokens.token("T0AAA")


async def test_many_workspaces_tokens_are_read_again_in_one_read(
    store: GatedStore, clock: FakeClock
) -> None:
    teams = [f"T0{n:03d}" for n in range(50)]
    for team in teams:
        store.tokens[team] = f"xoxb-{team}"
    tokens = WorkspaceTokens(store, clock)
    for team in teams:
        await tokens.token(team)
    assert store.reads == len(teams)
    clock.advance(tokens.ttl + timedelta(seconds=1))
    store.tokens["T0007"] = "xoxb-rotated"
    del store.tokens["T0009"]  # uninstalled on another replica
    assert await tokens.token("T0000") == "xoxb-T0000"  # served; the read runs behind
    await eventually(lambda: tokens._behind == {})
    assert store.reads == len(teams) + 1  # every kept token in that one read
    assert await tokens.token("T0007") == "xoxb-rotated"
    assert await tokens.token("T0049") == "xoxb-T0049"
    assert store.reads == len(teams) + 1  # all fresh again: nothing more read
    with pytest.raises(NotInstalled):  # dropped by that read
        await tokens.token("T0009")
