"""`/quiz stats`: a member's own results in the channel, privately — answers, accuracy,
streaks, accuracy per topic, and the weakest topic with a suggestion to practise it."""

from __future__ import annotations

from dataclasses import replace

from bot.commands import Invocation, Reply
from bot.domain import LeaderboardRow, Locale, PlayerStats, TopicStats
from bot.i18n import translator
from bot.messages import Message
from bot.quiz import QuizService


def percent(fraction: float) -> int:
    return round(100 * fraction)


def weakest_topic(stats: PlayerStats) -> TopicStats | None:
    """The topic with the lowest accuracy (more answers break ties: surer evidence);
    None when every answered topic is perfect."""
    answered = [t for t in stats.topics if t.answered]
    if not answered:
        return None
    weakest = min(answered, key=lambda t: (t.accuracy, -t.answered, t.topic))
    return weakest if weakest.correct < weakest.answered else None


def stats_message(
    stats: PlayerStats, rank: LeaderboardRow | None, players: int, locale: Locale
) -> Message:
    t = translator(locale)
    lines = [
        t(
            "Answered {answered}, correct {correct} ({accuracy}%), "
            "{points} points, rank {rank} of {players}.",
            answered=stats.answered,
            correct=stats.correct,
            accuracy=percent(stats.accuracy),
            points=stats.points,
            rank=rank.rank if rank is not None else "–",
            players=players,
        ),
        t(
            "Streak (scheduled questions right in a row): {current} now, best {best}. "
            "Questions from /quiz ask score points but neither extend nor break it.",
            current=stats.current_streak,
            best=stats.best_streak,
        ),
    ]
    if stats.topics:
        lines += ["", t("*Accuracy per topic*")]
        for topic in sorted(stats.topics, key=lambda x: (x.accuracy, x.topic)):
            lines.append(
                f"- {topic.topic}: {topic.correct}/{topic.answered} ({percent(topic.accuracy)}%)"
            )
    weakest = weakest_topic(stats)
    lines.append("")
    if weakest is not None:
        lines.append(
            t(
                "Weakest topic: {topic} ({accuracy}%). Practise it privately, "
                "without points: /quiz practice {topic}",
                topic=weakest.topic,
                accuracy=percent(weakest.accuracy),
            )
        )
    else:
        lines.append(t("No weak topic so far. New questions, privately: /quiz practice"))
    return Message(title=t("Your results"), body="\n".join(lines))


async def stats_command(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
    stats = await service.store.scores.player_stats(inv.channel, inv.user)
    if stats is None:
        t = translator(inv.locale)
        return [Reply(Message(body=t("You have no answers in this channel yet.")))]
    board = await service.leaderboard(inv.channel, inv.user)
    message = stats_message(stats, board.caller, board.players, inv.locale)
    if notes := await service.board_notes(inv.channel, inv.user, inv.locale):
        message = replace(message, body="\n".join([message.body, "", *notes]))
    return [Reply(message)]
