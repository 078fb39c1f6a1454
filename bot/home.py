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

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.admin import NOBODY, AdminCheck, AdminStatus
from bot.commands import Command, Invocation, Reply
from bot.domain import (
    AnswerOutcome,
    AnswerStatus,
    BoardScope,
    BoardWindow,
    ChannelRef,
    ChannelSettings,
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
from bot.quiz import QuizService
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
_REMEMBERED = 100_000  # members whose last refresh is kept (the oldest forgotten first)
LANGUAGES = {Locale.EN: N_("English"), Locale.EL: N_("Greek")}

Publisher = Callable[[UserRef], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class NextQuestion:
    at: datetime
    channel: ChannelRef
    zone: str


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
        # Home pages' cards: member key -> (card, when read), and each workspace's members.
        self._cards: OrderedDict[str, tuple[Card, datetime]] = OrderedDict()
        self._by_workspace: dict[str, set[str]] = {}
        self._generation = 0  # bumped by every forget: a card read across one is not kept
        self.tasks = TaskSupervisor("home")

    async def shutdown(self) -> None:
        await self.tasks.shutdown(5.0)

    # -- the card ----------------------------------------------------------------------

    async def channels(self, member: UserRef, here: ChannelRef | None = None) -> list[ChannelRef]:
        """The workspace's channels this process knows (and `here`)."""
        known = await self.store.dashboard.channels(Workspace.of(member))
        known = known[:MAX_CHANNELS]
        if here is not None and here not in known:
            known.insert(0, here)
        return known

    async def card(
        self,
        member: UserRef,
        locale: Locale | None = None,
        admin: AdminCheck = NOBODY,
        here: ChannelRef | None = None,
    ) -> Card:
        """`member`'s card (`here`: the channel a command came from; `locale` None: the
        main channel's)."""
        channels = await self.channels(member, here)
        played: list[tuple[ChannelRef, PlayerStats]] = []
        for channel in channels:
            stats = await self.store.scores.player_stats(channel, member)
            if stats is not None:
                played.append((channel, stats))
        main = _main_channel(here, played, channels)
        if locale is None:
            locale = await self.service.locale_for(main) if main else self.service.default_locale
        players = points = answered = correct = 0
        rank_of: int | None = None
        notes: list[str] = []
        if main is not None:
            board = await self.service.leaderboard(
                main, member, BoardWindow.ALL, BoardScope.WORKSPACE
            )
            players = board.players
            if board.caller is not None:
                row = board.caller
                rank_of, points, answered, correct = row.rank, row.points, row.answered, row.correct
            notes += await self.service.board_notes(main, member, locale)
            for line in self.registry.stats:
                try:
                    if (text := await line(main, member, locale)) is not None:
                        notes.append(text)
                except Exception:
                    log.exception("a stats line failed on a member's card")
        now = self.clock.now()
        cards = await self.store.practice.cards(member)
        mine = [c for c, _ in played] or ([here] if here else [])
        return Card(
            member=member,
            locale=locale,
            channel=main,
            rank=rank_of,
            players=players,
            points=points,
            answered=answered,
            correct=correct,
            current_streak=max((s.current_streak for _, s in played), default=0),
            best_streak=max((s.best_streak for _, s in played), default=0),
            topics=merge_topics([s for _, s in played]),
            due=sum(1 for c in cards if c.due_at <= now),
            cards=len(cards),
            next_question=await self._next_question(mine, now),
            notes=tuple(notes),
            admin=await self._admin(channels, admin),
        )

    async def _next_question(
        self, channels: Sequence[ChannelRef], now: datetime
    ) -> NextQuestion | None:
        best: NextQuestion | None = None
        for channel in channels:
            for schedule in await self.store.schedules.in_channel(channel):
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
        self, channels: Sequence[ChannelRef], admin: AdminCheck
    ) -> tuple[ChannelAdmin, ...] | None:
        if not channels or await admin() is not AdminStatus.YES:
            return None
        out = []
        for channel in channels[:ADMIN_CHANNELS]:
            settings = await self.store.settings.get(channel)
            schedules = [s for s in await self.store.schedules.in_channel(channel) if s.enabled]
            out.append(ChannelAdmin(settings, tuple(schedules)))
        return tuple(out)

    async def home_card(self, member: UserRef, admin: AdminCheck = NOBODY) -> Card:
        """The card a home page shows: kept `card_ttl` unless the member answers or a
        question of their workspace is revealed (a burst of opens reads each once)."""
        now = self.clock.now()
        kept = self._cards.get(member.key)
        if kept is not None and now - kept[1] < self.card_ttl:
            return kept[0]
        generation = self._generation
        card = await self.card(member, admin=admin)
        if generation != self._generation:
            return card  # figures changed while it was read: shown, not kept
        self._cards[member.key] = (card, now)
        self._cards.move_to_end(member.key)
        self._by_workspace.setdefault(_workspace_key(member), set()).add(member.key)
        while len(self._cards) > _REMEMBERED:
            old, (stale, _) = self._cards.popitem(last=False)
            self._by_workspace.get(_workspace_key(stale.member), set()).discard(old)
        return card

    def forget(self, member: UserRef) -> None:
        """Drop `member`'s kept card (their figures changed)."""
        self._generation += 1
        self._cards.pop(member.key, None)

    async def revealed(self, reveal: Reveal, thread_locale: Locale) -> None:
        """A `RevealListener`: the workspace's boards moved, its kept cards are stale."""
        self._generation += 1
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
    "Card",
    "ChannelAdmin",
    "Homes",
    "NextQuestion",
    "card_message",
    "feature",
    "merge_topics",
]
