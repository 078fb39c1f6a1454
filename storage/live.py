"""Live rounds (`bot.live`): a round row whose `step` only its lease holder advances, its
questions' posts claimed with their rows, the players who joined, and the live board
folded once when a round ends."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, Select, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.domain import ChannelRef, Locale, MessageRef, PostDraft, PostKind, PostState, UserRef
from bot.live.ports import (
    ACTIVE,
    BoardRow,
    EndNote,
    LiveAnswer,
    LiveQuestion,
    LiveRound,
    RoundState,
    Standing,
)
from storage._sql import RefRepository, added_id, from_row, insert, summed
from storage.models import (
    AnswerRow,
    ChannelRow,
    LivePlayerRow,
    LiveQuestionRow,
    LiveRoundRow,
    LiveScoreRow,
    MemberRow,
    PostRow,
)
from storage.posts import post_row, post_select, to_post
from storage.refs import channel_ref, is_channel, is_member, user_ref

_ACTIVE = [str(s) for s in ACTIVE]
_STEPPING = [*_ACTIVE, str(RoundState.ENDING)]


def _channel_scores(channel: ChannelRef) -> Select[LiveScoreRow, MemberRow]:
    """The live board's rows of `channel`, with their members."""
    return (
        select(LiveScoreRow, MemberRow)
        .join(MemberRow, MemberRow.id == LiveScoreRow.member_id)
        .join(ChannelRow, ChannelRow.id == LiveScoreRow.channel_id)
        .where(
            *is_channel(channel),
        )
    )


def _round(row: LiveRoundRow, ch: ChannelRow) -> LiveRound:
    channel = channel_ref(ch)
    return from_row(
        LiveRound,
        row,
        channel=channel,
        state=RoundState(row.state),
        locale=Locale(row.locale),
        lobby_message=MessageRef(channel, row.lobby_message_id) if row.lobby_message_id else None,
        end_note=EndNote(row.end_note),
    )


def _rounds() -> Select[LiveRoundRow, ChannelRow]:
    return select(LiveRoundRow, ChannelRow).join(
        ChannelRow, ChannelRow.id == LiveRoundRow.channel_id
    )


