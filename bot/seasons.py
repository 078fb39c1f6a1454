"""Seasons: a named competition with an end, a podium and an archive.

`/quiz season start <name> [weeks | until DATE] [from DATE] [workspace]` (admins) opens a
season over the channel's posts (or, with ``workspace``, every channel of the workspace);
`/quiz season` shows the current one (dates, leader, the caller's rank), `/quiz season
board [name] [workspace]` its boards (or a past season's), `/quiz season list` the
workspace's seasons, `/quiz season end` (admins) ends the current one now.

Rules (documented in docs/leaderboards.md, "Seasons and teams"):

- A post counts for a season when it was created at or after the season's start and
  closed before its end; its points are the points it scored on the channel's boards, so a
  late joiner ranks on the points earned in the season.
- Two boards are shown: by points (ties as on every board), and by accuracy among members
  with at least `MIN_ACCURACY_ANSWERS` answers (ties: more correct answers first).
- At the end (the scheduler's pass, on every replica: `SeasonKeeper`), the season is marked
  ended by a conditional update and its podium posted under a lease, marked posted once:
  the top 3, the longest streak of the season, the most improved (accuracy in the last
  third of the season's planned length against the first third, at least
  `MIN_IMPROVED_ANSWERS` answers in each) and the best in each topic (most correct
  answers, then fewer answers).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol
from zoneinfo import ZoneInfo

from bot.admin import AdminStatus, admin_refusal
from bot.commands import Admin, Command, Invocation, Reply
from bot.domain import ChannelRef, LeaderboardRow, Locale, UserRef
from bot.errors import UserFacingError
from bot.features import Feature, Parts
from bot.i18n import N_, Translator, translator
from bot.lifecycle import Lifecycle
from bot.messages import Message
from bot.quiz import BulkLine
from bot.quoting import quoted
from bot.render import board_line

if TYPE_CHECKING:
    from bot.clock import Clock
    from bot.quiz import QuizService

log = logging.getLogger(__name__)

USAGE = "season [start|end|board|list] …"
DEFAULT_WEEKS = 12  # a quarter
MAX_WEEKS = 52
MAX_NAME = 40
MIN_ACCURACY_ANSWERS = 5
MIN_IMPROVED_ANSWERS = 3
PODIUM_LEASE = timedelta(minutes=2)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class SeasonScope(StrEnum):
    CHANNEL = "channel"  # the channel's posts
    WORKSPACE = "workspace"  # every channel of the workspace


class SeasonState(StrEnum):
    ACTIVE = "active"
    ENDED = "ended"


@dataclass(frozen=True, slots=True)
class Season:
    id: int
    channel: ChannelRef  # where it was started (and its podium is posted)
    scope: SeasonScope
    name: str
    starts_at: datetime
    ends_at: datetime
    state: SeasonState
    podium_posted_at: datetime | None = None

    def covers(self, channel: ChannelRef) -> bool:
        if self.scope is SeasonScope.WORKSPACE:
            return (channel.platform, channel.workspace) == (
                self.channel.platform,
                self.channel.workspace,
            )
        return channel.key == self.channel.key


@dataclass(frozen=True, slots=True)
class SeasonBoard:
    season: Season
    rows: tuple[LeaderboardRow, ...]  # by points
    players: int
    caller: LeaderboardRow | None
    accurate: tuple[LeaderboardRow, ...]  # by accuracy, MIN_ACCURACY_ANSWERS answers or more
    channel_board: bool  # a workspace season's board in one channel


@dataclass(frozen=True, slots=True)
class Improved:
    user: UserRef
    before: float  # accuracy in the first third
    after: float  # in the last third


@dataclass(frozen=True, slots=True)
class TopicBest:
    topic: str
    user: UserRef
    correct: int
    answered: int


@dataclass(frozen=True, slots=True)
class Podium:
    season: Season
    top: tuple[LeaderboardRow, ...]
    streak: tuple[UserRef, int] | None
    improved: Improved | None
    topics: tuple[TopicBest, ...]


class SeasonOverlap(Exception):
    """A season already covers the channel in the asked dates."""

    def __init__(self, season: Season) -> None:
        super().__init__(season.name)
        self.season = season


class SeasonNameTaken(Exception):
    pass


class SeasonRepository(Protocol):
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
        """Store a season; raises `SeasonOverlap` (an active season covering one of its
        channels overlaps its dates) or `SeasonNameTaken`, storing nothing."""
        ...

    async def current(self, channel: ChannelRef, now: datetime) -> Season | None:
        """The active season covering the channel at `now` (the channel's own first)."""
        ...

    async def upcoming(self, channel: ChannelRef, now: datetime) -> Season | None:
        """The next active season covering the channel that has not started yet."""
        ...

    async def named(self, channel: ChannelRef, name: str) -> Season | None:
        """The newest season of that name covering the channel."""
        ...

    async def listed(self, channel: ChannelRef, limit: int = 20) -> list[Season]:
        """The seasons covering the channel, newest first."""
        ...

    async def end_now(self, season_id: int, now: datetime) -> bool:
        """Bring an active season's end forward to `now` (False: it had ended)."""
        ...

    async def end_due(self, now: datetime) -> list[Season]:
        """Mark ended every active season whose end passed (one caller wins each)."""
        ...

    async def claim_podiums(
        self, now: datetime, lease: timedelta, platforms: Collection[str]
    ) -> list[Season]:
        """Ended seasons without a posted podium whose lease is free: leased to us."""
        ...

    async def mark_podium(self, season_id: int, message_id: str, at: datetime) -> bool: ...

    async def next_deadline(self, now: datetime, lease: timedelta) -> datetime | None:
        """The next season end, or podium lease expiry, after `now`."""
        ...

    async def board(
        self,
        season: Season,
        caller: UserRef | None,
        channel: ChannelRef | None = None,
        limit: int = 10,
        min_answers: int = MIN_ACCURACY_ANSWERS,
    ) -> SeasonBoard:
        """The season's boards (in `channel` for a workspace season, else the whole)."""
        ...

    async def podium(self, season: Season, min_improved: int = MIN_IMPROVED_ANSWERS) -> Podium: ...


# -- reading the command ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartRequest:
    name: str
    starts_at: datetime
    ends_at: datetime
    scope: SeasonScope


def _local_midnight(day: date, zone: str) -> datetime:
    return datetime.combine(day, time(0), ZoneInfo(zone))


def _date(word: str, t: Translator) -> date:
    try:
        if not _DATE.fullmatch(word):
            raise ValueError(word)
        return date.fromisoformat(word)
    except ValueError:
        raise UserFacingError(
            t(
                "{value} is not a date: write it as YYYY-MM-DD, e.g. 2027-03-31. "
                "Nothing was stored.",
                value=quoted(word),
            )
        ) from None


def parse_start(words: list[str], now: datetime, zone: str, t: Translator) -> StartRequest:
    """``Spring 8``, ``Spring until 2027-03-31``, ``Q2 from 2027-04-01 13 workspace``."""
    usage = t(
        "Usage: /quiz season start <name> [weeks | until YYYY-MM-DD] [from YYYY-MM-DD] "
        "[workspace]. Example: /quiz season start Spring 8"
    )
    if not words:
        raise UserFacingError(t("A season needs a name.") + " " + usage)
    name, rest = words[0].strip(), [w.lower() for w in words[1:]]
    if not name or len(name) > MAX_NAME:
        raise UserFacingError(
            t("A season's name has 1 to {limit} characters.", limit=MAX_NAME) + " " + usage
        )
    weeks: int | None = None
    until: date | None = None
    first: date | None = None
    scope = SeasonScope.CHANNEL
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("until", "from") and i + 1 < len(rest):
            day = _date(rest[i + 1], t)
            if word == "until":
                until = day
            else:
                first = day
            i += 2
            continue
        if word.isdigit():
            weeks = int(word)
            if not 1 <= weeks <= MAX_WEEKS:
                raise UserFacingError(
                    t("A season lasts 1 to {limit} weeks.", limit=MAX_WEEKS) + " " + usage
                )
        elif word in ("workspace", "server"):
            scope = SeasonScope.WORKSPACE
        else:
            raise UserFacingError(
                t("I do not understand {value}.", value=quoted(words[i + 1])) + " " + usage
            )
        i += 1
    if weeks is not None and until is not None:
        raise UserFacingError(t("Give the weeks or the end date, not both.") + " " + usage)
    today = now.astimezone(ZoneInfo(zone)).date()
    if first is not None and first < today:
        # Posts closed before the season was stored were never folded into it.
        raise UserFacingError(
            t(
                "A season starts today or later, not on {day}: nothing was stored.",
                day=first.isoformat(),
            )
        )
    # From today: from now (what closed earlier today was folded before the season).
    starts_at = _local_midnight(first, zone) if first is not None and first > today else now
    if until is not None:
        ends_at = _local_midnight(until + timedelta(days=1), zone)  # through that day
    else:
        # Whole local days: the season ends at midnight, N weeks after its first day.
        first_day = starts_at.astimezone(ZoneInfo(zone)).date()
        ends_at = _local_midnight(first_day + timedelta(weeks=weeks or DEFAULT_WEEKS), zone)
    if ends_at <= starts_at or ends_at <= now:
        raise UserFacingError(
            t(
                "That season would end ({end}) before it starts ({start}): nothing was stored.",
                end=_day(ends_at - timedelta(seconds=1), zone),
                start=_day(starts_at, zone),
            )
        )
    return StartRequest(
        name, starts_at.astimezone(now.tzinfo), ends_at.astimezone(now.tzinfo), scope
    )


def _day(at: datetime, zone: str) -> str:
    return at.astimezone(ZoneInfo(zone)).date().isoformat()


def season_dates(season: Season, zone: str) -> str:
    """A season's first and last days in `zone`."""
    last = season.ends_at - timedelta(seconds=1)
    return f"{_day(season.starts_at, zone)} – {_day(last, zone)}"


# -- messages ---------------------------------------------------------------------------


def _accuracy_line(i: int, r: LeaderboardRow, t: Translator) -> str:
    return t(
        "{rank}. {name} — {percent}% ({correct}/{answered})",
        rank=i,
        name=r.user.display,
        percent=round(100 * r.correct / r.answered),
        correct=r.correct,
        answered=r.answered,
    )


def board_message(board: SeasonBoard, zone: str, locale: Locale) -> Message:
    t = translator(locale)
    season = board.season
    title = t("Season {name}", name=season.name)
    if board.channel_board:
        title += " · " + t("this channel")
    elif season.scope is SeasonScope.WORKSPACE:
        title += " · " + t("workspace")
    if not board.rows:
        body = t("No scores in this season yet: answer a question to get on the board.")
    else:
        lines = [t("*By points*")] + [board_line(r, t) for r in board.rows]
        if board.caller is not None and board.caller not in board.rows:
            lines += ["…", board_line(board.caller, t)]
        lines.append(t("*By accuracy* (at least {count} answers)", count=MIN_ACCURACY_ANSWERS))
        if board.accurate:
            lines += [_accuracy_line(i + 1, r, t) for i, r in enumerate(board.accurate)]
        else:
            lines.append(t("Nobody has {count} answers yet.", count=MIN_ACCURACY_ANSWERS))
        body = "\n".join(lines)
    ended = season.state is SeasonState.ENDED
    footer = " · ".join(
        [
            t.n("{count} player", "{count} players", board.players),
            season_dates(season, zone),
            *([t("ended")] if ended else []),
        ]
    )
    return Message(title=title, body=body, footer=footer)


def podium_message(podium: Podium, locale: Locale) -> Message:
    t = translator(locale)
    season = podium.season
    lines: list[str] = []
    if not podium.top:
        lines.append(t("Nobody scored in this season."))
    lines += [board_line(r, t) for r in podium.top]
    if podium.streak is not None:
        who, streak = podium.streak
        lines.append(t("Longest streak: {name} ({count} in a row)", name=who.display, count=streak))
    if podium.improved is not None:
        imp = podium.improved
        lines.append(
            t(
                "Most improved: {name} ({before}% → {after}% correct)",
                name=imp.user.display,
                before=round(100 * imp.before),
                after=round(100 * imp.after),
            )
        )
    for best in podium.topics:
        lines.append(
            t(
                "Best in {topic}: {name} ({correct}/{answered} correct)",
                topic=best.topic,
                name=best.user.display,
                correct=best.correct,
                answered=best.answered,
            )
        )
    return Message(
        title=t("🏆 Season {name} is over", name=season.name),
        body="\n".join(lines),
        footer=t("Past seasons: /quiz season list"),
    )


# -- the end of a season, on every replica -----------------------------------------------


class SeasonKeeper(Lifecycle):
    """Ends seasons on time and posts each podium once. The scheduler's pass calls `run`
    (catch-up at start, then every wake-up, one of them planned at the nearest end:
    `next_event`); correctness comes from storage: the end is a conditional update, the
    podium a lease and a mark, as reveals are."""

    def __init__(
        self,
        service: QuizService,
        seasons: SeasonRepository,
        clock: Clock,
        *,
        lease: timedelta = PODIUM_LEASE,
        replan: Callable[[], object] = lambda: None,
    ) -> None:
        self.service = service
        self.seasons = seasons
        self.clock = clock
        self.lease = lease
        # Told when a season's end moves here (started, ended early): the scheduler then
        # plans its wake-up at the nearest end (`Registry.replan`).
        self.replan = replan

    async def run(self, now: datetime) -> list[Season]:
        """End what is due and post the podiums this pass won; the seasons posted."""
        await self.seasons.end_due(now)
        claimed = await self.seasons.claim_podiums(now, self.lease, set(self.service.chats))
        posted = await asyncio.gather(*(self._post(s) for s in claimed))
        return [s for s, ok in zip(claimed, posted, strict=True) if ok]

    async def tick(self, now: datetime | None = None) -> list[Season]:
        """The scheduler's pass (a feature's ticker): `run` at `now`, else the clock's."""
        return await self.run(self.clock.now() if now is None else now)

    async def next_event(self, now: datetime) -> datetime | None:
        return await self.seasons.next_deadline(now, self.lease)

    async def _post(self, season: Season) -> bool:
        try:
            podium = await self.seasons.podium(season)
            locale = await self.service.locale_for(season.channel)
            ref = await self.service.chat(season.channel).post_message(
                season.channel, podium_message(podium, locale)
            )
        except Exception:
            log.exception(
                "season %s: the podium was not posted; retried after the lease", season.id
            )
            return False
        return await self.seasons.mark_podium(season.id, ref.message, self.clock.now())


# -- the command ----------------------------------------------------------------------------


def feature(parts: Parts) -> Feature:

    seasons = parts.store.seasons
    keeper = SeasonKeeper(parts.service, seasons, parts.clock, replan=parts.registry.replan)
    return season_feature(keeper)


def season_feature(keeper: SeasonKeeper) -> Feature:
    seasons = keeper.seasons

    async def season(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        action = args[0].lower() if args else ""
        if action in ("start", "end"):
            status = await inv.admin()
            if status is not AdminStatus.YES:
                body = admin_refusal(inv.channel.platform, f"season {action}", status, t)
                return [Reply(Message(body=body))]
        zone = (await service.store.settings.get(inv.channel)).timezone
        now = keeper.clock.now()
        if action == "start":
            return await _start(inv, args[1:], now, zone, t)
        if action == "end":
            return await _end(inv, now, t)
        if action == "list":
            return await _list(inv, zone, t)
        if action == "board":
            return await _board(inv, args[1:], now, zone)
        if action:
            raise UserFacingError(
                t(
                    "Unknown season command {value}: use start, end, board or list. "
                    "Example: /quiz season board",
                    value=quoted(args[0]),
                )
            )
        return await _current(inv, now, zone, t)

    async def _start(
        inv: Invocation, words: list[str], now: datetime, zone: str, t: Translator
    ) -> list[Reply]:
        request = parse_start(words, now, zone, t)
        try:
            made = await seasons.start(
                inv.channel,
                request.scope,
                request.name,
                request.starts_at,
                request.ends_at,
                inv.user.user,
                now,
            )
        except SeasonOverlap as exc:
            raise UserFacingError(
                t(
                    "Season {name} ({dates}) already covers this channel then: end it first "
                    "(/quiz season end) or pick other dates. Nothing was stored.",
                    name=exc.season.name,
                    dates=season_dates(exc.season, zone),
                )
            ) from None
        except SeasonNameTaken:
            raise UserFacingError(
                t(
                    "A season called {name} already exists here: pick another name. "
                    "Nothing was stored.",
                    name=quoted(request.name),
                )
            ) from None
        keeper.replan()
        where = (
            t("every channel of this workspace")
            if made.scope is SeasonScope.WORKSPACE
            else t("this channel")
        )
        body = t(
            "Season {name} runs {dates} over {where}. Boards: /quiz season board",
            name=made.name,
            dates=season_dates(made, zone),
            where=where,
        )
        return [Reply(Message(body=body), private=False)]

    async def _end(inv: Invocation, now: datetime, t: Translator) -> list[Reply]:
        current = await seasons.current(inv.channel, now)
        if current is None:
            raise UserFacingError(t("No season is running in this channel: nothing to end."))
        await seasons.end_now(current.id, now)
        await keeper.run(now)
        keeper.replan()
        return [Reply(Message(body=t("Season {name} is over.", name=current.name)))]

    async def _list(inv: Invocation, zone: str, t: Translator) -> list[Reply]:
        found = await seasons.listed(inv.channel)
        if not found:
            return [
                Reply(
                    Message(
                        body=t("No seasons yet. An admin starts one: /quiz season start Spring 8")
                    )
                )
            ]
        lines = []
        for s in found:
            state = t("running") if s.state is SeasonState.ACTIVE else t("ended")
            lines.append(f"*{s.name}* · {season_dates(s, zone)} · {state}")
        lines.append(t("A season's board: /quiz season board <name>"))
        return [Reply(Message(title=t("Seasons"), body="\n".join(lines)))]

    async def _board(inv: Invocation, words: list[str], now: datetime, zone: str) -> list[Reply]:
        t = translator(inv.locale)
        whole = any(w.lower() in ("workspace", "server") for w in words)
        names = [w for w in words if w.lower() not in ("workspace", "server")]
        if names:
            chosen = await seasons.named(inv.channel, " ".join(names))
            if chosen is None:
                raise UserFacingError(
                    t(
                        "No season called {name} here: /quiz season list shows them.",
                        name=quoted(" ".join(names)),
                    )
                )
        else:
            chosen = await seasons.current(inv.channel, now)
            if chosen is None:
                listed = await seasons.listed(inv.channel, 1)
                if not listed:
                    raise UserFacingError(t("No season is running in this channel."))
                chosen = listed[0]
        channel = None
        if chosen.scope is SeasonScope.WORKSPACE and not whole:
            channel = inv.channel
        board = await seasons.board(chosen, inv.user, channel)
        return [Reply(board_message(board, zone, inv.locale), private=False)]

    async def _current(inv: Invocation, now: datetime, zone: str, t: Translator) -> list[Reply]:
        current = await seasons.current(inv.channel, now)
        if current is None:
            nxt = await seasons.upcoming(inv.channel, now)
            if nxt is not None:
                body = t(
                    "Season {name} starts on {day}.", name=nxt.name, day=_day(nxt.starts_at, zone)
                )
            else:
                body = t(
                    "No season is running in this channel. An admin starts one: "
                    "/quiz season start Spring 8"
                )
            return [Reply(Message(body=body))]
        board = await seasons.board(current, inv.user, None, limit=1)
        left = max(0, (current.ends_at - now).days)
        lines = [
            t("{dates} · {count} days left", dates=season_dates(current, zone), count=left),
        ]
        if board.rows:
            lead = board.rows[0]
            lines.append(
                t("Leader: {name} ({points} pts)", name=lead.user.display, points=lead.points)
            )
        else:
            lines.append(t("Nobody has scored yet."))
        if board.caller is not None:
            lines.append(
                t(
                    "You: rank {rank} of {players}, {points} pts",
                    rank=board.caller.rank,
                    players=board.players,
                    points=board.caller.points,
                )
            )
        else:
            lines.append(t("You have not answered in this season yet."))
        return [Reply(Message(title=t("Season {name}", name=current.name), body="\n".join(lines)))]

    async def note(channel: ChannelRef, user: UserRef, locale: Locale) -> str | None:
        """Under boards and stats: the running season and the member's place in it."""
        return await place(await seasons.current(channel, keeper.clock.now()), user, locale)

    async def notes(asks: Sequence[tuple[ChannelRef, UserRef, Locale]]) -> list[str | None]:
        """`note` of many members: each channel's running season read once (a member's
        place in a running season: their own read)."""
        now = keeper.clock.now()
        running: dict[ChannelRef, Season | None] = {}
        out = []
        for channel, user, locale in asks:
            if channel not in running:
                running[channel] = await seasons.current(channel, now)
            out.append(await place(running[channel], user, locale))
        return out

    async def place(current: Season | None, user: UserRef, locale: Locale) -> str | None:
        if current is None:
            return None
        t = translator(locale)
        board = await seasons.board(current, user, None, limit=1)
        if board.caller is None:
            return t("Season {name} is running: /quiz season board", name=current.name)
        return t(
            "Season {name}: you are {rank} of {players} (/quiz season board)",
            name=current.name,
            rank=board.caller.rank,
            players=board.players,
        )

    async def report_note(channel: ChannelRef, locale: Locale) -> str | None:
        """Under the admin report: the running season, its players and leader."""
        current = await seasons.current(channel, keeper.clock.now())
        if current is None:
            return None
        t = translator(locale)
        zone = (await keeper.service.store.settings.get(channel)).timezone
        board = await seasons.board(current, None, None, limit=1)
        if not board.rows:
            return t(
                "Season {name} ({dates}): no points yet.",
                name=current.name,
                dates=season_dates(current, zone),
            )
        leader = board.rows[0]
        return t(
            "Season {name} ({dates}): {players} players; leader {leader} with {points} pts.",
            name=current.name,
            dates=season_dates(current, zone),
            players=board.players,
            leader=leader.user.display or leader.user.user,
            points=leader.points,
        )

    return Feature(
        "seasons",
        board_notes=[BulkLine(note, notes)],
        report_notes=[report_note],
        commands=[
            Command(
                "season",
                season,
                USAGE,
                N_("seasons: the current one, its boards, past seasons (admins start and end)"),
                Admin.NO,
            )
        ],
        services=[keeper],
        tickers=[keeper],
    )


__all__ = [
    "MIN_ACCURACY_ANSWERS",
    "MIN_IMPROVED_ANSWERS",
    "Improved",
    "Podium",
    "Season",
    "SeasonBoard",
    "SeasonKeeper",
    "SeasonNameTaken",
    "SeasonOverlap",
    "SeasonRepository",
    "SeasonScope",
    "SeasonState",
    "StartRequest",
    "TopicBest",
    "board_message",
    "feature",
    "parse_start",
    "podium_message",
    "season_dates",
    "season_feature",
]
