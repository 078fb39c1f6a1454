"""The quiz use cases: ask, record an answer, close and reveal, boards, channel settings.

`QuizService` holds only its collaborators (store, chats, bank, clock, runner); every use
case is one method that reads like the flow in docs/architecture.md.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from bot.bank import QuestionBank, pick_question
from bot.clock import Clock
from bot.domain import (
    AnswerOutcome,
    AnswerStatus,
    BoardScope,
    BoardWindow,
    ChannelRef,
    ChannelSettings,
    Leaderboard,
    Locale,
    Platform,
    Post,
    PostDraft,
    PostKind,
    PostState,
    Question,
    Reveal,
    UserRef,
)
from bot.errors import NotInChannel, StorageUnavailable, UserFacingError
from bot.i18n import N_, Translator, translator
from bot.logs import ThrottledLog
from bot.messages import Button, Message
from bot.metrics import QuizMetrics
from bot.numeric import matching_choice, numeric_target
from bot.pools import QuestionPools
from bot.ports import Chat, QuestionSource, Store
from bot.quoting import cut
from bot.render import outcome_message, question_message, reveal_message
from bot.scoring import board_period
from bot.tasks import AckFirst, TaskSupervisor
from bot.team import TEAM

log = logging.getLogger(__name__)

GENERATED = "generated"  # `/quiz ask generated`: a generated question of any family
NO_QUESTIONS = N_(
    "This channel has no questions to draw from: its packs are off or empty. "
    "An admin turns one on with /quiz packs builtin on."
)

DEFAULT_WINDOW = timedelta(hours=24)
# How long a reveal attempt owns its post: a reveal not marked done by then is retried by
# the reconciler (longer than the platform clients' request timeouts).
DEFAULT_REVEAL_LEASE = timedelta(minutes=2)
_REMEMBERED_LOCALES = 10_000
EDIT_STRIPES = 64  # locks serializing edits of a post's message, by post id
# Why the bot could not post a question, in each platform's words (the console always can).
NOT_IN_CHANNEL = {
    Platform.SLACK: N_("I cannot post in this channel yet: add me with /invite, then try again."),
    Platform.DISCORD: N_(
        "I cannot post in this channel: I need the View Channel, Send Messages and Send "
        "Messages in Threads permissions here. A server admin can grant them in the "
        "channel's settings (Permissions); then try again."
    ),
}


class RevealListener(Protocol):
    async def __call__(self, reveal: Reveal, thread_locale: Locale) -> None: ...


class RevealButton(Protocol):
    def __call__(self, reveal: Reveal, locale: Locale) -> Button | None: ...


class OutcomeRenderer(Protocol):
    def __call__(self, outcome: AnswerOutcome, locale: Locale) -> Message | None:
        """The private reply to a click, or None to leave it to the default."""
        ...


class AnswerListener(Protocol):
    def __call__(self, user: UserRef, outcome: AnswerOutcome) -> None:
        """Told of every click's outcome, at once (it must not block: schedule work)."""
        ...


class BoardNote(Protocol):
    async def __call__(self, channel: ChannelRef, user: UserRef, locale: Locale) -> str | None:
        """A line under a member's board or stats (their season, their team), or None."""
        ...


# A board note or stats line of many members at once (a burst of home cards): each
# (channel, member, locale), all of one workspace, in; its line or None out, in order.
ManyLines = Callable[
    [Sequence[tuple[ChannelRef, UserRef, Locale]]], Awaitable[Sequence[str | None]]
]


@dataclass(frozen=True, slots=True)
class BulkLine:
    """A board note or stats line (`one`) that can also be read for many members at once
    (`many`: the same lines, in a few statements for them all)."""

    one: Callable[[ChannelRef, UserRef, Locale], Awaitable[str | None]]
    many: ManyLines

    async def __call__(self, channel: ChannelRef, user: UserRef, locale: Locale) -> str | None:
        return await self.one(channel, user, locale)


