"""The web dashboard's pages, as one feature of the registry (`Feature.pages`).

Reading pages for every member (overview, leaderboards, their own page, demos, the
memory clinic) and admin pages (review, the channel's settings, question files,
schedules). The web adapter serves them; each handler calls the chat's use cases.
"""

from __future__ import annotations

from bot.dashboard import admin, files, member, overview
from bot.features import Feature, Parts
from bot.i18n import N_
from bot.pages import GET, POST, Page

BOTH = (GET, POST)


def feature(parts: Parts) -> Feature:
    assert parts.reader is not None, "the dashboard exports with the question file formats"
    clinic = files.WebClinic(parts.clock)
    return Feature(
        "dashboard",
        pages=[
            Page("", overview.overview, N_("Overview"), nav=True),
            Page("leaderboard", overview.leaderboard, N_("Leaderboards"), nav=True),
            Page("me", member.me, N_("My results"), nav=True),
            Page("me/data", member.my_data),
            Page("me/forget", member.forget, methods=BOTH),
            Page("demos", overview.demos, N_("Demos"), nav=True),
            Page(
                "clinic", clinic.page, N_("Memory clinic"), methods=BOTH, nav=True, upload="clinic"
            ),
            Page("clinic/{job}", clinic.result),
            Page("clinic/{job}/plot", clinic.plot),
            Page("review", admin.review, N_("Review"), methods=BOTH, admin=True, nav=True),
            Page(
                "channel", admin.channel_settings, N_("Channel"), methods=BOTH, admin=True, nav=True
            ),
            Page("questions", admin.questions, N_("Questions"), admin=True, nav=True),
            Page(
                "questions/import",
                files.import_file,
                methods=(POST,),
                admin=True,
                upload="import",
            ),
            Page("questions/export", admin.export(parts.reader), admin=True),
            Page("schedules", admin.schedules, N_("Schedules"), methods=BOTH, admin=True, nav=True),
        ],
        services=[clinic.running()],
    )


__all__ = ["feature"]
