"""How the score aggregates name a board: `board` and `starts` of `score_periods`,
`score_histograms` and `team_scores`."""

from __future__ import annotations

from datetime import date

from bot.domain import BoardWindow

ALL_TIME = date(1970, 1, 1)  # `starts` of all-time rows and of season boards


def channel_board(channel_id: int, window: BoardWindow) -> str:
    return f"channel:{channel_id}:{window}"


def workspace_board(platform: str, workspace: str, window: BoardWindow) -> str:
    return f"workspace:{platform}:{workspace}:{window}"


def season_board(season_id: int, board: int = 0) -> str:
    """A season board's key: board 0 is the whole season, a channel id its board there."""
    return f"season:{season_id}:{board}"
