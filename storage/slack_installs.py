"""Slack's OAuth installs on the project's database: slack_sdk's `AsyncInstallationStore`
and `AsyncOAuthStateStore` interfaces over the Alembic-managed tables of migration 0014,
so any replica serves any workspace.

An install is keyed by ``<enterprise id>:<team id>`` (``-`` for none): an Enterprise Grid
organisation-wide install has no team and serves every workspace of the organisation
(`remember_team` records which those are). Deleting a bot or an installation (an
uninstall, revoked tokens) erases its tokens at once and keeps the row, marked
uninstalled, until `forget`; a new install of the same workspace fills it again.

A state is stored as its SHA-256 only, and taken by a delete that must hit one row that
has not expired: used once, on whichever replica the redirect reaches.

Token rotation's claim (`claim_refresh`) is a conditional update: one replica refreshes a
workspace's token at a time; the others wait for its result (`finish_refresh`).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.clock import Clock
from storage._sql import SqlRepository, insert
from storage.models import SlackEnterpriseTeamRow, SlackInstallationRow, SlackOAuthStateRow

log = logging.getLogger(__name__)

NONE = "-"
STATE_TTL = timedelta(minutes=10)


def workspace_key(enterprise_id: str | None, team_id: str | None, org_wide: bool) -> str:
    return f"{enterprise_id or NONE}:{NONE if org_wide else (team_id or NONE)}"


@dataclass(frozen=True, slots=True)
class BotToken:
    """A workspace's bot token as the senders need it."""

    key: str
    token: str
    refresh_token: str | None
    expires_at: datetime | None
    claimed_until: datetime | None


def _bot_token(row: SlackInstallationRow) -> BotToken:
    assert row.bot_token is not None
    return BotToken(
        row.workspace_key,
        row.bot_token,
        row.bot_refresh_token,
        row.bot_token_expires_at,
        row.refresh_claimed_until,
    )


def _epoch(value: datetime | None) -> int | None:
    return int(value.timestamp()) if value is not None else None


