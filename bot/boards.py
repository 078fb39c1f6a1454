"""`/quiz leaderboard [day|week|month|all] [workspace]`: which board, and showing it.

The window is the current day, ISO week or month in the channel's time zone (see
`bot.scoring`); `workspace` ranks everyone across the platform workspace's channels.
"""

from __future__ import annotations

from dataclasses import replace

from bot.commands import Invocation, Reply
from bot.domain import BoardScope, BoardWindow, Locale
from bot.errors import UserFacingError
from bot.i18n import translator
from bot.quiz import QuizService
from bot.render import leaderboard_message

USAGE = "leaderboard [day|week|month|all] [workspace]"

_WORDS: dict[str, BoardWindow | BoardScope] = {
    "day": BoardWindow.DAY,
    "today": BoardWindow.DAY,
    "week": BoardWindow.WEEK,
    "month": BoardWindow.MONTH,
    "all": BoardWindow.ALL,
    "alltime": BoardWindow.ALL,
    "all-time": BoardWindow.ALL,
    "channel": BoardScope.CHANNEL,
    "workspace": BoardScope.WORKSPACE,
    "server": BoardScope.WORKSPACE,  # what Discord users call their workspace
}


def parse_board(args: list[str], locale: Locale = Locale.EN) -> tuple[BoardWindow, BoardScope]:
    """``["week", "workspace"]`` -> (WEEK, WORKSPACE), in any order; defaults: all, channel."""
    window, scope = BoardWindow.ALL, BoardScope.CHANNEL
    for word in args:
        value = _WORDS.get(word.lower())
        if isinstance(value, BoardWindow):
            window = value
        elif isinstance(value, BoardScope):
            scope = value
        else:
            t = translator(locale)
            raise UserFacingError(
                t(
                    "Unknown board {value!r}: use day, week, month or all, optionally with "
                    "workspace. Example: /quiz leaderboard week workspace",
                    value=word,
                )
            )
    return window, scope


async def leaderboard_command(
    service: QuizService, inv: Invocation, args: list[str]
) -> list[Reply]:
    window, scope = parse_board(args, inv.locale)
    board = await service.leaderboard(inv.channel, inv.user, window, scope)
    message = leaderboard_message(board, inv.locale)
    if notes := await service.board_notes(inv.channel, inv.user, inv.locale):
        message = replace(message, footer=" · ".join([message.footer, *notes]).strip(" ·"))
    return [Reply(message, private=False)]
