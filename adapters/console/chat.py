"""`Chat` for the terminal: renders core messages as text on a stream."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Awaitable, Callable
from datetime import UTC
from pathlib import Path
from typing import TextIO

from bot.domain import ChannelRef, Locale, MessageRef, UserRef
from bot.i18n import Translator, translator
from bot.messages import ANSWER, Attachment, Button, Image, Message

LocaleOf = Callable[[ChannelRef], Awaitable[Locale]]

# *bold* — not the stars of a cron expression ("30 9 * * 1-5"): bold text touches them.
_BOLD = re.compile(r"\*(?=[^\s*])([^*\n]*?[^\s*])\*")
_QUIZ = re.compile(r"(?<![\w/])/quiz (?=[a-z])")


def console_syntax(text: str) -> str:
    """The core's messages name commands as Slack and Discord type them (``/quiz ask``);
    the console types ``/ask``."""
    return _QUIZ.sub("/", text)


def render_text(message: Message, indent: str = "") -> str:
    """Plain text: title, body (markdown markers dropped), fields, buttons, footer."""
    lines: list[str] = []
    if message.title:
        lines.append(f"== {message.title} ==")
    if message.body:
        lines += _BOLD.sub(r"\1", message.body).splitlines()
    lines += [f"{f.name}: {f.value}" for f in message.fields]
    if message.buttons:
        lines.append("  ".join(f"[{b.label}]" for b in message.buttons))
    if message.footer:
        lines.append(f"({message.footer})")
    if message.countdown is not None:
        lines.append(f"(deadline {message.countdown.astimezone(UTC):%H:%M:%S} UTC)")
    return textwrap.indent(console_syntax("\n".join(lines)), indent, lambda _: True)


class ConsoleChat:
    """Prints what the bot posts. Thread replies are indented under their post; private
    messages are marked with who sees them. Its own words are in the channel's language
    once `use_locale` says how to read it (English until then)."""

    def __init__(self, out: TextIO, image_dir: Path | None = None) -> None:
        self._out = out
        self._image_dir = image_dir
        self._next = 0
        self._locale_of: LocaleOf | None = None
        self.posted: dict[str, Message] = {}
        # Buttons other than answers (e.g. "Run the demo"), newest last: `/press` clicks them.
        self.pressable: list[Button] = []

    def use_locale(self, locale_of: LocaleOf) -> None:
        """Where the channel's language comes from (the quiz service's `locale_for`)."""
        self._locale_of = locale_of

    async def _t(self, channel: ChannelRef) -> Translator:
        locale = Locale.EN if self._locale_of is None else await self._locale_of(channel)
        return translator(locale)

    def _id(self) -> str:
        self._next += 1
        return f"m{self._next}"

    def _print(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    def _remember(self, message: Message) -> None:
        self.pressable += [b for b in message.buttons if b.action != ANSWER]

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        ref = MessageRef(channel, self._id())
        self.posted[ref.message] = message
        self._remember(message)
        self._print(f"\n#{channel.channel} [{ref.message}]\n{render_text(message, '  ')}")
        return ref

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        ref = MessageRef(parent.channel, self._id())
        self.posted[ref.message] = message
        self._remember(message)
        t = await self._t(parent.channel)
        head = t("↳ thread of [{message}]", message=parent.message)
        self._print(f"  {head}\n{render_text(message, '    │ ')}")
        return ref

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        self._remember(message)  # a review list's Approve, a forget-me confirmation
        t = await self._t(channel)
        who = t("(only {name} can see this)", name=user.display)
        self._print(f"  {who}\n{render_text(message, '    ')}")

    async def send_file(
        self, channel: ChannelRef, user: UserRef, file: Attachment, comment: str = ""
    ) -> None:
        """A private file: written next to the plots (or not saved), its path printed."""
        t = await self._t(channel)
        where = t("(not saved)")
        if self._image_dir is not None:
            self._image_dir.mkdir(parents=True, exist_ok=True)
            path = self._image_dir / file.filename
            path.write_bytes(file.data)
            where = str(path)
        who = t("(only {name} can see this)", name=user.display)
        self._print(f"  {who}\n    " + t("file: {where}", where=where) + f" {comment}".rstrip())

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        """Print what a player would notice: a question closing, a demo's status line
        becoming its report. "N answered" edits (only the footer changes) stay quiet."""
        before = self.posted.get(ref.message)
        self.posted[ref.message] = message
        t = await self._t(ref.channel)
        if before is not None and before.buttons and not message.buttons:
            self._print(
                "  "
                + t("[{message}] closed ({footer})", message=ref.message, footer=message.footer)
            )
            return
        if before is not None and (before.title, before.body, before.buttons) == (
            message.title,
            message.body,
            message.buttons,
        ):
            return
        self._remember(message)
        now = t("[{message}] now:", message=ref.message)
        self._print(f"  {now}\n{render_text(message, '    │ ')}")

    def save_image(self, image: Image, t: Translator | None = None) -> str:
        """Write the image under the image directory; its path (or "(not saved)")."""
        if self._image_dir is None:
            t = t or translator(Locale.EN)
            return t("(not saved)")
        self._image_dir.mkdir(parents=True, exist_ok=True)
        path = self._image_dir / Path(image.filename).name
        path.write_bytes(image.data)
        return str(path)

    async def upload_image(self, parent: MessageRef, image: Image, comment: str = "") -> None:
        t = await self._t(parent.channel)
        where = self.save_image(image, t)
        head = t("↳ thread of [{message}]", message=parent.message)
        self._print(f"  {head}\n    │ " + t("image: {where}", where=where) + f" {comment}".rstrip())
