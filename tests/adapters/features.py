"""Feature sets the adapters' end-to-end tests build their quiz with (`tests.quiz.quiz_of`):
each one as `quizbot serve` wires those features (`bot.app.FEATURES` has them all)."""

from __future__ import annotations

from bot import basics, flags, imports, mydata, packs, practice, report, review, submit
from bot.features import FeatureFactory

# Team packs: the basic commands, review (and retire), submit, flags, packs, mydata and
# forget-me, `/quiz import` and the question files sent to the bot, practice, report.
TEAM_FEATURES: tuple[FeatureFactory, ...] = (
    basics.feature,
    review.feature,
    submit.feature,
    flags.feature,
    packs.feature,
    mydata.feature,
    imports.feature,
    practice.feature,
    report.feature,
)

__all__ = ["TEAM_FEATURES"]
