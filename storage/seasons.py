"""Seasons: stored, ended once, their podiums claimed under a lease; boards read from the
season aggregates folded at close (`storage.season_fold`), never from the answers.

A season start is serialized per workspace by a lock on the workspace's `leagues` row
(created on first use), so two replicas cannot both store overlapping seasons.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.domain import ChannelRef, Platform, UserRef
from bot.seasons import (
    MIN_ACCURACY_ANSWERS,
    MIN_IMPROVED_ANSWERS,
    Improved,
    Podium,
    Season,
    SeasonBoard,
    SeasonNameTaken,
    SeasonOverlap,
    SeasonScope,
    SeasonState,
    TopicBest,
)
from storage._sql import RefRepository, insert
from storage.board_keys import season_board
from storage.models import (
    ChannelRow,
    LeagueRow,
    MemberRow,
    SeasonRow,
    SeasonScoreRow,
    SeasonTopicRow,
)
from storage.refs import RefResolver
from storage.scores import read_board
from storage.season_board import SeasonBoardReader
from storage.season_fold import ACTIVE, ENDED


def _season(row: SeasonRow, ch: ChannelRow) -> Season:
    return Season(
        id=row.id,
        channel=ChannelRef(Platform(ch.platform), ch.workspace, ch.channel),
        scope=SeasonScope(row.scope),
        name=row.name,
        starts_at=row.starts_at,
        ends_at=row.ends_at,
        state=SeasonState(row.state),
        podium_posted_at=row.podium_posted_at,
    )


def _select() -> Any:
    return select(SeasonRow, ChannelRow).join(ChannelRow, ChannelRow.id == SeasonRow.channel_id)


def _covering(channel: ChannelRef, cid: int | None) -> Any:
    """Seasons whose posts include the channel's."""
    return and_(
        SeasonRow.platform == str(channel.platform),
        SeasonRow.workspace == channel.workspace,
        or_(
            SeasonRow.scope == SeasonScope.WORKSPACE.value,
            SeasonRow.channel_id == (cid if cid is not None else -1),
        ),
    )


# What `Season` needs of a season and its channel, as plain columns (no ORM entities):
# read by every season board and `/quiz season`.
_FIELDS = (
    SeasonRow.id,
    ChannelRow.platform,
    ChannelRow.workspace,
    ChannelRow.channel,
    SeasonRow.scope,
    SeasonRow.name,
    SeasonRow.starts_at,
    SeasonRow.ends_at,
    SeasonRow.state,
    SeasonRow.podium_posted_at,
)


def _season_of(row: Any) -> Season:
    sid, platform, ws, channel, scope, name, starts, ends, state, posted = row
    return Season(
        id=sid,
        channel=ChannelRef(Platform(platform), ws, channel),
        scope=SeasonScope(scope),
        name=name,
        starts_at=starts,
        ends_at=ends,
        state=SeasonState(state),
        podium_posted_at=posted,
    )


def _first_covering(*where: ColumnElement[bool], order: tuple[Any, ...]) -> Any:
    """The first season covering a channel (`platform`, `workspace`, `channel`: its row id,
    -1 before it has one) that meets `where`, in `order`: built once, bound per call."""
    covering = and_(
        SeasonRow.platform == bindparam("platform"),
        SeasonRow.workspace == bindparam("workspace"),
        or_(
            SeasonRow.scope == SeasonScope.WORKSPACE.value,
            SeasonRow.channel_id == bindparam("channel"),
        ),
    )
    return (
        select(*_FIELDS)
        .join(ChannelRow, ChannelRow.id == SeasonRow.channel_id)
        .where(covering, *where)
        .order_by(*order)
        .limit(1)
    )


_NOW: Any = bindparam("now")
_CURRENT = _first_covering(
    SeasonRow.state == ACTIVE,
    SeasonRow.starts_at <= _NOW,
    SeasonRow.ends_at > _NOW,
    order=((SeasonRow.scope == SeasonScope.WORKSPACE.value).asc(), SeasonRow.id),
)
_UPCOMING = _first_covering(
    SeasonRow.state == ACTIVE, SeasonRow.starts_at > _NOW, order=(SeasonRow.starts_at,)
)
_NAMED = _first_covering(
    func.lower(SeasonRow.name) == bindparam("name"), order=(SeasonRow.id.desc(),)
)


def _user(platform: str, ws: str, uid: str, name: str) -> UserRef:
    return UserRef(Platform(platform), ws, uid, name)


