"""A member's card — `/quiz me` privately on every platform, and Slack's App Home.

The card is one member's standing in one workspace, read from what the other features keep:
their rank and points on the workspace's all-time board (the boards' aggregates), their
streak and strengths by topic (`player_stats` of each channel they play in, summed), the
practice cards due (with a "Practice now" button: `/quiz practice`'s use case), the next
scheduled question in their channels, their language, the features' own lines (season
place, team, live points: `board_notes` and `stats`), and for admins each channel's
settings (schedules, packs, demo policy, generated share) with the commands that change
them — the same use cases as typed.

`Homes` (a service) builds cards and tells the platforms that keep a home page of their
own (Slack's App Home: `adapters/slack/home.py`) when a member's figures may have changed:
after each answer of theirs, at most once per `interval` per member (the clock is
injected).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar, cast

from bot.admin import NOBODY, AdminCheck, AdminStatus
from bot.commands import Command, Invocation, Reply
from bot.domain import (
    AnswerOutcome,
    AnswerStatus,
    BoardScope,
    BoardWindow,
    ChannelRef,
    ChannelSettings,
    Leaderboard,
    Locale,
    PlayerStats,
    Reveal,
    Schedule,
    TopicStats,
    UserRef,
)
from bot.errors import UserFacingError
from bot.features import ButtonKind, Feature, Parts, Registry
from bot.i18n import N_, translator
from bot.interactions import Click
from bot.lifecycle import Lifecycle
from bot.messages import Button, ButtonStyle, Message
from bot.practice import Practice, practice_message
from bot.quiz import BulkLine, QuizService
from bot.scheduling.commands import fire_time
from bot.scheduling.spec import describe, recurrence_of
from bot.stats import percent
from bot.tasks import TaskSupervisor
from bot.team import Workspace

log = logging.getLogger(__name__)

PRACTICE_NOW = "practice-now"  # quiz:practice-now:0:<channel id>: a practice question there
REFRESH_INTERVAL = timedelta(seconds=60)  # a member's home is republished at most this often
# A home page's card is kept this long unless the member answers or a question of their
# workspace is revealed (schedules, settings and practice due times show within it).
CARD_TTL = timedelta(seconds=60)
MAX_CHANNELS = 50  # channels of a workspace a card reads (a member plays in a few)
ADMIN_CHANNELS = 5  # channels an admin's settings section shows
TOPICS_SHOWN = 8
BATCH = 100  # home cards read together at most
GATHER = 0.02  # seconds a workspace's first card waits for others opened meanwhile, at most
# What a workspace's home cards share (its channels, their settings and schedules) is read
# once this long at most (and again after a reveal there), for a burst of opens.
SHARED_TTL = timedelta(seconds=10)
_SHARED_WORKSPACES = 1_000  # workspaces whose shared reads are kept (then all dropped)
_REMEMBERED = 100_000  # members whose last refresh is kept (the oldest forgotten first)
LANGUAGES = {Locale.EN: N_("English"), Locale.EL: N_("Greek")}

Publisher = Callable[[UserRef], Awaitable[None]]
Shared = TypeVar("Shared")


@dataclass(frozen=True, slots=True)
class NextQuestion:
    at: datetime
    channel: ChannelRef
    zone: str


@dataclass(frozen=True, slots=True)
class Ask:
    """A card asked for: whose, in which language (None: their main channel's), whether
    they are an admin, and the channel a command came from."""

    member: UserRef
    locale: Locale | None = None
    admin: AdminCheck = NOBODY
    here: ChannelRef | None = None


@dataclass(frozen=True, slots=True)
class ChannelAdmin:
    """One channel's settings, as an admin's section of the card shows them."""

    settings: ChannelSettings
    schedules: tuple[Schedule, ...]


@dataclass(frozen=True, slots=True)
class Card:
    """A member's figures in a workspace (`points` … `answered`: the all-time workspace
    board's; streaks and topics: their channels' stats, summed)."""

    member: UserRef
    locale: Locale
    channel: ChannelRef | None  # where the card reads boards (the member's main channel)
    rank: int | None
    players: int
    points: int
    answered: int
    correct: int
    current_streak: int
    best_streak: int
    topics: tuple[TopicStats, ...]  # strongest first
    due: int  # practice cards due now
    cards: int  # practice cards in all
    next_question: NextQuestion | None
    notes: tuple[str, ...]  # the features' lines: season place, team, live points
    admin: tuple[ChannelAdmin, ...] | None = None  # None: not an admin

    @property
    def accuracy(self) -> float:
        return self.correct / self.answered if self.answered else 0.0


def merge_topics(stats: Sequence[PlayerStats]) -> tuple[TopicStats, ...]:
    """Each topic's answers over the channels, strongest first (more answers break ties)."""
    totals: dict[str, tuple[int, int]] = {}
    for s in stats:
        for topic in s.topics:
            answered, correct = totals.get(topic.topic, (0, 0))
            totals[topic.topic] = (answered + topic.answered, correct + topic.correct)
    merged = [TopicStats(name, a, c) for name, (a, c) in totals.items() if a]
    return tuple(sorted(merged, key=lambda x: (-x.accuracy, -x.answered, x.topic)))


