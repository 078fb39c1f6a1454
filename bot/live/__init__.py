"""Live rounds: `/quiz live [questions] [seconds] [topic|team|generated] [count]` (admins)
posts a lobby, then the questions one after another, each open for its seconds with a
self-updating closing time, its results and the round's top 5 in its thread, and a podium
at the end; `/quiz live stop` ends it, `/quiz live` shows it, `/quiz live board` is the
live board. Answers are the quiz's own (one per member, stored before the click is
acknowledged), refused after the question's deadline. Scoring: `bot.live.ports`; the
steps, once across replicas: `bot.live.rounds`; docs/live-rounds.md."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from bot.admin import AdminStatus, admin_refusal
from bot.basics import ask_topics
from bot.commands import Command, Invocation, Reply
from bot.domain import AnswerOutcome, AnswerStatus, ChannelRef, Locale, UserRef, choice_letter
from bot.errors import UserFacingError
from bot.features import ButtonKind, Feature, Parts
from bot.formats import significant, trimmed
from bot.i18n import N_, Translator, translator
from bot.interactions import Click
from bot.live.messages import CANCEL, JOIN, START, board_message, clock_time, status_message
from bot.live.ports import ACTIVE, BoardRow, LiveRound, RoundState, standings
from bot.live.rounds import LiveRounds
from bot.messages import Message
from bot.quiz import GENERATED, BulkLine, QuizService
from bot.quoting import cut
from bot.team import TEAM

USAGE = "live [questions] [seconds] [topic|team|generated] [count] | stop | board"
QUESTIONS = (1, 30)
SECONDS = (5, 120)
DEFAULT_QUESTIONS = 10
DEFAULT_SECONDS = 20
COUNT = "count"


def feature(parts: Parts) -> Feature:
    service = parts.service
    lobby = timedelta(seconds=parts.settings.live_lobby)
    rounds = LiveRounds(service, parts.store.live, parts.clock, lobby=lobby, timer=parts.wakeups)
    return live_feature(rounds)


def live_feature(rounds: LiveRounds) -> Feature:
    clock = rounds.clock

    async def live(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        action = args[0].lower() if args else ""
        running = await rounds.repo.active(inv.channel)
        if not args:
            if running is None:
                return [
                    Reply(
                        Message(
                            body=t(
                                "No live round is running in this channel. An admin starts "
                                "one with /quiz live 10 20."
                            )
                        )
                    )
                ]
            table = standings(
                await rounds.repo.answers(running.id), await rounds.repo.players(running.id)
            )
            return [Reply(status_message(running, inv.locale, table))]
        if action == "board":
            return [Reply(board_message(await rounds.repo.board(inv.channel), inv.locale))]
        await _admin(inv, t)
        if action == "stop":
            if running is None or not await rounds.stop(running):
                raise UserFacingError(t("No live round is running in this channel."))
            return [
                Reply(
                    Message(
                        body=t("The live round is ending: the standings follow in the channel.")
                    )
                )
            ]
        if running is not None:
            raise UserFacingError(
                t(
                    "A live round is already under way in this channel: /quiz live shows it, "
                    "and an admin ends it with /quiz live stop."
                )
            )
        questions, seconds, topic, counted = _read(args, t)
        await _check_pool(service, inv.channel, topic, questions, t)
        settings = await service.store.settings.get(inv.channel)
        await rounds.start(
            inv.channel,
            inv.user,
            questions=questions,
            seconds=seconds,
            topic=topic,
            counted=counted,
            locale=settings.locale,
        )
        return []

    async def _round_of(click: Click, t: Translator) -> LiveRound:
        r = await rounds.repo.get(int(click.value)) if click.value.isdigit() else None
        if r is None or r.channel != click.channel or r.state not in ACTIVE:
            raise UserFacingError(t("This live round is over."))
        return r

    async def join(click: Click, locale: Locale) -> Message:
        t = translator(locale)
        r = await _round_of(click, t)
        if not await rounds.repo.join(r.id, click.user, clock.now()):
            return Message(body=t("You have joined this round already."))
        if r.state is RoundState.LOBBY:
            return Message(
                body=t("You're in: the round starts at {when}.", when=clock_time(r.next_at))
            )
        return Message(body=t("You're in: answer the open question with its buttons."))

    async def start_now(click: Click, locale: Locale) -> Message:
        t = translator(locale)
        r = await _round_of(click, t)
        if r.state is not RoundState.LOBBY:
            return Message(body=t("This round has started already."))
        await rounds.start_now(r)
        return Message(body=t("Starting now."))

    async def cancel(click: Click, locale: Locale) -> Message:
        t = translator(locale)
        r = await _round_of(click, t)
        if r.state is not RoundState.LOBBY:
            return Message(body=t("This round has started: end it with /quiz live stop."))
        await rounds.stop(r)
        return Message(body=t("The live round was cancelled."))

    def outcome(outcome: AnswerOutcome, locale: Locale) -> Message | None:
        """A live question's private replies: a late click with the time it missed by; a
        recorded one without the answer (the results tell it, for everyone at once)."""
        post = outcome.post
        if post is None or not post.kind.live or post.closes_at is None:
            return None
        t = translator(locale)
        if outcome.status is AnswerStatus.CLOSED:
            late = max(0.0, (clock.now() - post.closes_at).total_seconds())
            return Message(
                body=t(
                    "This live question closed at {when}: your answer came {seconds} s late "
                    "and was not counted.",
                    when=clock_time(post.closes_at),
                    seconds=trimmed(late, locale, 1),
                )
            )
        if outcome.status is AnswerStatus.RECORDED:
            rounds.answered(post)
        if outcome.status is AnswerStatus.RECORDED and outcome.question is not None:
            if outcome.value is not None:
                chosen = significant(outcome.value, locale)
            else:
                assert outcome.choice is not None
                chosen = choice_letter(outcome.choice)
            left = max(0.0, (post.closes_at - clock.now()).total_seconds())
            return Message(
                body=t(
                    "Locked in: {choice}, with {seconds} s to spare. The answer comes when "
                    "the question closes.",
                    choice=chosen,
                    seconds=trimmed(left, locale, 1),
                )
            )
        return None

    async def stats_line(channel: ChannelRef, user: UserRef, locale: Locale) -> str | None:
        return live_line(await rounds.repo.player(channel, user), locale)

    async def stats_lines(asks: Sequence[tuple[ChannelRef, UserRef, Locale]]) -> list[str | None]:
        """`stats_line` of many members: each channel's rows of theirs in one read."""
        rows: dict[ChannelRef, dict[str, BoardRow]] = {}
        for channel in dict.fromkeys(c for c, _, _ in asks):
            users = [u for c, u, _ in asks if c == channel]
            rows[channel] = await rounds.repo.players_of(channel, users)
        return [live_line(rows[c].get(u.key), locale) for c, u, locale in asks]

    def live_line(row: BoardRow | None, locale: Locale) -> str | None:
        if row is None:
            return None
        t = translator(locale)
        return t.n(
            "Live rounds (a board of their own: /quiz live board): {points} points, "
            "{correct} right of {answered}, in {count} round.",
            "Live rounds (a board of their own: /quiz live board): {points} points, "
            "{correct} right of {answered}, in {count} rounds.",
            row.rounds,
            points=trimmed(row.points, locale),
            correct=row.correct,
            answered=row.answered,
        )

    return Feature(
        "live",
        commands=[
            Command(
                "live", live, USAGE, N_("a live round: timed questions, speed points, a podium")
            )
        ],
        buttons=[
            ButtonKind(JOIN, click=join, about_post=False),
            ButtonKind(START, click=start_now, admin="live", about_post=False),
            ButtonKind(CANCEL, click=cancel, admin="live", about_post=False),
        ],
        outcome_renderers=[outcome],
        services=[rounds],
        tickers=[rounds],
        holds=[rounds.busy],
        stats=[BulkLine(stats_line, stats_lines)],
    )