class QuizHooks(Protocol):
    """What features add to the quiz's own flow (`bot.features.Registry`): listeners run
    after a reveal, buttons under public reveals ("Report a problem"), and the wording of
    the private outcome of their own posts (practice)."""

    @property
    def on_reveal(self) -> Sequence[RevealListener]: ...

    @property
    def reveal_buttons(self) -> Sequence[RevealButton]: ...

    @property
    def outcome_renderers(self) -> Sequence[OutcomeRenderer]: ...

    @property
    def board_notes(self) -> Sequence[BoardNote]: ...

    @property
    def on_answer(self) -> Sequence[AnswerListener]: ...


class NoHooks:
    on_reveal: Sequence[RevealListener] = ()
    reveal_buttons: Sequence[RevealButton] = ()
    outcome_renderers: Sequence[OutcomeRenderer] = ()
    board_notes: Sequence[BoardNote] = ()
    on_answer: Sequence[AnswerListener] = ()


@dataclass(frozen=True, slots=True)
class AnswerReply:
    outcome: AnswerOutcome
    message: Message  # shown privately to the clicking user


class QuizService:
    def __init__(
        self,
        store: Store,
        chats: Mapping[str, Chat],
        bank: QuestionBank,
        clock: Clock,
        *,
        rng: random.Random | None = None,
        count_update_interval: float = 1.0,
        metrics: QuizMetrics | None = None,
        ask_cooldown: timedelta = timedelta(0),  # QUIZBOT_ASK_COOLDOWN, from `build_core`
        default_locale: Locale = Locale.EN,
        generated: QuestionSource | None = None,
        pools: QuestionPools | None = None,
        hooks: QuizHooks | None = None,
    ) -> None:
        self.store = store
        self.chats = chats
        self.bank = bank
        # What picks draw from: the bank, team packs, less retired questions.
        self.pools = pools or QuestionPools(bank)
        self.clock = clock
        self.rng = rng or random.Random()
        self.ask_cooldown = ask_cooldown
        self.default_locale = default_locale
        self.generated = generated  # generated questions (None: the bank only)
        self.hooks: QuizHooks = hooks or NoHooks()  # the features' registry
        self._count_interval = count_update_interval
        self._count_pending: set[int] = set()
        # A post's message is edited under its stripe's lock: a count edit that read the
        # post open cannot land after the close's edit took the buttons away.
        self._edit_locks = tuple(asyncio.Lock() for _ in range(EDIT_STRIPES))
        self.tasks = TaskSupervisor("quiz")
        # Clicks being acknowledged (the adapters enter and leave it): count edits wait
        # for a burst's acknowledgements, as the private outcomes do.
        self.acks = AckFirst()
        self.metrics = metrics or QuizMetrics()  # its own registry unless one is given
        self.problems = ThrottledLog(log)
        # The last locale read per channel: what a failure reply speaks when the database
        # it would read it from is the thing that failed.
        self._locales: dict[str, Locale] = {}

    def chat(self, channel: ChannelRef) -> Chat:
        try:
            return self.chats[channel.platform]
        except KeyError:
            raise UserFacingError(f"no chat adapter is running for {channel.platform}") from None

    async def locale_for(self, channel: ChannelRef, user_locale: Locale | None = None) -> Locale:
        """The user's own language where the platform says it, else the channel's; never
        raises (a cached or default locale when the database does not answer)."""
        if user_locale is not None:
            return user_locale
        try:
            locale = (await self.store.settings.get(channel)).locale
        except Exception:
            return self._locales.get(channel.key, self.default_locale)
        self._remember_locale(channel, locale)
        return locale

    def _remember_locale(self, channel: ChannelRef, locale: Locale) -> None:
        if len(self._locales) >= _REMEMBERED_LOCALES:
            self._locales.clear()
        self._locales[channel.key] = locale

    # -- ask ---------------------------------------------------------------------------

    async def ask(
        self,
        channel: ChannelRef,
        *,
        topic: str | None = None,
        kind: PostKind = PostKind.ASK,
        closes_in: timedelta | None = None,
        schedule_id: int | None = None,
        slot_at: datetime | None = None,
    ) -> Post | None:
        """Pick a question for the channel, claim the post, then send it.

        Returns None when a scheduled slot was already claimed (by another replica). An
        on-demand ask (`PostKind.ASK`) takes the channel's cooldown first (in the database,
        so replicas agree) and is refused while an earlier question still waits to be sent.
        """
        settings = await self.store.settings.get(channel)
        self._remember_locale(channel, settings.locale)
        t = translator(settings.locale)
        question = await self._pick(channel, topic, settings)
        now = self.clock.now()
        if kind is PostKind.ASK:
            await self._claim_ask(channel, now, t)
        await self.store.questions.save(question)
        draft = PostDraft.of(
            channel, question, settings.locale, now, now + (closes_in or DEFAULT_WINDOW)
        )
        post = await self.store.posts.create(draft, kind, schedule_id=schedule_id, slot_at=slot_at)
        if post is None:
            return None
        if kind is not PostKind.ASK:
            return await self.publish(post, question, settings)
        try:
            return await self.publish(post, question, settings)
        except NotInChannel:
            await self.store.posts.discard_unsent(post.id)
            await self.store.settings.release_ask(channel, now)
            raise UserFacingError(
                t(NOT_IN_CHANNEL.get(channel.platform, NOT_IN_CHANNEL[Platform.SLACK]))
            ) from None
        except (UserFacingError, StorageUnavailable):
            raise
        except Exception as exc:
            # The post stays claimed: the reconciler sends it once the platform answers.
            self.problems.problem(
                f"ask: {type(exc).__name__}",
                "posting a question in %s failed",
                channel.key,
                exc=exc,
            )
            raise UserFacingError(
                t(
                    "The chat platform is not answering right now; the question will be posted "
                    "here as soon as it does."
                )
            ) from None

    async def _claim_ask(self, channel: ChannelRef, now: datetime, t: Translator) -> None:
        """An on-demand ask's two refusals. The cooldown first: an ask a moment after
        another one, whose question may still be on its way to the platform, is told when
        asking works again; only a question still unsent after that (a send that failed)
        refuses an ask that took the cooldown, which it then gives back."""
        cooling = self.ask_cooldown > timedelta(0)
        if cooling:
            left = await self.store.settings.claim_ask(channel, now, self.ask_cooldown)
            if left is not None:
                seconds = max(1, round(left.total_seconds()))
                raise UserFacingError(
                    t.n(
                        "A question was just asked in this channel: /quiz ask works again in "
                        "{count} second.",
                        "A question was just asked in this channel: /quiz ask works again in "
                        "{count} seconds.",
                        seconds,
                    )
                )
        if await self.store.posts.unsent_in_channel(channel):
            if cooling:
                await self.store.settings.release_ask(channel, now)
            raise UserFacingError(
                t(
                    "A question is already waiting to be posted in this channel (the chat "
                    "platform is not answering); it appears as soon as it does."
                )
            )

    async def _pick(
        self, channel: ChannelRef, topic: str | None, settings: ChannelSettings
    ) -> Question:
        history = [p.question_id for p in await self.store.posts.history(channel)]
        question = await self.pick(channel, history, settings, topic)
        if question is not None:
            return question
        t = translator(settings.locale)
        if topic == TEAM:
            raise UserFacingError(
                t(
                    "The team pack has no approved questions yet: submit one with /quiz submit "
                    "(an admin approves it with /quiz review)."
                )
            )
        pool = await self.pools.for_channel(channel, settings)
        if topic is None:
            raise UserFacingError(t(NO_QUESTIONS))
        topics = [*pool.topics(), TEAM]
        if self.generated is not None:
            topics = [*topics, GENERATED, *self.generated.names()]
        raise UserFacingError(
            t(
                "Unknown topic {topic!r}. Topics: {topics}. Example: /quiz ask {example}",
                topic=cut(topic),
                topics=", ".join(topics),
                example=topics[0],
            )
        )

    async def pick(
        self,
        channel: ChannelRef,
        history: list[str],
        settings: ChannelSettings,
        topic: str | None = None,
    ) -> Question | None:
        """The channel's next question: generated when asked for (`generated`, a family id)
        or, without a topic, for `settings.generated_share` percent of picks (and always
        when the channel's packs are empty); the team pack alone for `team`; else from the
        channel's pool — the packs it takes, less retired questions — with no repeat until
        the pool is exhausted. None for an unknown topic or an empty pool."""
        gen = self.generated
        if gen is not None:
            if topic == GENERATED:
                return gen.next_for(channel, history)
            if topic is not None and topic in gen.names():
                return gen.next_for(channel, history, topic)
        if topic == TEAM:
            return pick_question(await self.pools.team_pool(channel), history, self.rng)
        pool = await self.pools.for_channel(channel, settings)
        if (
            gen is not None
            and topic is None
            and (self.rng.random() * 100 < settings.generated_share or not len(pool))
        ):
            return gen.next_for(channel, history)
        return pick_question(pool, history, self.rng, topic)

    async def publish(
        self, post: Post, question: Question, settings: ChannelSettings | None = None
    ) -> Post:
        """Send a claimed post to its channel and store the platform message."""
        settings = settings or await self.store.settings.get(post.channel)
        msg = question_message(post, question, settings.timezone)
        ref = await self.chat(post.channel).post_message(post.channel, msg)
        posted = await self.store.posts.mark_posted(post.id, ref)
        self.metrics.posts.inc(kind=str(post.kind))
        return posted

    # -- answer ------------------------------------------------------------------------

    async def record_answer(
        self,
        post_id: int,
        user: UserRef,
        choice: int,
        user_locale: Locale | None = None,
        *,
        channel: ChannelRef | None = None,
        redelivered: bool = False,
    ) -> AnswerReply:
        """Record a click. The first answer per user counts; the reply is private. With
        `channel` (where the click happened), a post of another channel is refused. A
        `redelivered` click that finds its own choice already counted gets the outcome of
        that first delivery (whose process may have died before answering)."""
        outcome = await self.store.answers.record(post_id, user, choice, self.clock.now(), channel)
        if (
            redelivered
            and outcome.status is AnswerStatus.ALREADY_ANSWERED
            and outcome.choice == choice
        ):
            outcome = replace(outcome, status=AnswerStatus.RECORDED)
        post = outcome.post
        question = await self.store.questions.get(post.question_hash) if post else None
        return self._replied(outcome, question, user_locale, user)

    async def record_typed(
        self,
        post_id: int,
        user: UserRef,
        value: float,
        user_locale: Locale | None = None,
        *,
        channel: ChannelRef | None = None,
    ) -> AnswerReply:
        """Record a typed ("predict the number") answer: right when within the question's
        tolerance; one answer per user, as for buttons."""
        post = await self.store.posts.get(post_id)
        question = await self.store.questions.get(post.question_hash) if post else None
        target = numeric_target(question) if question is not None else None
        if post is None or question is None or target is None:
            outcome = AnswerOutcome(AnswerStatus.UNKNOWN_POST)
            return AnswerReply(outcome, outcome_message(outcome, user_locale or Locale.EN))
        outcome = await self.store.answers.record(
            post_id,
            user,
            matching_choice(question, value, target),
            self.clock.now(),
            channel,
            value=value,
            correct=target.accepts(value),
        )
        return self._replied(outcome, question, user_locale, user)

    def _replied(
        self,
        outcome: AnswerOutcome,
        question: Question | None,
        user_locale: Locale | None,
        user: UserRef,
    ) -> AnswerReply:
        post = outcome.post
        if post is not None:
            outcome = replace(outcome, question=question)
            if question is None:
                outcome = replace(outcome, status=AnswerStatus.UNKNOWN_POST)
        locale = user_locale or (post.locale if post else Locale.EN)
        if outcome.status is AnswerStatus.RECORDED and post is not None and question:
            self._schedule_count_update(post, question)
        self.metrics.answers.inc(status=str(outcome.status))
        for listener in self.hooks.on_answer:
            try:
                listener(user, outcome)
            except Exception:
                log.exception("an answer listener failed")
        for render in self.hooks.outcome_renderers:
            if (message := render(outcome, locale)) is not None:
                return AnswerReply(outcome, message)
        return AnswerReply(outcome, outcome_message(outcome, locale))

    def _edit_lock(self, post_id: int) -> asyncio.Lock:
        return self._edit_locks[post_id % EDIT_STRIPES]

    def _schedule_count_update(self, post: Post, question: Question) -> None:
        """Coalesce "N answered" edits: at most one per post per interval (a live round
        edits its own questions, coarsely: `bot.live`)."""
        if post.message is None or post.id in self._count_pending or post.kind.live:
            return
        self._count_pending.add(post.id)

        async def flush() -> None:
            try:
                await asyncio.sleep(self._count_interval)
                # Behind the burst's acknowledgements: with a question open in each of
                # many workspaces, a hundred edits would otherwise compete with them.
                await self.acks.wait()
                async with self._edit_lock(post.id):
                    fresh = await self.store.posts.get(post.id)
                    if fresh is None or fresh.message is None:
                        return
                    if fresh.state is not PostState.OPEN:
                        return
                    settings = await self.store.settings.get(fresh.channel)
                    chat = self.chat(fresh.channel)
                    await chat.update_message(
                        fresh.message, question_message(fresh, question, settings.timezone)
                    )
                    # Another process may have closed it meanwhile: the closed face wins.
                    after = await self.store.posts.get(post.id)
                    if after is not None and after.state is not PostState.OPEN:
                        await chat.update_message(
                            fresh.message, question_message(after, question, settings.timezone)
                        )
            except Exception as exc:
                self.problems.problem(
                    f"count update: {type(exc).__name__}",
                    "could not update the answered count of post %s",
                    post.id,
                    exc=exc,
                )
            finally:
                self._count_pending.discard(post.id)

        self.tasks.spawn(flush(), name=f"count-{post.id}")

    async def drain_updates(self) -> None:
        """Wait for pending count updates (shutdown, tests)."""
        await self.tasks.drain()

    # -- close and reveal --------------------------------------------------------------

    async def close(self, post_id: int) -> Reveal | None:
        """Close an open post and post the reveal in its thread, exactly once.

        Returns None when the post was not open (someone else closed it first). The close
        commits first (scores folded, reveal lease taken); if posting the reveal then fails,
        the failure is logged, the reveal is still returned, and the reconciler posts it
        after the lease (`retry_reveal`).
        """
        post = await self.store.posts.close(post_id, self.clock.now())
        if post is None:
            return None
        if post.kind.live:
            return None  # its live round posts the results (`bot.live`)
        reveal = await self._reveal_of(post)
        if reveal is None:
            return None
        if post.message is None or post.kind is PostKind.PRACTICE:
            await self._revealed(reveal)  # no public reveal: the close marked it done
            return reveal
        try:
            await self._post_reveal(reveal)
        except Exception:
            log.exception("posting the reveal of post %s failed; it is retried later", post.id)
        return reveal

    async def retry_reveal(
        self, post: Post, lease: timedelta = DEFAULT_REVEAL_LEASE
    ) -> Reveal | None:
        """Post the reveal of a closed post whose reveal was never posted (the platform call
        failed, or the process stopped between close and reveal), rendered from storage.

        Takes the post's reveal lease first, so of any number of instances one per lease
        period tries. Returns the reveal when this call posted it; None when the lease was
        not free or the reveal is done. A failing platform call raises; the lease then
        expires and the next pass tries again.
        """
        if not await self.store.posts.claim_reveal(post.id, self.clock.now(), lease):
            return None
        fresh = await self.store.posts.get(post.id)
        if fresh is None or fresh.message is None:
            return None
        reveal = await self._reveal_of(fresh)
        if reveal is None:
            return None
        await self._post_reveal(reveal)
        log.info("posted the delayed reveal of post %s in %s", fresh.id, fresh.channel.key)
        return reveal

    async def _reveal_of(self, post: Post) -> Reveal | None:
        """The reveal of a closed post, from storage: distribution, first correct, leader."""
        question = await self.store.questions.get(post.question_hash)
        if question is None:
            log.error("post %s has no stored question version %s", post.id, post.question_hash)
            return None
        distribution = await self.store.answers.distribution(post.id, question.choice_count)
        first = await self.store.answers.first_correct(post.id)
        board = await self.store.scores.leaderboard(post.channel, None, limit=1)
        guesses: tuple[float, ...] = ()
        if numeric_target(question) is not None:
            guesses = tuple(await self.store.answers.values(post.id))
        leader = board.rows[0] if board.rows else None
        return Reveal(post, question, distribution, first, leader, guesses)

    async def _post_reveal(self, reveal: Reveal) -> None:
        """Edit the question (buttons gone), reply with the reveal, then mark it revealed;
        the first to mark it runs the reveal listeners."""
        post, question = reveal.post, reveal.question
        assert post.message is not None
        settings = await self.store.settings.get(post.channel)
        chat = self.chat(post.channel)
        async with self._edit_lock(post.id):
            face = question_message(post, question, settings.timezone)
            await chat.update_message(post.message, face)
        message = reveal_message(reveal, post.locale)
        extra = [
            b for add in self.hooks.reveal_buttons if (b := add(reveal, post.locale)) is not None
        ]
        if extra:
            message = replace(message, buttons=(*message.buttons, *extra))
        await chat.reply_in_thread(post.message, message)
        if await self.store.posts.mark_revealed(post.id, self.clock.now()):
            await self._revealed(reveal)
        else:
            log.warning("the reveal of post %s was posted again (its lease had expired)", post.id)

    async def _revealed(self, reveal: Reveal) -> None:
        self.metrics.reveals.inc()
        for listener in self.hooks.on_reveal:
            try:
                await listener(reveal, reveal.post.locale)
            except Exception:
                log.exception("reveal listener failed for post %s", reveal.post.id)

    async def close_channel(self, channel: ChannelRef) -> list[Reveal]:
        """Close every open question in a channel now (`/quiz close`)."""
        out = []
        for post in await self.store.posts.open_in_channel(channel):
            if post.kind.live:
                continue  # the live round's own (`/quiz live stop` ends it)
            if (reveal := await self.close(post.id)) is not None:
                out.append(reveal)
        return out

    async def close_due(self) -> list[Reveal]:
        """Close every open post whose window has passed (also after downtime)."""
        out = []
        for post in await self.store.posts.due(self.clock.now()):
            if (reveal := await self.close(post.id)) is not None:
                out.append(reveal)
        return out

    # -- boards and settings -----------------------------------------------------------

    async def board_notes(self, channel: ChannelRef, user: UserRef, locale: Locale) -> list[str]:
        """What features say under a member's board and stats (a season, a team); a note
        that fails is left out (logged): the board is shown anyway."""
        notes = []
        for note in self.hooks.board_notes:
            try:
                if (line := await note(channel, user, locale)) is not None:
                    notes.append(line)
            except Exception:
                log.exception("a board note failed")
        return notes

    async def leaderboard(
        self,
        channel: ChannelRef,
        caller: UserRef | None,
        window: BoardWindow = BoardWindow.ALL,
        scope: BoardScope = BoardScope.CHANNEL,
    ) -> Leaderboard:
        """A board of the current `window` in the channel's time zone, with the caller's rank."""
        settings = await self.store.settings.get(channel)
        period = board_period(window, self.clock.now(), settings.timezone)
        return await self.store.scores.leaderboard(channel, caller, scope=scope, period=period)

    async def leaderboards(
        self,
        channel: ChannelRef,
        callers: Sequence[UserRef],
        window: BoardWindow = BoardWindow.ALL,
        scope: BoardScope = BoardScope.CHANNEL,
    ) -> dict[str, Leaderboard]:
        """`leaderboard` for each of `callers` (one workspace's), by member key, each part
        read once for them all."""
        settings = await self.store.settings.get(channel)
        period = board_period(window, self.clock.now(), settings.timezone)
        return await self.store.scores.leaderboards(channel, callers, scope=scope, period=period)

    async def set_locale(self, channel: ChannelRef, locale: Locale) -> ChannelSettings:
        settings = replace(await self.store.settings.get(channel), locale=locale)
        await self.store.settings.save(settings)
        self._remember_locale(channel, locale)
        return settings

    async def open_post(self, channel: ChannelRef) -> Post | None:
        """The newest open question in a channel (what a bare number answers in the console)."""
        posts = await self.store.posts.open_in_channel(channel)
        return posts[-1] if posts else None
