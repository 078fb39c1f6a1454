"""A file posted to an upload page, received the way the chat's file routes expect.

Before any of the body is read: the request must announce its length, and a length over
the route's limit (plus the form's framing) is refused. Then the multipart body is read
in order: the CSRF token first (the form puts it first; anything else first is refused),
a few small fields, then the file's headers — the route accepts or refuses the file by
its name and announced size before its bytes are read — then the bytes, streamed into a
private temporary file in chunks and cut at the route's limit, so the process's memory
does not grow with the file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import BodyPartReader, web

from adapters.web.bodies import streamed
from adapters.web.dashboard.tokens import same
from bot.i18n import N_, Translator
from bot.intake import FileRoute, SentFile, accepted
from bot.logs import ThrottledLog
from bot.messages import Message
from bot.pages import Upload
from bot.uploads import private_temp_file

FRAMING = 64 * 1024  # the form's own bytes around the file: boundaries, headers, fields
FIELD_MAX = 256  # a small field's bytes (the token, a channel id, a GPU size)
CHUNK = 256 * 1024
MiB = 1 << 20
EXPIRED = N_("This form has expired: reload the page and send it again.")

SentFileOf = Callable[[str, int, dict[str, str]], SentFile]


class Refused(Exception):
    """The upload is refused: the HTTP status and the words to show."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Received:
    fields: dict[str, str]
    upload: Upload | None  # None: the route refused the file (`refusal` says why)
    refusal: Message | None = None


def check_length(request: web.Request, limit: int, t: Translator) -> int:
    """The announced length, refused before any of the body is read."""
    length = request.content_length
    if length is None:
        raise Refused(411, t("Send the file from the page's form (its size must be known)."))
    if length > limit + FRAMING:
        raise Refused(
            413,
            t(
                "The file is {size} MiB, over the {limit} MiB limit.",
                size=round(length / MiB, 1),
                limit=round(limit / MiB, 1),
            ),
        )
    return length


async def receive(
    request: web.Request,
    route: FileRoute,
    csrf: str,
    sent_file: SentFileOf,
    problems: ThrottledLog,
    t: Translator,
) -> Received:
    length = check_length(request, route.max_bytes, t)
    if not request.content_type.startswith("multipart/"):
        raise Refused(403, t(EXPIRED))  # not the page's form: no CSRF token in it
    async with streamed(request):
        reader = await request.multipart()
    fields: dict[str, str] = {}
    first = True
    while True:
        async with streamed(request):
            part = await reader.next()
        if not isinstance(part, BodyPartReader):
            raise Refused(400, t("Choose a file to send."))
        if first:
            async with streamed(request):
                token = (await part.read_chunk(FIELD_MAX)).decode("utf-8", "replace")
            if part.name != "csrf" or not same(token, csrf):
                raise Refused(403, t(EXPIRED))
            first = False
            continue
        if not part.filename:
            if part.name == "file":
                raise Refused(400, t("Choose a file to send."))
            async with streamed(request):
                value = (await part.read_chunk(FIELD_MAX)).decode("utf-8", "replace")
            fields[str(part.name)[:32]] = value
            continue
        sent = sent_file(part.filename[:200], max(0, length - 1024), fields)
        work = await accepted(route, sent, problems)
        if isinstance(work, Message):
            return Received(fields, None, work)
        path = await _stream(request, part, sent.name, route.max_bytes, t)
        return Received(fields, Upload(sent, path, work))


async def _stream(
    request: web.Request, part: BodyPartReader, name: str, limit: int, t: Translator
) -> Path:
    path = private_temp_file(name)
    size = 0
    try:
        with path.open("wb") as out:
            while True:
                async with streamed(request):
                    chunk = await part.read_chunk(CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise Refused(
                        413,
                        t(
                            "The file is over the {limit} MiB limit.",
                            limit=round(limit / MiB, 1),
                        ),
                    )
                out.write(chunk)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        raise
    return path


__all__ = ["FRAMING", "Received", "Refused", "check_length", "receive"]
