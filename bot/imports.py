"""Importing question files into a workspace's team pack: `quizbot questions import`, a
file an admin sends the bot (Slack: in a direct message; Discord: `/quiz import` with an
attachment; the console: `/import PATH`).

The file is read and every entry validated first (`QuestionFileReader`, off the event
loop: ten thousand rows take a second); then the valid questions go in, in one
transaction, skipping those already in the pack (same content hash: importing twice adds
nothing). Every invalid entry is reported with where it is and the fix.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from bot.admin import AdminStatus, admin_refusal
from bot.clock import Clock
from bot.commands import Admin, Command, CommandOption, Invocation, OptionKind, Reply
from bot.domain import ChannelRef, Locale, Platform, UserRef
from bot.errors import UserFacingError
from bot.features import Feature, Parts
from bot.i18n import N_, Translator, translator
from bot.intake import FileRoute, FileWork, PrivateReply, SentFile
from bot.messages import Message
from bot.quiz import QuizService
from bot.quoting import cut
from bot.team import Origin, QuestionFileReader, TeamPackRepository, TeamQuestion, Workspace

SHOWN_PROBLEMS = 20  # in chat; the command line prints them all
# The largest question file any format takes (8 MiB of CSV, some 20,000 rows; the reader
# bounds each format on its own); a larger upload is refused by its size alone.
MAX_UPLOAD_BYTES = 8 * 1024 * 1024
# Where a command takes a file (Discord's attachment option): the adapter hands it to
# `import_in_chat`; without one, `/quiz import` says how to send one.
COMMAND = "import"
FILE_OPTION = CommandOption(
    "file",
    N_("the question file: bank YAML (.yaml), CSV (.csv) or Open Trivia DB JSON (.json)"),
    kind=OptionKind.ATTACHMENT,
)


@dataclass(frozen=True, slots=True)
class ImportReport:
    name: str
    entries: int
    added: tuple[TeamQuestion, ...]
    valid: int
    problems: tuple[str, ...]
    approved: bool

    @property
    def known(self) -> int:
        """Valid questions already in the pack (any state)."""
        return self.valid - len(self.added)


class QuestionImport:
    def __init__(self, team: TeamPackRepository, reader: QuestionFileReader, clock: Clock) -> None:
        self.team = team
        self.reader = reader
        self.clock = clock

    def accepts(self, name: str) -> bool:
        return self.reader.accepts(name)

    async def run(
        self,
        workspace: Workspace,
        name: str,
        data: bytes,
        *,
        approve: bool,
        author: UserRef | None = None,
        channel: ChannelRef | None = None,
    ) -> ImportReport:
        """Read, validate and store one file. Raises `UserFacingError` when the whole file
        is refused (too large, unreadable, an Open Trivia DB error code)."""
        if len(data) > MAX_UPLOAD_BYTES:
            raise UserFacingError(too_large(name, len(data), translator(Locale.EN)))
        read = await asyncio.to_thread(self.reader.read, name, data)
        added = await self.team.add(
            workspace,
            read.questions,
            origin=Origin.IMPORT,
            approved=approve,
            now=self.clock.now(),
            author=author,
            channel=channel,
        )
        return ImportReport(
            name, read.entries, tuple(added), len(read.questions), read.problems, approve
        )


def too_large(name: str, size: int, t: Translator) -> str:
    megabytes = f"{size / 1e6:.1f}"
    return t(
        "{name} is {size} MB, over the {limit} MiB limit for a question file; split it into "
        "smaller files",
        name=cut(name),
        size=megabytes,
        limit=MAX_UPLOAD_BYTES // (1024 * 1024),
    )


def import_message(report: ImportReport, locale: Locale) -> Message:
    t = translator(locale)
    lines = [
        t.n(
            "{name}: {count} new question from {entries} entries; {known} already in the "
            "team pack, {invalid} with problems.",
            "{name}: {count} new questions from {entries} entries; {known} already in the "
            "team pack, {invalid} with problems.",
            len(report.added),
            name=cut(report.name),
            entries=report.entries,
            known=report.known,
            invalid=len(report.problems),
        )
    ]
    if report.added:
        lines.append(
            t("They are in the team pack now.")
            if report.approved
            else t("They wait for review: /quiz review")
        )
    if report.problems:
        lines += ["", t("Fix these and send the file again (the rest is not imported twice):")]
        lines += [f"- {p}" for p in report.problems[:SHOWN_PROBLEMS]]
        if len(report.problems) > SHOWN_PROBLEMS:
            lines.append(t("…and {count} more.", count=len(report.problems) - SHOWN_PROBLEMS))
    return Message(title=t("Question import"), body="\n".join(lines))


NOT_A_QUESTION_FILE = N_("{name} is not a question file.")


def question_files(importer: QuestionImport) -> FileRoute:
    """Question files an admin sends the bot (`/quiz import file:`, a Slack DM, the
    console's `/import PATH`): imported into their workspace's pack, approved (an admin's
    import is their review). Who may, which files and how large are checked before any
    download; anyone else is told who may."""

    async def accept(sent: SentFile) -> FileWork:
        t = translator(sent.locale)
        status = await sent.admin()
        if status is not AdminStatus.YES:
            raise UserFacingError(admin_refusal(sent.user.platform, COMMAND, status, t))
        if not importer.accepts(sent.name):
            how = t(IMPORT_HOW[sent.channel.platform])
            raise UserFacingError(f"{t(NOT_A_QUESTION_FILE, name=cut(sent.name))} {how}")
        if sent.size > MAX_UPLOAD_BYTES:
            raise UserFacingError(too_large(sent.name, sent.size, t))

        async def imported(path: Path, reply: PrivateReply) -> None:
            data = await asyncio.to_thread(path.read_bytes)
            try:
                report = await importer.run(
                    Workspace.of(sent.channel),
                    sent.name,
                    data,
                    approve=True,
                    author=sent.user,
                    channel=sent.channel,
                )
            except UserFacingError as exc:
                await reply.result(Message(body=str(exc)))
                return
            await reply.result(import_message(report, sent.locale))

        return imported

    return FileRoute(COMMAND, FILE_OPTION.name, MAX_UPLOAD_BYTES, importer.accepts, accept)


IMPORT_HOW = {
    Platform.SLACK: N_(
        "Send me the file in a direct message: bank YAML (.yaml), CSV (.csv) or Open Trivia DB "
        "JSON (.json). CSV columns: prompt,a,b,c,d,e,answer,explanation,topic,difficulty,"
        "locale,references"
    ),
    Platform.DISCORD: N_(
        "Attach the file to /quiz import: bank YAML (.yaml), CSV (.csv) or Open Trivia DB JSON "
        "(.json). CSV columns: prompt,a,b,c,d,e,answer,explanation,topic,difficulty,locale,"
        "references"
    ),
    Platform.CONSOLE: N_(
        "Type /import PATH: bank YAML (.yaml), CSV (.csv) or Open Trivia DB JSON (.json). CSV "
        "columns: prompt,a,b,c,d,e,answer,explanation,topic,difficulty,locale,references"
    ),
}


def feature(parts: Parts) -> Feature:
    """`/quiz import` (admins): how to send a question file on this platform, and the file
    itself where it comes with the command or on its own."""
    assert parts.reader is not None, "imports need the question file formats (Parts.reader)"
    importer = QuestionImport(parts.store.team, parts.reader, parts.clock)

    async def how(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        return [Reply(Message(body=t(IMPORT_HOW[inv.channel.platform])))]

    return Feature(
        "imports",
        commands=[
            Command(
                COMMAND,
                how,
                "import",
                N_("import a question file into the team pack (admins)"),
                Admin.ALWAYS,
                options=(FILE_OPTION,),
            )
        ],
        files=[question_files(importer)],
    )


__all__ = [
    "FILE_OPTION",
    "MAX_UPLOAD_BYTES",
    "ImportReport",
    "QuestionImport",
    "feature",
    "import_message",
    "question_files",
    "too_large",
]
