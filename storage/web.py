"""The dashboard's own rows: sessions, sign-ins under way, sign-in rates (`bot.signin`)."""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import delete, select, update

from bot.domain import Locale, Platform
from bot.signin import Membership, WebSession
from storage._sql import SqlRepository, insert
from storage.models import WebRateRow, WebSessionRow, WebSignInRow


class SqlWebSessions(SqlRepository):
    async def create(self, token_hash: str, session: WebSession) -> None:
        workspaces = [
            {"id": m.workspace, "name": m.name, "admin": m.admin} for m in session.workspaces
        ]
        async with self._sessions.begin() as s:
            s.add(
                WebSessionRow(
                    token_hash=token_hash,
                    platform=str(session.platform),
                    user_id=session.user,
                    display_name=session.name[:128],
                    workspaces=json.dumps(workspaces),
                    csrf=session.csrf,
                    locale=session.locale.value if session.locale else None,
                    created_at=session.created_at,
                    expires_at=session.expires_at,
                )
            )

    async def get(self, token_hash: str, now: datetime) -> WebSession | None:
        async with self._sessions() as s:
            row = (
                await s.execute(
                    select(WebSessionRow).where(
                        WebSessionRow.token_hash == token_hash, WebSessionRow.expires_at > now
                    )
                )
            ).scalar_one_or_none()
        if row is None:
            return None
        return WebSession(
            platform=Platform(row.platform),
            user=row.user_id,
            name=row.display_name,
            workspaces=tuple(
                Membership(str(w["id"]), str(w.get("name") or ""), w.get("admin"))
                for w in json.loads(row.workspaces)
            ),
            csrf=row.csrf,
            created_at=row.created_at,
            expires_at=row.expires_at,
            locale=Locale(row.locale) if row.locale else None,
        )

    async def set_locale(self, token_hash: str, locale: Locale) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(WebSessionRow)
                .where(WebSessionRow.token_hash == token_hash)
                .values(locale=locale.value)
            )

    async def delete(self, token_hash: str) -> None:
        async with self._sessions.begin() as s:
            await s.execute(delete(WebSessionRow).where(WebSessionRow.token_hash == token_hash))

    async def delete_member(self, platform: Platform, user: str) -> int:
        async with self._sessions.begin() as s:
            done = await s.execute(
                delete(WebSessionRow).where(
                    WebSessionRow.platform == str(platform), WebSessionRow.user_id == user
                )
            )
        return int(done.rowcount)  # type: ignore[attr-defined]

    async def put_sign_in(
        self, state_hash: str, provider: str, verifier: str, now: datetime, expires: datetime
    ) -> None:
        async with self._sessions.begin() as s:
            s.add(
                WebSignInRow(
                    state_hash=state_hash,
                    provider=provider,
                    verifier=verifier,
                    created_at=now,
                    expires_at=expires,
                )
            )

    async def take_sign_in(self, state_hash: str, provider: str, now: datetime) -> str | None:
        # Read, then delete: whoever deletes the row takes the sign-in (one replica wins).
        async with self._sessions.begin() as s:
            verifier = (
                await s.execute(
                    select(WebSignInRow.verifier).where(
                        WebSignInRow.state_hash == state_hash,
                        WebSignInRow.provider == provider,
                        WebSignInRow.expires_at > now,
                    )
                )
            ).scalar_one_or_none()
            taken = await s.execute(
                delete(WebSignInRow).where(WebSignInRow.state_hash == state_hash)
            )
        if verifier is None or taken.rowcount != 1:  # type: ignore[attr-defined]
            return None
        return str(verifier)

    async def hit(self, key: str, window_start: datetime) -> int:
        ins = insert(self._dialect, WebRateRow)
        async with self._sessions.begin() as s:
            found = await s.execute(
                ins.values(key=key[:160], window_start=window_start, hits=1)
                .on_conflict_do_update(
                    index_elements=["key", "window_start"],
                    set_={"hits": WebRateRow.hits + 1},
                )
                .returning(WebRateRow.hits)
            )
            return int(found.scalar_one())

    async def purge(self, now: datetime) -> None:
        async with self._sessions.begin() as s:
            await s.execute(delete(WebSessionRow).where(WebSessionRow.expires_at <= now))
            await s.execute(delete(WebSignInRow).where(WebSignInRow.expires_at <= now))
            # A rate window is an hour at most (the adapter's windows are minutes).
            await s.execute(
                delete(WebRateRow).where(WebRateRow.window_start < now.replace(minute=0))
            )


__all__ = ["SqlWebSessions"]