async def _admin(inv: Invocation, t: Translator) -> None:
    status = await inv.admin()
    if status is not AdminStatus.YES:
        raise UserFacingError(admin_refusal(inv.channel.platform, "live", status, t))


def _read(args: list[str], t: Translator) -> tuple[int, int, str | None, bool]:
    """``[questions] [seconds] [topic] [count]``, each checked against its bounds."""
    numbers: list[int] = []
    topic: str | None = None
    counted = False
    for word in args:
        if word.isascii() and word.isdigit():
            numbers.append(int(word))
        elif word.lower() == COUNT:
            counted = True
        elif topic is None:
            topic = word
        else:
            raise UserFacingError(
                t(
                    "/quiz live takes one topic, not {extra}: nothing was started. "
                    "Example: /quiz live 10 20 gpu",
                    extra=cut(word),
                )
            )
    if len(numbers) > 2:
        raise UserFacingError(
            t("/quiz live takes two numbers: questions, then seconds. Example: /quiz live 10 20")
        )
    questions = numbers[0] if numbers else DEFAULT_QUESTIONS
    seconds = numbers[1] if len(numbers) > 1 else DEFAULT_SECONDS
    if not QUESTIONS[0] <= questions <= QUESTIONS[1]:
        raise UserFacingError(
            t(
                "A live round has {low} to {high} questions, not {value}. "
                "Example: /quiz live 10 20",
                low=QUESTIONS[0],
                high=QUESTIONS[1],
                value=questions,
            )
        )
    if not SECONDS[0] <= seconds <= SECONDS[1]:
        raise UserFacingError(
            t(
                "A live question is open {low} to {high} seconds, not {value}. "
                "Example: /quiz live 10 20",
                low=SECONDS[0],
                high=SECONDS[1],
                value=seconds,
            )
        )
    return questions, seconds, topic, counted


async def _check_pool(
    service: QuizService, channel: ChannelRef, topic: str | None, questions: int, t: Translator
) -> None:
    """Refuse an unknown topic, and a pool with fewer questions than asked (saying how many)."""
    if service.generated is not None and (topic == GENERATED or topic in service.generated.names()):
        return  # generated questions never run out
    settings = await service.store.settings.get(channel)
    if topic is not None:
        known = {v.casefold(): v for v in ask_topics(service)}
        if topic.casefold() not in known:
            raise UserFacingError(
                t(
                    "Unknown topic {topic!r}. Topics: {topics}. "
                    "Example: /quiz live 10 20 {example}",
                    topic=cut(topic),
                    topics=", ".join(ask_topics(service)),
                    example=ask_topics(service)[0],
                )
            )
        topic = known[topic.casefold()]
    if topic == TEAM:
        have = len(await service.pools.team_pool(channel))
    else:
        pool = await service.pools.for_channel(channel, settings)
        have = len([q for q in pool if topic is None or q.topic == topic])
        if topic is None and service.generated is not None and settings.generated_share > 0:
            return
    if have < questions:
        where = t("The topic {topic}", topic=topic) if topic else t("This channel's packs")
        raise UserFacingError(
            t.n(
                "{where} has only {count} question, fewer than the {asked} asked: nothing was "
                "started. Ask for {count} or fewer.",
                "{where} has only {count} questions, fewer than the {asked} asked: nothing was "
                "started. Ask for {count} or fewer.",
                have,
                where=where,
                asked=questions,
            )
        )


__all__ = ["LiveRounds", "feature", "live_feature"]
