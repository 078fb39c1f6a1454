"""Question files on Discord: `/quiz import file:<attachment>` (admins) imports a bank YAML,
CSV or Open Trivia DB JSON file into the server's team pack, approved (an admin's import
is their review), and answers privately with the core's import report.

A route of `files.AttachedCommands`: the checks that need no download come first, each
refusal the private initial response itself — who sent it (the command's own payload says
whether they may: Manage Server, the admin role, a listed id), what kind of file it is,
and its announced size against `bot.imports.MAX_UPLOAD_BYTES` (a 50 MB file is refused
by its size alone, nothing fetched). Then the command is deferred privately, the file
streamed into a private temporary file (stopping at the cap whatever size was announced),
read, and handed to `bot.imports.import_in_chat`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.discord.files import AttachedFile, AttachmentRoute, FileWork
from adapters.discord.replies import DeferredReply
from bot.commands import AdminStatus, admin_refusal
from bot.domain import Platform
from bot.errors import UserFacingError
from bot.i18n import N_, translator
from bot.imports import (
    FILE_OPTION,
    IMPORT_HOW,
    MAX_UPLOAD_BYTES,
    QuestionImport,
    import_in_chat,
    too_large,
)
from bot.quoting import cut

COMMAND = "import"
NOT_A_QUESTION_FILE = N_("{name} is not a question file.")


def question_file_route(importer: QuestionImport) -> AttachmentRoute:
    """The route of `/quiz import`'s file option."""

    def start(attached: AttachedFile) -> FileWork:
        t = translator(attached.locale)
        if attached.admin is not AdminStatus.YES:
            raise UserFacingError(admin_refusal(Platform.DISCORD, COMMAND, attached.admin, t))
        if not importer.accepts(attached.name):
            how = t(IMPORT_HOW[Platform.DISCORD])
            raise UserFacingError(f"{t(NOT_A_QUESTION_FILE, name=cut(attached.name))} {how}")
        if attached.size > MAX_UPLOAD_BYTES:
            raise UserFacingError(too_large(attached.name, attached.size, t))

        async def imported(path: Path, reply: DeferredReply) -> None:
            data = await asyncio.to_thread(path.read_bytes)
            message = await import_in_chat(
                importer,
                attached.channel,
                attached.user,
                attached.admin,
                attached.name,
                data,
                attached.locale,
            )
            await reply.result(message)

        return imported

    return AttachmentRoute(COMMAND, FILE_OPTION.name, MAX_UPLOAD_BYTES, start)


__all__ = ["question_file_route"]
