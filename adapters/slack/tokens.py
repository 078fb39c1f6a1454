"""`WorkspaceTokens`: the bot token of each workspace, for a deployment that many
workspaces installed through OAuth (multi-workspace mode).

A token is read from the installation store (any replica's install is seen) and kept
`ttl` briefly. Past `ttl` the kept token is still served, for up to `stale` more, while one
read of the store runs behind it: a burst of clicks across many workspaces never waits on
a store read (with 100 workspaces, every 30 s each workspace's clicks would queue behind
one). An uninstall seen by this process drops its token at once (`forget`); one seen by
another replica is noticed at the next read (`ttl` after the last), and a call Slack
refuses with ``invalid_auth``/``token_revoked`` drops it too (`SlackChat.call`).

A rotating token (``refresh_token`` and ``expires_in`` from ``oauth.v2.access``) is
refreshed `refresh_before` its expiry (behind the kept token while that still works), with
the same call slack_sdk's `AsyncTokenRotator` makes (``grant_type=refresh_token``), under
the store's claim: one replica refreshes, the others wait for its token, so two refreshes
never race one refresh token into a revoked one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import CALL_ERRORS, describe
from bot.clock import Clock
from bot.errors import PlatformError
from bot.logs import ThrottledLog

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


class StoredToken(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def token(self) -> str: ...
    @property
    def refresh_token(self) -> str | None: ...
    @property
    def expires_at(self) -> datetime | None: ...


class TokenStore(Protocol):
    """What `WorkspaceTokens` needs of the installation store (`storage.slack_installs`)."""

    async def bot_token(
        self, team_id: str, enterprise_id: str | None = None
    ) -> StoredToken | None: ...

    async def bot_tokens(self, team_ids: Sequence[str]) -> Mapping[str, StoredToken | None]:
        """`bot_token` of each of `team_ids`, in as few reads as the store can."""
        ...

    async def claim_refresh(self, key: str, refresh_token: str, lease: timedelta) -> bool: ...

    async def finish_refresh(
        self,
        key: str,
        old_refresh_token: str,
        token: str,
        refresh_token: str | None,
        expires_at: datetime | None,
    ) -> bool: ...

    async def release_refresh(self, key: str) -> None: ...


class NotInstalled(PlatformError):
    """No installation serves the workspace (never installed, or uninstalled)."""


class WorkspaceTokens:
    def __init__(
        self,
        store: TokenStore | None,
        clock: Clock,
        *,
        client_id: str = "",
        client_secret: str = "",
        ttl: timedelta = timedelta(seconds=30),
        stale: timedelta = timedelta(seconds=30),
        refresh_before: timedelta = timedelta(minutes=10),
        lease: timedelta = timedelta(seconds=30),
        wait: float = 10.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._store = store
        self._attached = asyncio.Event()
        if store is not None:
            self._attached.set()
        self.clock = clock
        self.client_id = client_id
        self.client_secret = client_secret
        self.ttl = ttl
        self.stale = stale
        self.refresh_before = refresh_before
        self.lease = lease
        self._wait = wait
        self._sleep = sleep
        self._kept: dict[str, tuple[StoredToken, datetime]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        # Bumped by `forget`: a read that began before it does not keep its token.
        self._generations: dict[str, int] = {}
        self._epoch = 0  # bumped by `forget_all`
        self._behind: dict[str, asyncio.Task[None]] = {}  # reads served stale meanwhile
        self._problems = ThrottledLog(log)
        self.refreshes = 0  # oauth.v2.access refresh calls this process made
        self.oauth_client: AsyncWebClient | None = None  # tokenless: set by SlackChat

    def attach(self, store: TokenStore) -> None:
        """The store, once it is open (`serve` opens the chat clients first)."""
        self._store = store
        self._attached.set()

    @property
    def store(self) -> TokenStore:
        if self._store is None:
            raise RuntimeError("WorkspaceTokens has no store yet")
        return self._store

    async def token(self, workspace: str) -> str:
        """The bot token for `workspace` (a team id); `NotInstalled` when none serves it."""
        now = self.clock.now()
        kept = self._kept.get(workspace)
        if kept is not None and kept[1] > now and not self._expiring(kept[0], now):
            return kept[0].token
        if kept is not None and self._servable(kept, now):
            self._read_behind(workspace)
            return kept[0].token
        return await self._read(workspace, now)

    async def _read(self, workspace: str, now: datetime) -> str:
        lock = self._locks.setdefault(workspace, asyncio.Lock())
        async with lock:  # one read, and one refresh, per workspace in this process
            if self._store is None:
                await asyncio.wait_for(self._attached.wait(), self._wait)
            kept = self._kept.get(workspace)
            if kept is not None and kept[1] > now and not self._expiring(kept[0], now):
                return kept[0].token
            generation = self._generation(workspace)
            found = await self.store.bot_token(workspace)
            if found is None:
                raise self._not_installed(workspace)
            if self._expiring(found, now):
                found = await self._refresh(found, workspace)
            if self._generation(workspace) == generation:
                self._kept[workspace] = (found, self.clock.now() + self.ttl)
            return found.token

    def _servable(self, kept: tuple[StoredToken, datetime], now: datetime) -> bool:
        """A kept token past its `ttl` that may still be served while it is read again:
        within `stale`, and not about to expire (a rotating token is refreshed behind it
        while it still works)."""
        token, fresh_until = kept
        if now >= fresh_until + self.stale:
            return False
        return token.expires_at is None or token.expires_at - now > self.refresh_before / 2

    def _read_behind(self, workspace: str) -> None:
        """Read `workspace`'s token again in the background — with every kept token past
        half its `ttl`, in one read of the store (`bot_tokens`): with many workspaces,
        one read per `ttl` rather than one per workspace."""
        if self._behind:
            return  # a read is running; what it left out is served until `stale`

        async def read() -> None:
            try:
                await self._sweep(workspace)
            except Exception as exc:  # the kept tokens serve until `stale`, then a read
                self._problems.problem(
                    f"slack token read {type(exc).__name__}",
                    "Slack: could not read the bot tokens again",
                    exc=exc,
                )
            finally:
                self._behind.pop(workspace, None)

        self._behind[workspace] = asyncio.get_running_loop().create_task(
            read(), name=f"slack-tokens-{workspace}"
        )

    async def _sweep(self, workspace: str) -> None:
        now = self.clock.now()
        due = {workspace} | {
            w for w, (_, until) in self._kept.items() if until - self.ttl / 2 <= now
        }
        generations = {w: self._generation(w) for w in due}
        found = await self.store.bot_tokens(sorted(due))
        for team in sorted(due):
            token = found.get(team)
            if token is None:
                self._not_installed(team)
            elif self._expiring(token, now):
                with contextlib.suppress(PlatformError):  # logged by the refresh
                    await self._read(team, now)
            elif self._generation(team) == generations[team]:
                self._kept[team] = (token, self.clock.now() + self.ttl)

    def _not_installed(self, workspace: str) -> NotInstalled:
        self._kept.pop(workspace, None)
        self._problems.problem(
            f"slack not installed {workspace}",
            "Slack: workspace %s has no installation (never installed, or "
            "uninstalled): nothing sent",
            workspace,
        )
        return NotInstalled("Slack", "token", None, f"workspace {workspace} not installed")

    async def shutdown(self) -> None:
        """Stop the reads in the background (`SlackChat.shutdown`)."""
        for task in list(self._behind.values()):
            task.cancel()
        for task in list(self._behind.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._behind.clear()

    def forget(self, workspace: str) -> None:
        """Drop what is kept for `workspace` (uninstalled, revoked, refused)."""
        self._kept.pop(workspace, None)
        self._generations[workspace] = self._generations.get(workspace, 0) + 1

    def forget_all(self) -> None:
        self._epoch += 1
        self._kept.clear()

    def _generation(self, workspace: str) -> tuple[int, int]:
        return self._epoch, self._generations.get(workspace, 0)

    def _expiring(self, token: StoredToken, now: datetime) -> bool:
        return (
            token.refresh_token is not None
            and token.expires_at is not None
            and token.expires_at - now <= self.refresh_before
        )

    async def _refresh(self, current: StoredToken, team: str) -> StoredToken:
        assert current.refresh_token is not None
        if await self.store.claim_refresh(current.key, current.refresh_token, self.lease):
            try:
                return await self._rotate(current, team)
            except BaseException:
                await self.store.release_refresh(current.key)
                raise
        return await self._winners_token(current, team)

    async def _rotate(self, current: StoredToken, team: str) -> StoredToken:
        """``oauth.v2.access`` with ``grant_type=refresh_token`` (AsyncTokenRotator's call)."""
        if self.oauth_client is None:
            raise RuntimeError("WorkspaceTokens has no client: start the SlackChat first")
        self.refreshes += 1
        try:
            resp = await self.oauth_client.oauth_v2_access(
                client_id=self.client_id,
                client_secret=self.client_secret,
                grant_type="refresh_token",
                refresh_token=current.refresh_token,
            )
        except CALL_ERRORS as exc:
            reason = describe(exc)[1]
            self._problems.problem(
                f"slack refresh {reason[:40]}", "Slack: token refresh refused (%s)", reason
            )
            raise PlatformError("Slack", "oauth.v2.access", describe(exc)[0], reason) from exc
        token = str(resp["access_token"])
        refresh = resp.get("refresh_token")
        expires_in = resp.get("expires_in")
        expires_at = self.clock.now() + timedelta(seconds=int(expires_in)) if expires_in else None
        assert current.refresh_token is not None
        await self.store.finish_refresh(
            current.key, current.refresh_token, token, refresh, expires_at
        )
        log.info("Slack: refreshed the bot token of %s", current.key)
        found = await self.store.bot_token(team)
        return found if found is not None and found.token == token else current

    async def _winners_token(self, current: StoredToken, team: str) -> StoredToken:
        """Another replica refreshes: read until its token is stored (or its claim lapses,
        then take it over)."""
        deadline = asyncio.get_running_loop().time() + self._wait
        while True:
            found = await self.store.bot_token(team)
            if found is None:
                raise NotInstalled("Slack", "token", None, f"workspace {team} not installed")
            if found.refresh_token != current.refresh_token:
                return found
            if asyncio.get_running_loop().time() >= deadline:
                if found.refresh_token and await self.store.claim_refresh(
                    found.key, found.refresh_token, self.lease
                ):
                    return await self._rotate(found, team)
                return found  # still the old token: it works until it expires
            await self._sleep(0.05)


__all__ = ["NotInstalled", "StoredToken", "TokenStore", "WorkspaceTokens"]