class SqlSeasonRepository(RefRepository):
    def __init__(self, sessions: async_sessionmaker[AsyncSession], refs: RefResolver) -> None:
        super().__init__(sessions, refs)
        self._channel_ids: dict[ChannelRef, int] = {}
        self._boards = SeasonBoardReader()

    async def _channel_id(self, s: AsyncSession, channel: ChannelRef) -> int | None:
        """The channel's row id (cached: channel rows are never deleted), None before it
        has one."""
        if (cid := self._channel_ids.get(channel)) is not None:
            return cid
        cid = (
            await s.execute(
                select(ChannelRow.id).where(
                    ChannelRow.platform == str(channel.platform),
                    ChannelRow.workspace == channel.workspace,
                    ChannelRow.channel == channel.channel,
                )
            )
        ).scalar_one_or_none()
        if cid is not None:
            self._channel_ids[channel] = cid
        return cid

    async def start(
        self,
        channel: ChannelRef,
        scope: SeasonScope,
        name: str,
        starts_at: datetime,
        ends_at: datetime,
        created_by: str,
        now: datetime,
    ) -> Season:
        platform, ws = str(channel.platform), channel.workspace
        async with self._sessions.begin() as s:
            await s.execute(
                insert(self._dialect, LeagueRow)
                .values(platform=platform, workspace=ws, rule="top3")
                .on_conflict_do_nothing()
            )
            await s.execute(
                select(LeagueRow.platform)
                .where(LeagueRow.platform == platform, LeagueRow.workspace == ws)
                .with_for_update()
            )
            cid = await self._refs.channel_id(s, channel, now)
            overlapping = and_(
                SeasonRow.platform == platform,
                SeasonRow.workspace == ws,
                SeasonRow.state == ACTIVE,
                SeasonRow.starts_at < ends_at,
                SeasonRow.ends_at > starts_at,
            )
            if scope is SeasonScope.CHANNEL:
                overlapping = and_(overlapping, _covering(channel, cid))
            found = (await s.execute(_select().where(overlapping).limit(1))).first()
            if found is not None:
                raise SeasonOverlap(_season(*found))
            same_name = (
                await s.execute(
                    select(SeasonRow.id).where(
                        _covering(channel, cid), func.lower(SeasonRow.name) == name.lower()
                    )
                )
            ).first()
            if same_name is not None:
                raise SeasonNameTaken(name)
            length = ends_at - starts_at
            row = SeasonRow(
                platform=platform,
                workspace=ws,
                channel_id=cid,
                scope=scope.value,
                name=name,
                starts_at=starts_at,
                ends_at=ends_at,
                first_third_ends=starts_at + length / 3,
                last_third_starts=ends_at - length / 3,
                state=ACTIVE,
                created_by=created_by[:64],
            )
            s.add(row)
            await s.flush()
            ch = await s.get_one(ChannelRow, cid)
            return _season(row, ch)

    async def current(self, channel: ChannelRef, now: datetime) -> Season | None:
        return await self._first(channel, _CURRENT, now=now)

    async def upcoming(self, channel: ChannelRef, now: datetime) -> Season | None:
        return await self._first(channel, _UPCOMING, now=now)

    async def named(self, channel: ChannelRef, name: str) -> Season | None:
        return await self._first(channel, _NAMED, name=name.lower())

    async def _first(self, channel: ChannelRef, stmt: Any, **values: Any) -> Season | None:
        """The first season covering `channel` that `stmt` (a `_first_covering`) finds."""
        async with self._sessions() as s:
            cid = await self._channel_id(s, channel)
            params = {
                "platform": str(channel.platform),
                "workspace": channel.workspace,
                "channel": cid if cid is not None else -1,
                **values,
            }
            found = (await s.execute(stmt, params)).first()
            return _season_of(found) if found is not None else None

    async def listed(self, channel: ChannelRef, limit: int = 20) -> list[Season]:
        async with self._sessions() as s:
            cid = await self._channel_id(s, channel)
            found = await s.execute(
                _select()
                .where(_covering(channel, cid))
                .order_by(SeasonRow.starts_at.desc(), SeasonRow.id.desc())
                .limit(limit)
            )
            return [_season(*row) for row in found]

    async def get(self, season_id: int) -> Season | None:
        async with self._sessions() as s:
            found = (await s.execute(_select().where(SeasonRow.id == season_id))).first()
            return _season(*found) if found is not None else None

    async def end_now(self, season_id: int, now: datetime) -> bool:
        async with self._sessions.begin() as s:
            done = await s.execute(
                update(SeasonRow)
                .where(
                    SeasonRow.id == season_id, SeasonRow.state == ACTIVE, SeasonRow.ends_at > now
                )
                .values(ends_at=now)
            )
            return bool(done.rowcount)  # type: ignore[attr-defined]

    async def end_due(self, now: datetime) -> list[Season]:
        async with self._sessions.begin() as s:
            ids = (
                (
                    await s.execute(
                        update(SeasonRow)
                        .where(SeasonRow.state == ACTIVE, SeasonRow.ends_at <= now)
                        .values(state=ENDED, ended_at=now)
                        .returning(SeasonRow.id)
                    )
                )
                .scalars()
                .all()
            )
            if not ids:
                return []
            found = await s.execute(_select().where(SeasonRow.id.in_(sorted(ids))))
            return [_season(*row) for row in found]

    async def claim_podiums(
        self, now: datetime, lease: timedelta, platforms: Collection[str]
    ) -> list[Season]:
        if not platforms:
            return []
        async with self._sessions.begin() as s:
            ids = (
                (
                    await s.execute(
                        update(SeasonRow)
                        .where(
                            SeasonRow.state == ENDED,
                            SeasonRow.podium_posted_at.is_(None),
                            SeasonRow.platform.in_(sorted(platforms)),
                            or_(
                                SeasonRow.podium_leased_at.is_(None),
                                SeasonRow.podium_leased_at <= now - lease,
                            ),
                        )
                        .values(podium_leased_at=now)
                        .returning(SeasonRow.id)
                    )
                )
                .scalars()
                .all()
            )
            if not ids:
                return []
            found = await s.execute(
                _select().where(SeasonRow.id.in_(sorted(ids))).order_by(SeasonRow.id)
            )
            return [_season(*row) for row in found]

    async def mark_podium(self, season_id: int, message_id: str, at: datetime) -> bool:
        async with self._sessions.begin() as s:
            done = await s.execute(
                update(SeasonRow)
                .where(SeasonRow.id == season_id, SeasonRow.podium_posted_at.is_(None))
                .values(podium_posted_at=at, podium_message_id=message_id[:64])
            )
            return bool(done.rowcount)  # type: ignore[attr-defined]

    async def next_deadline(self, now: datetime, lease: timedelta) -> datetime | None:
        async with self._sessions() as s:
            end = (
                await s.execute(
                    select(func.min(SeasonRow.ends_at)).where(
                        SeasonRow.state == ACTIVE, SeasonRow.ends_at > now
                    )
                )
            ).scalar_one_or_none()
            leased = (
                await s.execute(
                    select(func.min(SeasonRow.podium_leased_at)).where(
                        SeasonRow.state == ENDED,
                        SeasonRow.podium_posted_at.is_(None),
                        SeasonRow.podium_leased_at.is_not(None),
                    )
                )
            ).scalar_one_or_none()
        times = [
            t
            for t in (end, leased + lease if leased is not None else None)
            if t is not None and t > now
        ]
        return min(times, default=None)

    async def board(
        self,
        season: Season,
        caller: UserRef | None,
        channel: ChannelRef | None = None,
        limit: int = 10,
        min_answers: int = MIN_ACCURACY_ANSWERS,
    ) -> SeasonBoard:
        async with self._sessions() as s:
            board = 0
            if channel is not None and season.scope is SeasonScope.WORKSPACE:
                board = await self._channel_id(s, channel) or -1
            rows, players, mine, best = await self._boards.read(
                s, season.id, board, season_board(season.id, board), caller, limit, min_answers
            )
        return SeasonBoard(season, tuple(rows), players, mine, best, board != 0)

    async def podium(self, season: Season, min_improved: int = MIN_IMPROVED_ANSWERS) -> Podium:
        r, t, m = SeasonScoreRow, SeasonTopicRow, MemberRow
        who = (m.platform, m.workspace, m.user_id, m.display_name)
        async with self._sessions() as s:
            top, _, _ = await read_board(
                s, r, (r.season_id == season.id, r.board == 0), season_board(season.id), None, 3
            )
            streak = (
                await s.execute(
                    select(r.best_streak, *who)
                    .join(m, m.id == r.member_id)
                    .where(r.season_id == season.id, r.best_streak > 0)
                    .order_by(r.best_streak.desc(), r.member_id)
                    .limit(1)
                )
            ).first()
            gain = (r.late_correct * 1.0 / r.late_answered) - (
                r.early_correct * 1.0 / r.early_answered
            )
            improved = (
                await s.execute(
                    select(r.early_correct, r.early_answered, r.late_correct, r.late_answered, *who)
                    .join(m, m.id == r.member_id)
                    .where(
                        r.season_id == season.id,
                        r.board == 0,
                        r.early_answered >= min_improved,
                        r.late_answered >= min_improved,
                        gain > 0,
                    )
                    .order_by(gain.desc(), r.member_id)
                    .limit(1)
                )
            ).first()
            per_topic = await s.execute(
                select(t.topic, t.correct, t.answered, *who)
                .join(m, m.id == t.member_id)
                .where(t.season_id == season.id, t.correct > 0)
                .order_by(t.topic, t.correct.desc(), t.answered, t.member_id)
            )
            topics: dict[str, TopicBest] = {}
            for topic, correct, answered, p, w, u, n in per_topic:
                topics.setdefault(topic, TopicBest(topic, _user(p, w, u, n), correct, answered))
        return Podium(
            season,
            tuple(top),
            (_user(*streak[1:]), streak[0]) if streak is not None else None,
            (
                Improved(_user(*improved[4:]), improved[0] / improved[1], improved[2] / improved[3])
                if improved is not None
                else None
            ),
            tuple(topics.values()),
        )


__all__ = ["SqlSeasonRepository"]