def _when(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp(float(value), UTC)


def _scopes(value: Any) -> str:
    if isinstance(value, str):
        return value
    return ",".join(value or [])


class SqlSlackInstallations(SqlRepository, AsyncInstallationStore):
    def __init__(self, sessions: async_sessionmaker[AsyncSession], clock: Clock) -> None:
        super().__init__(sessions)
        self._clock = clock

    @property
    def logger(self) -> logging.Logger:
        return log

    # -- slack_sdk's AsyncInstallationStore --------------------------------------------

    async def async_save(self, installation: Installation) -> None:
        now = self._clock.now()
        org_wide = bool(installation.is_enterprise_install)
        values: dict[str, Any] = {
            **{name: getattr(installation, name) for name in _KEPT},
            "team_id": None if org_wide else installation.team_id,
            "is_enterprise_install": org_wide,
            "bot_scopes": _scopes(installation.bot_scopes),
            "bot_token_expires_at": _when(installation.bot_token_expires_at),
            "user_id": installation.user_id or "",
            "user_scopes": _scopes(installation.user_scopes),
            "user_token_expires_at": _when(installation.user_token_expires_at),
            "updated_at": now,
            "uninstalled_at": None,
            "refresh_claimed_until": None,
        }
        key = workspace_key(installation.enterprise_id, installation.team_id, org_wide)
        stmt = insert(self._dialect, SlackInstallationRow).values(
            workspace_key=key, installed_at=now, **values
        )
        async with self._sessions.begin() as s:
            await s.execute(
                stmt.on_conflict_do_update(index_elements=["workspace_key"], set_=values)
            )

    async def async_save_bot(self, bot: Bot) -> None:
        key = workspace_key(bot.enterprise_id, bot.team_id, bool(bot.is_enterprise_install))
        async with self._sessions.begin() as s:
            await s.execute(
                update(SlackInstallationRow)
                .where(SlackInstallationRow.workspace_key == key)
                .values(
                    bot_token=bot.bot_token,
                    bot_id=bot.bot_id,
                    bot_user_id=bot.bot_user_id,
                    bot_scopes=_scopes(bot.bot_scopes),
                    bot_refresh_token=bot.bot_refresh_token,
                    bot_token_expires_at=_when(bot.bot_token_expires_at),
                    updated_at=self._clock.now(),
                    uninstalled_at=None,
                )
            )

    async def async_find_bot(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
    ) -> Bot | None:
        found = await self.async_find_installation(
            enterprise_id=enterprise_id,
            team_id=team_id,
            is_enterprise_install=is_enterprise_install,
        )
        return found.to_bot() if found is not None else None

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        row = await self._find(enterprise_id, team_id, bool(is_enterprise_install))
        if row is None or row.bot_token is None:
            return None
        if user_id is not None and row.user_id != user_id:
            return None  # only the installer's own install is kept
        return _installation(row)

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        await self._uninstall(enterprise_id, team_id)

    async def async_delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        await self._uninstall(enterprise_id, team_id)

    async def async_delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        await self._uninstall(enterprise_id, team_id)

    # -- beyond the interface ----------------------------------------------------------

    async def bot_token(self, team_id: str, enterprise_id: str | None = None) -> BotToken | None:
        """The token that acts in workspace `team_id`: its own install's, else its
        organisation's (an org-wide install). None when neither is installed."""
        row = await self._find(enterprise_id, team_id, False)
        if row is None or row.bot_token is None:
            return None
        return _bot_token(row)

    async def bot_tokens(self, team_ids: Sequence[str]) -> dict[str, BotToken | None]:
        """`bot_token` of each of `team_ids`: the workspaces' own installs in one read,
        the others (an organisation's workspaces, the uninstalled) one by one."""
        keys = {workspace_key(None, team, False): team for team in team_ids}
        out: dict[str, BotToken | None] = {}
        async with self._sessions() as s:
            rows = (
                await s.execute(
                    select(SlackInstallationRow).where(
                        SlackInstallationRow.workspace_key.in_(sorted(keys))
                    )
                )
            ).scalars()
            for row in rows:
                if row.bot_token is not None:
                    out[keys[row.workspace_key]] = _bot_token(row)
        for team in team_ids:
            if team not in out:
                out[team] = await self.bot_token(team)
        return out

    async def remember_team(self, team_id: str, enterprise_id: str) -> None:
        """Workspace `team_id` belongs to organisation `enterprise_id` (from a request)."""
        stmt = insert(self._dialect, SlackEnterpriseTeamRow).values(
            team_id=team_id, enterprise_id=enterprise_id
        )
        async with self._sessions.begin() as s:
            await s.execute(
                stmt.on_conflict_do_update(
                    index_elements=["team_id"], set_={"enterprise_id": enterprise_id}
                )
            )

    async def installed_teams(self) -> set[str]:
        """Team ids with a working install (an organisation's by its known workspaces)."""
        async with self._sessions() as s:
            rows = (
                await s.execute(
                    select(
                        SlackInstallationRow.team_id,
                        SlackInstallationRow.enterprise_id,
                        SlackInstallationRow.is_enterprise_install,
                    ).where(SlackInstallationRow.bot_token.is_not(None))
                )
            ).all()
            orgs = {e for t, e, org in rows if org and e}
            teams = {t for t, _, org in rows if not org and t}
            if orgs:
                teams |= set(
                    (
                        await s.execute(
                            select(SlackEnterpriseTeamRow.team_id).where(
                                SlackEnterpriseTeamRow.enterprise_id.in_(orgs)
                            )
                        )
                    ).scalars()
                )
        return teams

    async def uninstalled(self, team_id: str) -> bool:
        """True when `team_id` installed the app once and has no working install now."""
        async with self._sessions() as s:
            rows = (
                await s.execute(
                    select(SlackInstallationRow.bot_token).where(
                        SlackInstallationRow.team_id == team_id
                    )
                )
            ).all()
        return bool(rows) and all(token is None for (token,) in rows)

    async def claim_refresh(self, key: str, refresh_token: str, lease: timedelta) -> bool:
        """Take the right to refresh `key`'s token for `lease`; False when another
        replica holds it, or already refreshed it (its refresh token changed)."""
        now = self._clock.now()
        return await self._update_token(
            key,
            refresh_token,
            or_(
                SlackInstallationRow.refresh_claimed_until.is_(None),
                SlackInstallationRow.refresh_claimed_until <= now,
            ),
            refresh_claimed_until=now + lease,
        )

    async def finish_refresh(
        self,
        key: str,
        old_refresh_token: str,
        token: str,
        refresh_token: str | None,
        expires_at: datetime | None,
    ) -> bool:
        """Store the refreshed token (only over the token it replaced) and drop the claim."""
        return await self._update_token(
            key,
            old_refresh_token,
            bot_token=token,
            bot_refresh_token=refresh_token,
            bot_token_expires_at=expires_at,
            refresh_claimed_until=None,
            updated_at=self._clock.now(),
        )

    async def _update_token(
        self, key: str, refresh_token: str, *conditions: ColumnElement[bool], **values: Any
    ) -> bool:
        """Set `values` on `key`'s install if its refresh token is still `refresh_token`
        (and `conditions` hold); whether it did."""
        async with self._sessions.begin() as s:
            done = await s.execute(
                update(SlackInstallationRow)
                .where(
                    SlackInstallationRow.workspace_key == key,
                    SlackInstallationRow.bot_refresh_token == refresh_token,
                    *conditions,
                )
                .values(**values)
            )
        return bool(done.rowcount == 1)  # type: ignore[attr-defined]

    async def release_refresh(self, key: str) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(SlackInstallationRow)
                .where(SlackInstallationRow.workspace_key == key)
                .values(refresh_claimed_until=None)
            )

    async def forget(self, team_or_enterprise: str) -> int:
        """Erase the installs of a workspace or organisation (and its known workspaces)."""
        async with self._sessions.begin() as s:
            done = await s.execute(
                delete(SlackInstallationRow).where(
                    or_(
                        SlackInstallationRow.team_id == team_or_enterprise,
                        SlackInstallationRow.enterprise_id == team_or_enterprise,
                    )
                )
            )
            await s.execute(
                delete(SlackEnterpriseTeamRow).where(
                    or_(
                        SlackEnterpriseTeamRow.team_id == team_or_enterprise,
                        SlackEnterpriseTeamRow.enterprise_id == team_or_enterprise,
                    )
                )
            )
        return int(done.rowcount)  # type: ignore[attr-defined]

    # -- inside ------------------------------------------------------------------------

    async def _find(
        self, enterprise_id: str | None, team_id: str | None, org_wide: bool
    ) -> SlackInstallationRow | None:
        async with self._sessions() as s:
            if org_wide:
                return await self._by_key(s, workspace_key(enterprise_id, None, True))
            row = await self._by_key(s, workspace_key(enterprise_id, team_id, False))
            if (row is None or row.bot_token is None) and team_id and enterprise_id is None:
                # A request without its enterprise id (a scheduled post knows only the team).
                row = (
                    await s.execute(
                        select(SlackInstallationRow)
                        .where(
                            SlackInstallationRow.team_id == team_id,
                            SlackInstallationRow.bot_token.is_not(None),
                        )
                        .limit(1)
                    )
                ).scalar_one_or_none() or row
                if row is None or row.bot_token is None:
                    enterprise_id = (
                        await s.execute(
                            select(SlackEnterpriseTeamRow.enterprise_id).where(
                                SlackEnterpriseTeamRow.team_id == team_id
                            )
                        )
                    ).scalar_one_or_none()
            if (row is None or row.bot_token is None) and enterprise_id:
                org = await self._by_key(s, workspace_key(enterprise_id, None, True))
                row = org or row
            return row

    @staticmethod
    async def _by_key(s: AsyncSession, key: str) -> SlackInstallationRow | None:
        return (
            await s.execute(
                select(SlackInstallationRow).where(SlackInstallationRow.workspace_key == key)
            )
        ).scalar_one_or_none()

    async def _uninstall(self, enterprise_id: str | None, team_id: str | None) -> None:
        """Erase the tokens of the install that serves this workspace (or organisation)."""
        row = await self._find(enterprise_id, team_id, team_id is None)
        if row is None:
            return
        now = self._clock.now()
        async with self._sessions.begin() as s:
            await s.execute(
                update(SlackInstallationRow)
                .where(SlackInstallationRow.workspace_key == row.workspace_key)
                .values(
                    bot_token=None,
                    bot_refresh_token=None,
                    bot_token_expires_at=None,
                    user_token=None,
                    user_refresh_token=None,
                    user_token_expires_at=None,
                    refresh_claimed_until=None,
                    uninstalled_at=now,
                    updated_at=now,
                )
            )