class Homes(Lifecycle):
    """Members' cards, and the home pages that show them (`watch`)."""

    def __init__(
        self,
        parts: Parts,
        *,
        interval: timedelta = REFRESH_INTERVAL,
        card_ttl: timedelta = CARD_TTL,
    ) -> None:
        self.service: QuizService = parts.service
        self.store = parts.store
        self.clock = parts.clock
        self.registry: Registry = parts.registry
        self.interval = interval
        self.practice = Practice(parts.service, parts.store.practice)
        self._publishers: dict[str, Publisher] = {}
        self._last: OrderedDict[str, datetime] = OrderedDict()
        # Members whose home page is open somewhere (they opened it on this replica): only
        # theirs is refreshed after an answer, never a burst's thousand strangers'.
        self._opened: OrderedDict[str, None] = OrderedDict()
        self.card_ttl = card_ttl
        self.batch = BATCH
        self.gather = GATHER
        # Home pages' cards: member key -> (card, when read), and each workspace's members.
        self._cards: OrderedDict[str, tuple[Card, datetime]] = OrderedDict()
        self._by_workspace: dict[str, set[str]] = {}
        self._generation = 0  # bumped by every forget: a card read across one is not kept
        # Home cards asked for while others are read, per workspace; its reader, if any.
        self._waiting: dict[str, list[tuple[Ask, asyncio.Future[Card]]]] = {}
        self._readers: set[str] = set()
        self._full: dict[str, asyncio.Event] = {}  # per reader: BATCH cards wait
        # Per workspace: what its home cards share, by what it is -> (when read, value).
        self._shared: dict[str, dict[tuple[str, str], tuple[datetime, Any]]] = {}
        self.tasks = TaskSupervisor("home")

    async def shutdown(self) -> None:
        await self.tasks.shutdown(5.0)

    # -- the card ----------------------------------------------------------------------

    async def channels(self, member: UserRef, here: ChannelRef | None = None) -> list[ChannelRef]:
        """The workspace's channels this process knows (and `here`)."""
        return _with_here(await self._known(Workspace.of(member)), here)

    async def _known(self, workspace: Workspace) -> list[ChannelRef]:
        return (await self.store.dashboard.channels(workspace))[:MAX_CHANNELS]

    async def card(
        self,
        member: UserRef,
        locale: Locale | None = None,
        admin: AdminCheck = NOBODY,
        here: ChannelRef | None = None,
    ) -> Card:
        """`member`'s card (`here`: the channel a command came from; `locale` None: the
        main channel's)."""
        (card,) = await self.cards([Ask(member, locale, admin, here)])
        if isinstance(card, BaseException):
            raise card
        return card

    async def cards(self, asks: Sequence[Ask], shared: bool = False) -> list[Card | BaseException]:
        """The cards of many members of one workspace, in order (a member's failed admin
        check: its exception in their place). Each part is read once for them all: the
        workspace's channels, the members' stats, the board, the features' lines, the
        practice cards, each channel's schedules and settings (`shared`: those the
        workspace's cards share, kept `SHARED_TTL` — home cards)."""
        if not asks:
            return []
        members = [a.member for a in asks]
        workspace = Workspace.of(members[0])
        known = await self._share(
            shared, members[0], "channels", "", lambda: self._known(workspace)
        )
        channels = [_with_here(known, a.here) for a in asks]
        # The admin checks (a platform's call each) run while the figures are read.
        checks: dict[int, asyncio.Future[AdminStatus]] = {
            i: asyncio.ensure_future(a.admin()) for i, a in enumerate(asks) if channels[i]
        }
        try:
            return await self._figures(asks, channels, checks, shared)
        finally:
            for check in checks.values():
                if check.done() and not check.cancelled():
                    check.exception()  # retrieved: a failure of its own is its card's
                check.cancel()

    async def _figures(
        self,
        asks: Sequence[Ask],
        channels: list[list[ChannelRef]],
        checks: dict[int, asyncio.Future[AdminStatus]],
        shared: bool,
    ) -> list[Card | BaseException]:
        members = [a.member for a in asks]
        every = list(dict.fromkeys(c for chs in channels for c in chs))
        stats = await self.store.scores.players_stats(every, members)
        played = [
            [(c, found) for c in chs if (found := stats.get((c, a.member.key))) is not None]
            for a, chs in zip(asks, channels, strict=True)
        ]
        mains = [
            _main_channel(a.here, p, chs) for a, p, chs in zip(asks, played, channels, strict=True)
        ]
        locales: dict[ChannelRef, Locale] = {}
        for a, main in zip(asks, mains, strict=True):
            if a.locale is None and main is not None and main not in locales:
                locales[main] = await self._share(
                    shared,
                    main,
                    "locale",
                    main.key,
                    partial(self.service.locale_for, main),
                )
        shown = [
            a.locale or (locales[main] if main else self.service.default_locale)
            for a, main in zip(asks, mains, strict=True)
        ]
        boards: dict[str, Leaderboard] = {}
        for main in dict.fromkeys(m for m in mains if m is not None):
            callers = [a.member for a, m in zip(asks, mains, strict=True) if m == main]
            boards.update(
                await self.service.leaderboards(
                    main, callers, BoardWindow.ALL, BoardScope.WORKSPACE
                )
            )
        lines = [
            (i, main, a.member, shown[i])
            for i, (a, main) in enumerate(zip(asks, mains, strict=True))
            if main is not None
        ]
        notes: list[list[str]] = [[] for _ in asks]
        await self._lines(self.registry.board_notes, lines, notes, "a board note failed")
        await self._lines(
            self.registry.stats, lines, notes, "a stats line failed on a member's card"
        )
        now = self.clock.now()
        practice = await self.store.practice.cards_of(members)
        schedules: dict[ChannelRef, list[Schedule]] = {}
        settings: dict[ChannelRef, ChannelSettings] = {}
        nexts: dict[tuple[ChannelRef, ...], NextQuestion | None] = {}  # members share them
        out: list[Card | BaseException] = []
        for i, a in enumerate(asks):
            board = boards.get(a.member.key) if mains[i] is not None else None
            players = points = answered = correct = 0
            rank_of: int | None = None
            if board is not None:
                players = board.players
                if board.caller is not None:
                    row = board.caller
                    rank_of, points, answered = row.rank, row.points, row.answered
                    correct = row.correct
            mine = tuple(c for c, _ in played[i]) or ((a.here,) if a.here else ())
            if mine not in nexts:
                nexts[mine] = await self._next_question(mine, now, schedules, shared)
            cards = practice.get(a.member.key, [])
            try:
                admin = await self._admin(channels[i], checks.get(i), schedules, settings, shared)
            except Exception as exc:
                out.append(exc)
                continue
            out.append(
                Card(
                    member=a.member,
                    locale=shown[i],
                    channel=mains[i],
                    rank=rank_of,
                    players=players,
                    points=points,
                    answered=answered,
                    correct=correct,
                    current_streak=max((s.current_streak for _, s in played[i]), default=0),
                    best_streak=max((s.best_streak for _, s in played[i]), default=0),
                    topics=merge_topics([s for _, s in played[i]]),
                    due=sum(1 for c in cards if c.due_at <= now),
                    cards=len(cards),
                    next_question=nexts[mine],
                    notes=tuple(notes[i]),
                    admin=admin,
                )
            )
        return out

    async def _lines(
        self,
        hooks: Sequence[Callable[[ChannelRef, UserRef, Locale], Awaitable[str | None]]],
        asks: Sequence[tuple[int, ChannelRef, UserRef, Locale]],
        notes: list[list[str]],
        failed: str,
    ) -> None:
        """Each hook's lines, in the hooks' order, under each asking member's `notes`."""
        if not asks:
            return
        for hook in hooks:
            if isinstance(hook, BulkLine):
                try:
                    got = await hook.many([(c, u, loc) for _, c, u, loc in asks])
                except Exception:
                    log.exception(failed)
                    continue
                for (i, *_), text in zip(asks, got, strict=True):
                    if text is not None:
                        notes[i].append(text)
                continue
            for i, channel, user, locale in asks:
                try:
                    if (text := await hook(channel, user, locale)) is not None:
                        notes[i].append(text)
                except Exception:
                    log.exception(failed)

    async def _schedules(
        self, channel: ChannelRef, kept: dict[ChannelRef, list[Schedule]], shared: bool
    ) -> list[Schedule]:
        if channel not in kept:
            kept[channel] = await self._share(
                shared,
                channel,
                "schedules",
                channel.key,
                lambda: self.store.schedules.in_channel(channel),
            )
        return kept[channel]

    async def _share(
        self,
        shared: bool,
        ref: ChannelRef | UserRef,
        what: str,
        key: str,
        read: Callable[[], Awaitable[Shared]],
    ) -> Shared:
        """`read()`, or (home cards) what it gave within `SHARED_TTL` in `ref`'s workspace."""
        if not shared:
            return await read()
        now = self.clock.now()
        kept = self._shared.setdefault(_workspace_key(ref), {})
        found = kept.get((what, key))
        if found is not None and now - found[0] < SHARED_TTL:
            return cast(Shared, found[1])
        value = await read()
        if len(self._shared) > _SHARED_WORKSPACES:
            self._shared.clear()
        self._shared.setdefault(_workspace_key(ref), {})[(what, key)] = (now, value)
        return value

    async def _next_question(
        self,
        channels: Sequence[ChannelRef],
        now: datetime,
        kept: dict[ChannelRef, list[Schedule]],
        shared: bool,
    ) -> NextQuestion | None:
        best: NextQuestion | None = None
        for channel in channels:
            for schedule in await self._schedules(channel, kept, shared):
                if not schedule.enabled:
                    continue
                try:
                    at = recurrence_of(schedule).next_after(now)
                except Exception:  # an unreadable schedule: its own command reports it
                    continue
                if at is not None and (best is None or at < best.at):
                    best = NextQuestion(at, channel, schedule.timezone)
        return best

    async def _admin(
        self,
        channels: Sequence[ChannelRef],
        check: asyncio.Future[AdminStatus] | None,
        kept: dict[ChannelRef, list[Schedule]],
        settings: dict[ChannelRef, ChannelSettings],
        shared: bool,
    ) -> tuple[ChannelAdmin, ...] | None:
        if not channels or check is None or await check is not AdminStatus.YES:
            return None
        out = []
        for channel in channels[:ADMIN_CHANNELS]:
            if channel not in settings:
                settings[channel] = await self._share(
                    shared,
                    channel,
                    "settings",
                    channel.key,
                    partial(self.store.settings.get, channel),
                )
            schedules = [s for s in await self._schedules(channel, kept, shared) if s.enabled]
            out.append(ChannelAdmin(settings[channel], tuple(schedules)))
        return tuple(out)

    async def home_card(self, member: UserRef, admin: AdminCheck = NOBODY) -> Card:
        """The card a home page shows: kept `card_ttl` unless the member answers or a
        question of their workspace is revealed. The cards asked for while others are
        read are read together (`cards`): a burst of opens reads each part once."""
        now = self.clock.now()
        kept = self._cards.get(member.key)
        if kept is not None and now - kept[1] < self.card_ttl:
            return kept[0]
        generation = self._generation
        card = await self._together(member, admin)
        if generation != self._generation:
            return card  # figures changed while it was read: shown, not kept
        self._cards[member.key] = (card, now)
        self._cards.move_to_end(member.key)
        self._by_workspace.setdefault(_workspace_key(member), set()).add(member.key)
        while len(self._cards) > _REMEMBERED:
            old, (stale, _) = self._cards.popitem(last=False)
            self._by_workspace.get(_workspace_key(stale.member), set()).discard(old)
        return card

    async def _together(self, member: UserRef, admin: AdminCheck) -> Card:
        """`member`'s card, read with the others of their workspace asked for meanwhile:
        one reader per workspace takes whoever waits, up to `batch` at a time, the first
        time after `gather` seconds at most."""
        workspace = _workspace_key(member)
        waiting: asyncio.Future[Card] = asyncio.get_running_loop().create_future()
        queue = self._waiting.setdefault(workspace, [])
        queue.append((Ask(member, admin=admin), waiting))
        if workspace not in self._readers:
            self._readers.add(workspace)
            self._full[workspace] = asyncio.Event()
            self.tasks.spawn(self._read(workspace), name="home-cards")
        elif len(queue) >= self.batch:
            self._full[workspace].set()
        return await waiting

    async def _read(self, workspace: str) -> None:
        try:
            # A burst of opens (a channel's announcement): its first card waits for the
            # others to arrive (`gather` seconds at most, or until a batch is full) rather
            # than being read alone, and the rest in a second round.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full[workspace].wait(), self.gather)
            while queue := self._waiting.pop(workspace, None):
                batch, rest = queue[: self.batch], queue[self.batch :]
                if rest:
                    self._waiting[workspace] = rest
                try:
                    cards = await self.cards([ask for ask, _ in batch], shared=True)
                except Exception as exc:
                    cards = [exc] * len(batch)
                for (_, waiting), card in zip(batch, cards, strict=True):
                    if waiting.done():
                        continue
                    if isinstance(card, BaseException):
                        waiting.set_exception(card)
                    else:
                        waiting.set_result(card)
        finally:
            self._readers.discard(workspace)
            self._full.pop(workspace, None)
            for _, waiting in self._waiting.pop(workspace, []):
                waiting.cancel()

    def forget(self, member: UserRef) -> None:
        """Drop `member`'s kept card (their figures changed)."""
        self._generation += 1
        self._cards.pop(member.key, None)

    async def revealed(self, reveal: Reveal, thread_locale: Locale) -> None:
        """A `RevealListener`: the workspace's boards moved, its kept cards are stale."""
        self._generation += 1
        self._shared.pop(_workspace_key(reveal.post.channel), None)
        for key in self._by_workspace.pop(_workspace_key(reveal.post.channel), set()):
            self._cards.pop(key, None)

    # -- `/quiz me` and "Practice now" -------------------------------------------------

    async def command(self, service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        card = await self.card(inv.user, inv.locale, inv.admin, here=inv.channel)
        return [Reply(card_message(card), private=True)]

    async def practise(self, click: Click, locale: Locale) -> Message:
        """The "Practice now" button: the member's next practice question, privately, in
        the channel the button names (the App Home has no channel of its own)."""
        channel = click.channel
        if click.value and click.value != channel.channel:
            named = ChannelRef(click.user.platform, click.user.workspace, click.value)
            if named not in await self.channels(click.user):
                raise UserFacingError(translator(locale)(UNKNOWN_CHANNEL))
            channel = named
        post, choice = await self.practice.next_question(channel, click.user, locale)
        return practice_message(post, choice, locale)

    # -- home pages --------------------------------------------------------------------

    def watch(self, platform: str, publish: Publisher) -> None:
        """`publish(member)` is called after their answers (a platform's home page)."""
        self._publishers[platform] = publish

    def unwatch(self, platform: str) -> None:
        self._publishers.pop(platform, None)

    def opened(self, user: UserRef) -> None:
        """`user` opened their home page: their answers refresh it from now on."""
        self._opened[user.key] = None
        self._opened.move_to_end(user.key)
        while len(self._opened) > _REMEMBERED:
            self._opened.popitem(last=False)

    def answered(self, user: UserRef, outcome: AnswerOutcome) -> None:
        """An `AnswerListener`: a recorded answer refreshes the member's home page."""
        if outcome.status is AnswerStatus.RECORDED:
            self.forget(user)
            self.refresh(user)

    def refresh(self, user: UserRef) -> bool:
        """Republish `user`'s home page unless it was republished within the interval;
        True when it is."""
        publish = self._publishers.get(str(user.platform))
        if publish is None or user.key not in self._opened:
            return False
        now = self.clock.now()
        last = self._last.get(user.key)
        if last is not None and now - last < self.interval:
            return False
        self._last[user.key] = now
        self._last.move_to_end(user.key)
        while len(self._last) > _REMEMBERED:
            self._last.popitem(last=False)
        self.tasks.spawn(self._publish(publish, user), name="home-refresh")
        return True

    async def _publish(self, publish: Publisher, user: UserRef) -> None:
        try:
            await publish(user)
        except Exception as exc:
            self.service.problems.problem(
                "home refresh", "a member's home page could not be refreshed", exc=exc
            )

    async def idle(self) -> None:
        """Wait for the refreshes under way (tests)."""
        await self.tasks.drain()


def _with_here(known: Sequence[ChannelRef], here: ChannelRef | None) -> list[ChannelRef]:
    channels = list(known)
    if here is not None and here not in channels:
        channels.insert(0, here)
    return channels


def _workspace_key(ref: ChannelRef | UserRef) -> str:
    return f"{ref.platform}:{ref.workspace}"


UNKNOWN_CHANNEL = N_("That channel is not one of this workspace's quiz channels.")


def _main_channel(
    here: ChannelRef | None,
    played: Sequence[tuple[ChannelRef, PlayerStats]],
    channels: Sequence[ChannelRef],
) -> ChannelRef | None:
    if here is not None and any(c == here for c, _ in played):
        return here
    if played:
        return max(played, key=lambda p: p[1].answered)[0]  # a tie: the first by id
    return here or (channels[0] if channels else None)


def card_message(card: Card) -> Message:
    """The card as a platform-neutral message (a private reply, or a home page)."""
    t = translator(card.locale)
    lines: list[str] = []
    if card.rank is not None:
        lines.append(
            t(
                "Rank {rank} of {players} in this workspace · {points} points",
                rank=card.rank,
                players=card.players,
                points=card.points,
            )
        )
        lines.append(
            t(
                "Answered {answered}, correct {correct} ({accuracy}%)",
                answered=card.answered,
                correct=card.correct,
                accuracy=percent(card.accuracy),
            )
        )
    else:
        lines.append(t("No scored answers yet: answer a question in a quiz channel."))
    lines.append(
        t("Streak: {current} now, best {best}", current=card.current_streak, best=card.best_streak)
    )
    if card.topics:
        lines += ["", t("*Strengths by topic*")]
        for topic in card.topics[:TOPICS_SHOWN]:
            lines.append(
                f"- {topic.topic}: {topic.correct}/{topic.answered} ({percent(topic.accuracy)}%)"
            )
    lines.append("")
    if card.due:
        lines.append(
            t.n(
                "Practice: {count} question due",
                "Practice: {count} questions due",
                card.due,
                count=card.due,
            )
        )
    else:
        lines.append(t("Practice: nothing is due; new questions are waiting."))
    if card.next_question is not None:
        nq = card.next_question
        lines.append(
            t(
                "Next scheduled question: {when}",
                when=fire_time(nq.at, nq.zone, t),
            )
        )
    else:
        lines.append(t("No scheduled question in your channels."))
    lines.append(
        t(
            "Language: {language} (a channel's: /quiz lang en|el)",
            language=t(LANGUAGES.get(card.locale, LANGUAGES[Locale.EN])),
        )
    )
    lines += list(card.notes)
    if card.admin:
        lines += ["", t("*Settings (admins)*")]
        for entry in card.admin:
            lines += _admin_lines(entry, t)
        lines.append(
            t(
                "Change them with /quiz schedule set|off, /quiz packs, /quiz demos "
                "auto|button|off and /quiz generated."
            )
        )
    buttons: tuple[Button, ...] = ()
    if card.channel is not None:
        buttons = (
            Button(t("Practice now"), PRACTICE_NOW, 0, card.channel.channel, ButtonStyle.PRIMARY),
        )
    return Message(
        title=t("Your quiz card"),
        body="\n".join(lines),
        buttons=buttons,
        footer=t("Only you see this."),
    )


def _admin_lines(entry: ChannelAdmin, t: Callable[..., str]) -> list[str]:
    settings = entry.settings
    packs = [
        name
        for name, on in ((t("built-in"), settings.builtin_pack), (t("team"), settings.team_pack))
        if on
    ]
    lines = [
        t(
            "Channel {channel}: packs {packs} · demos {demos} · generated {share}%",
            channel=settings.channel.channel,
            packs=", ".join(packs) or "–",
            demos=str(settings.demo_policy),
            share=settings.generated_share,
        )
    ]
    for schedule in entry.schedules:
        when = describe(schedule.local_time, schedule.weekdays, schedule.cron, schedule.timezone)
        lines.append(f"- #{schedule.id} · {when}")
    if not entry.schedules:
        lines.append("- " + t("no schedule"))
    return lines


def feature(parts: Parts) -> Feature:
    """`/quiz me`, the "Practice now" button, and `Homes` (a service) for home pages."""
    homes = Homes(parts)
    return Feature(
        "home",
        commands=[Command("me", homes.command, "me", N_("your own quiz card, privately"))],
        buttons=[ButtonKind(PRACTICE_NOW, click=homes.practise, about_post=False)],
        services=[homes],
        on_answer=[homes.answered],
        on_reveal=[homes.revealed],
    )


__all__ = [
    "PRACTICE_NOW",
    "REFRESH_INTERVAL",
    "Ask",
    "Card",
    "ChannelAdmin",
    "Homes",
    "NextQuestion",
    "card_message",
    "feature",
    "merge_topics",
]