class SqlLiveRepository(RefRepository):
    # -- rounds ---------------------------------------------------------------------------

    async def start(
        self,
        channel: ChannelRef,
        *,
        questions: int,
        seconds: int,
        topic: str | None,
        counted: bool,
        locale: Locale,
        started_by: str,
        now: datetime,
        starts_at: datetime,
    ) -> LiveRound | None:
        try:
            async with self._sessions.begin() as s:
                cid = await self._refs.channel_id(s, channel, now)
                row = LiveRoundRow(
                    channel_id=cid,
                    active_channel_id=cid,
                    state=str(RoundState.LOBBY),
                    questions=questions,
                    seconds=seconds,
                    topic=topic,
                    counted=counted,
                    locale=str(locale),
                    started_by=started_by,
                    created_at=now,
                    step=0,
                    next_at=starts_at,
                    stop_requested=False,
                    end_note=str(EndNote.COMPLETE),
                )
                round_id = await added_id(s, row)
        except IntegrityError:
            return None  # the channel has a round in its lobby or running
        return await self.get(round_id)

    async def get(self, round_id: int) -> LiveRound | None:
        async with self._sessions() as s:
            found = (await s.execute(_rounds().where(LiveRoundRow.id == round_id))).first()
        return _round(*found) if found else None

    async def active(self, channel: ChannelRef) -> LiveRound | None:
        async with self._sessions() as s:
            found = (
                await s.execute(
                    _rounds().where(
                        LiveRoundRow.active_channel_id.is_not(None),
                        *is_channel(channel),
                    )
                )
            ).first()
        return _round(*found) if found else None

    async def set_lobby_message(self, round_id: int, message: MessageRef) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(LiveRoundRow)
                .where(LiveRoundRow.id == round_id)
                .values(lobby_message_id=message.message)
            )

    async def _update_round(
        self, round_id: int, *where: ColumnElement[bool], **values: object
    ) -> bool:
        """Set `values` on the round if `where` holds, in a transaction of its own: whether
        it did (the conditional update every step, lease and end is decided by)."""
        async with self._sessions.begin() as s:
            found = (
                await s.execute(
                    update(LiveRoundRow)
                    .where(LiveRoundRow.id == round_id, *where)
                    .values(**values)
                    .returning(LiveRoundRow.id)
                )
            ).first()
        return found is not None

    @staticmethod
    def _free(stale_before: datetime) -> ColumnElement[bool]:
        return or_(LiveRoundRow.leased_at.is_(None), LiveRoundRow.leased_at <= stale_before)

    async def due(
        self, now: datetime, stale_before: datetime, platforms: Collection[str], limit: int = 50
    ) -> list[LiveRound]:
        stmt = (
            _rounds()
            .where(
                LiveRoundRow.state.in_(_STEPPING),
                LiveRoundRow.next_at <= now,
                self._free(stale_before),
                ChannelRow.platform.in_([str(p) for p in platforms]),
            )
            .order_by(LiveRoundRow.next_at)
            .limit(limit)
        )
        async with self._sessions() as s:
            return [_round(*r) for r in (await s.execute(stmt)).all()]

    async def claim(self, round_id: int, step: int, now: datetime, stale_before: datetime) -> bool:
        return await self._update_round(
            round_id,
            LiveRoundRow.step == step,
            LiveRoundRow.state.in_(_STEPPING),
            LiveRoundRow.next_at <= now,
            self._free(stale_before),
            leased_at=now,
        )

    async def renew(self, round_id: int, step: int, held: datetime, now: datetime) -> bool:
        return await self._update_round(
            round_id,
            LiveRoundRow.step == step,
            LiveRoundRow.leased_at == held,
            leased_at=now,
        )

    async def advance(
        self, round_id: int, step: int, next_at: datetime, state: RoundState | None = None
    ) -> bool:
        values: dict[str, object] = {"step": step + 1, "next_at": next_at, "leased_at": None}
        if state is not None:
            values["state"] = str(state)
        return await self._update_round(
            round_id,
            LiveRoundRow.step == step,
            LiveRoundRow.state.in_(_STEPPING),
            **values,
        )

    async def hurry(self, round_id: int, now: datetime, *, stop: bool) -> LiveRound | None:
        values: dict[str, object] = {"next_at": now}
        if stop:
            values["stop_requested"] = True
        async with self._sessions.begin() as s:
            moved = (
                await s.execute(
                    update(LiveRoundRow)
                    .where(
                        LiveRoundRow.id == round_id,
                        LiveRoundRow.state.in_(_ACTIVE),
                        LiveRoundRow.next_at > now,
                    )
                    .values(**values)
                    .returning(LiveRoundRow.id)
                )
            ).first()
            if moved is None and stop:  # the step is due already: only mark the stop
                await s.execute(
                    update(LiveRoundRow)
                    .where(LiveRoundRow.id == round_id, LiveRoundRow.state.in_(_ACTIVE))
                    .values(stop_requested=True)
                )
        return await self.get(round_id)

    async def cancel(self, round_id: int, now: datetime) -> bool:
        return await self._update_round(
            round_id,
            LiveRoundRow.state == str(RoundState.LOBBY),
            LiveRoundRow.step == 0,
            state=str(RoundState.CANCELLED),
            active_channel_id=None,
            ended_at=now,
            end_note=str(EndNote.CANCELLED),
            leased_at=None,
        )

    # -- questions ------------------------------------------------------------------------

    async def claim_question(
        self, round_id: int, k: int, draft: PostDraft, *, counted: bool
    ) -> LiveQuestion:
        found = await self.question(round_id, k)
        if found is not None:
            return found
        try:
            async with self._sessions.begin() as s:
                cid = await self._refs.channel_id(s, draft.channel, draft.created_at)
                post = post_row(cid, draft, PostKind.LIVE_COUNTED if counted else PostKind.LIVE)
                post_id = await added_id(s, post)
                s.add(LiveQuestionRow(round_id=round_id, k=k, post_id=post_id))
        except IntegrityError:
            pass  # another instance claimed question k first: theirs is the one
        found = await self.question(round_id, k)
        assert found is not None
        return found

    def _questions(self) -> Select[PostRow, ChannelRow, MemberRow, LiveQuestionRow]:
        return (
            post_select()
            .add_columns(LiveQuestionRow)
            .join(LiveQuestionRow, LiveQuestionRow.post_id == PostRow.id)
        )

    @staticmethod
    def _question(
        row: PostRow, ch: ChannelRow, practice: MemberRow | None, q: LiveQuestionRow
    ) -> LiveQuestion:
        return LiveQuestion(q.round_id, q.k, to_post(row, ch, practice), q.opened_at, q.results_at)

    async def question(self, round_id: int, k: int) -> LiveQuestion | None:
        async with self._sessions() as s:
            found = (
                await s.execute(
                    self._questions().where(
                        LiveQuestionRow.round_id == round_id, LiveQuestionRow.k == k
                    )
                )
            ).first()
        return self._question(*found) if found else None

    async def by_post(self, post_id: int) -> LiveQuestion | None:
        async with self._sessions() as s:
            found = (
                await s.execute(self._questions().where(LiveQuestionRow.post_id == post_id))
            ).first()
        return self._question(*found) if found else None

    async def questions(self, round_id: int) -> list[LiveQuestion]:
        async with self._sessions() as s:
            found = await s.execute(
                self._questions()
                .where(LiveQuestionRow.round_id == round_id)
                .order_by(LiveQuestionRow.k)
            )
            return [self._question(*r) for r in found.all()]

    async def mark_opened(
        self, round_id: int, k: int, message: MessageRef, opened_at: datetime, closes_at: datetime
    ) -> LiveQuestion:
        async with self._sessions.begin() as s:
            post_id = (
                await s.execute(
                    select(LiveQuestionRow.post_id).where(
                        LiveQuestionRow.round_id == round_id, LiveQuestionRow.k == k
                    )
                )
            ).scalar_one()
            opened = (
                await s.execute(
                    update(PostRow)
                    .where(PostRow.id == post_id, PostRow.state == str(PostState.CLAIMED))
                    .values(
                        message_id=message.message,
                        state=str(PostState.OPEN),
                        closes_at=closes_at,
                    )
                    .returning(PostRow.id)
                )
            ).first()
            if opened is not None:
                await s.execute(
                    update(LiveQuestionRow)
                    .where(LiveQuestionRow.round_id == round_id, LiveQuestionRow.k == k)
                    .values(opened_at=opened_at)
                )
        found = await self.question(round_id, k)
        assert found is not None
        return found

    async def mark_results(self, round_id: int, k: int, at: datetime) -> bool:
        async with self._sessions.begin() as s:
            done = (
                await s.execute(
                    update(LiveQuestionRow)
                    .where(
                        LiveQuestionRow.round_id == round_id,
                        LiveQuestionRow.k == k,
                        LiveQuestionRow.results_at.is_(None),
                    )
                    .values(results_at=at)
                    .returning(LiveQuestionRow.k)
                )
            ).first()
        return done is not None

    async def answers(self, round_id: int) -> list[LiveAnswer]:
        async with self._sessions() as s:
            return await self._answers(s, round_id)

    @staticmethod
    async def _answers(s: AsyncSession, round_id: int) -> list[LiveAnswer]:
        rows = await s.execute(
            select(
                LiveQuestionRow.k,
                MemberRow,
                AnswerRow.choice,
                AnswerRow.correct,
                AnswerRow.answered_at,
                LiveQuestionRow.opened_at,
                PostRow.closes_at,
            )
            .join(PostRow, PostRow.id == LiveQuestionRow.post_id)
            .join(AnswerRow, AnswerRow.post_id == PostRow.id)
            .join(MemberRow, MemberRow.id == AnswerRow.member_id)
            .where(LiveQuestionRow.round_id == round_id, LiveQuestionRow.opened_at.is_not(None))
            .order_by(AnswerRow.answered_at, AnswerRow.id)
        )
        return [
            LiveAnswer(k, user_ref(m), choice, correct, at, opened, closes)
            for k, m, choice, correct, at, opened, closes in rows
            if opened is not None and closes is not None
        ]

    # -- players and the end --------------------------------------------------------------

    async def join(self, round_id: int, user: UserRef, at: datetime) -> bool:
        async with self._sessions.begin() as s:
            mid = (await self._refs.member_ids(s, [user]))[user.key]
            added = (
                await s.execute(
                    insert(self._dialect, LivePlayerRow)
                    .values(round_id=round_id, member_id=mid, joined_at=at)
                    .on_conflict_do_nothing(index_elements=["round_id", "member_id"])
                    .returning(LivePlayerRow.member_id)
                )
            ).first()
        return added is not None

    async def players(self, round_id: int) -> list[UserRef]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(MemberRow)
                .join(LivePlayerRow, LivePlayerRow.member_id == MemberRow.id)
                .where(LivePlayerRow.round_id == round_id)
                .order_by(LivePlayerRow.joined_at, MemberRow.id)
            )
            return [user_ref(m) for m in rows.scalars()]

    async def finish(
        self, round_id: int, step: int, now: datetime, note: EndNote, table: Sequence[Standing]
    ) -> bool:
        async with self._sessions.begin() as s:
            ended = (
                await s.execute(
                    update(LiveRoundRow)
                    .where(
                        LiveRoundRow.id == round_id,
                        LiveRoundRow.step == step,
                        LiveRoundRow.state.in_(_ACTIVE),
                    )
                    .values(
                        state=str(RoundState.ENDING),
                        step=step + 1,
                        active_channel_id=None,
                        ended_at=now,
                        end_note=str(note),
                        next_at=now,
                        leased_at=None,
                    )
                    .returning(LiveRoundRow.channel_id)
                )
            ).first()
            if ended is None:
                return False
            (cid,) = ended
            played = [row for row in table if row.answered]
            if played:
                mids = await self._refs.member_ids(s, [row.user for row in played])
                ins = insert(self._dialect, LiveScoreRow)
                rows = sorted(
                    (
                        {
                            "channel_id": cid,
                            "member_id": mids[row.user.key],
                            "points": row.points,
                            "correct": row.correct,
                            "answered": row.answered,
                            "rounds": 1,
                            "reached_at": now,
                        }
                        for row in played
                    ),
                    key=lambda r: int(str(r["member_id"])),
                )
                await s.execute(
                    ins.on_conflict_do_update(
                        index_elements=["channel_id", "member_id"],
                        set_={
                            **summed(LiveScoreRow, ins, "points", "correct", "answered"),
                            "rounds": LiveScoreRow.rounds + 1,
                            "reached_at": ins.excluded.reached_at,
                        },
                    ),
                    rows,
                )
        return True

    async def mark_podium(self, round_id: int, at: datetime) -> bool:
        return await self._update_round(
            round_id,
            LiveRoundRow.state == str(RoundState.ENDING),
            state=str(RoundState.FINISHED),
            podium_at=at,
            leased_at=None,
        )

    async def board(self, channel: ChannelRef, limit: int = 10) -> list[BoardRow]:
        async with self._sessions() as s:
            rows = (
                await s.execute(
                    _channel_scores(channel)
                    .order_by(
                        LiveScoreRow.points.desc(),
                        LiveScoreRow.correct.desc(),
                        LiveScoreRow.reached_at,
                        LiveScoreRow.member_id,
                    )
                    .limit(limit)
                )
            ).all()
        out: list[BoardRow] = []
        for i, (score, member) in enumerate(rows):
            rank = out[-1].rank if out and out[-1].points == score.points else i + 1
            out.append(
                BoardRow(
                    rank,
                    user_ref(member),
                    score.points,
                    score.correct,
                    score.answered,
                    score.rounds,
                )
            )
        return out

    async def player(self, channel: ChannelRef, user: UserRef) -> BoardRow | None:
        async with self._sessions() as s:
            found = (
                await s.execute(
                    _channel_scores(channel).where(
                        *is_member(user),
                    )
                )
            ).first()
        if found is None:
            return None
        score, member = found
        return BoardRow(
            0, user_ref(member), score.points, score.correct, score.answered, score.rounds
        )

    async def players_of(
        self, channel: ChannelRef, users: Sequence[UserRef]
    ) -> dict[str, BoardRow]:
        """`player` of many members of the channel's workspace, by member key (none:
        absent), read in one statement."""
        if not users:
            return {}
        async with self._sessions() as s:
            rows = await s.execute(
                _channel_scores(channel).where(
                    MemberRow.platform == str(channel.platform),
                    MemberRow.workspace == channel.workspace,
                    MemberRow.user_id.in_(sorted({u.user for u in users})),
                )
            )
            found = rows.all()
        out = {}
        for score, member in found:
            user = user_ref(member)
            out[user.key] = BoardRow(
                0, user, score.points, score.correct, score.answered, score.rounds
            )
        return out

    async def busy(self, channels: Collection[ChannelRef]) -> set[ChannelRef]:
        if not channels:
            return set()
        async with self._sessions() as s:
            rows = await s.execute(
                select(ChannelRow).join(
                    LiveRoundRow, LiveRoundRow.active_channel_id == ChannelRow.id
                )
            )
            running = {channel_ref(ch) for ch in rows.scalars()}
        return running & set(channels)

    async def next_due(self, platforms: Collection[str]) -> datetime | None:
        async with self._sessions() as s:
            return (
                await s.execute(
                    select(func.min(LiveRoundRow.next_at))
                    .join(ChannelRow, ChannelRow.id == LiveRoundRow.channel_id)
                    .where(
                        LiveRoundRow.state.in_(_STEPPING),
                        ChannelRow.platform.in_([str(p) for p in platforms]),
                    )
                )
            ).scalar_one_or_none()


__all__ = ["SqlLiveRepository"]