# The columns stored as slack_sdk's `Installation` has them (the others are converted).
_KEPT = (
    "enterprise_id",
    "app_id",
    "enterprise_name",
    "enterprise_url",
    "team_name",
    "bot_token",
    "bot_id",
    "bot_user_id",
    "bot_refresh_token",
    "user_token",
    "user_refresh_token",
    "token_type",
)


def _installation(row: SlackInstallationRow) -> Installation:
    return Installation(
        **{name: getattr(row, name) for name in _KEPT},
        team_id=row.team_id,
        bot_scopes=row.bot_scopes,
        bot_token_expires_at=_epoch(row.bot_token_expires_at),
        user_id=row.user_id,
        user_scopes=row.user_scopes,
        user_token_expires_at=_epoch(row.user_token_expires_at),
        is_enterprise_install=row.is_enterprise_install,
        installed_at=row.installed_at.timestamp(),
    )


class SqlSlackOAuthStates(AsyncOAuthStateStore):
    """OAuth states for ``/slack/install``: random, stored hashed, single use, expiring."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        clock: Clock,
        ttl: timedelta = STATE_TTL,
    ) -> None:
        self._sessions = sessions
        self._clock = clock
        self._ttl = ttl

    @property
    def logger(self) -> logging.Logger:
        return log

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        state = secrets.token_urlsafe(32)
        now = self._clock.now()
        async with self._sessions.begin() as s:
            await s.execute(delete(SlackOAuthStateRow).where(SlackOAuthStateRow.expires_at <= now))
            s.add(
                SlackOAuthStateRow(
                    state_hash=_hash(state), created_at=now, expires_at=now + self._ttl
                )
            )
        return state

    async def async_consume(self, state: str) -> bool:
        """True once for a state this store issued that has not expired; then never."""
        now = self._clock.now()
        async with self._sessions.begin() as s:
            done = await s.execute(
                delete(SlackOAuthStateRow).where(
                    SlackOAuthStateRow.state_hash == _hash(state),
                    SlackOAuthStateRow.expires_at > now,
                )
            )
        return bool(done.rowcount == 1)  # type: ignore[attr-defined]


def _hash(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8", errors="replace")).hexdigest()


__all__ = ["BotToken", "SqlSlackInstallations", "SqlSlackOAuthStates", "workspace_key"]
