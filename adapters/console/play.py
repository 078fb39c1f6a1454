"""The console REPL: a number (or letter) answers the open question; `/command` runs
a `/quiz` subcommand; `/press [demo]` clicks the newest button that is not an answer (the
reveal's "Run the demo", "Report a problem", a review's Approve); `/import PATH` imports a
question file into the console's team pack; `/as NAME` switches user; `/quit` leaves.
Everyone is an admin here. Clicks go through the
core's `Interactions`, as on Slack and Discord.

When stdin is not a terminal, the lines are read as a script and echoed, so a round can be
played from a pipe.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from adapters.console.chat import ConsoleChat
from bot.admin import EVERYONE
from bot.commands import Invocation, run_command
from bot.domain import LETTERS, ChannelRef, Platform, PostState, UserRef
from bot.errors import UserFacingError
from bot.features import Quiz
from bot.forms import Form, FormField, Submission
from bot.i18n import translator
from bot.intake import FileRoute, SentFile, accepted, handle
from bot.interactions import Click
from bot.messages import ANSWER, Button, Message
from bot.quoting import cut

WORKSPACE = "console"  # the console's one workspace: its team pack is `console`

ConsoleCommand = Callable[["ConsoleSession", list[str]], Awaitable[None]]


class ConsoleSession:
    def __init__(
        self,
        quiz: Quiz,
        chat: ConsoleChat,
        out: TextIO,
        *,
        channel: str = "quiz",
        user: str = "you",
    ) -> None:
        self.quiz = quiz
        self.service = quiz.service
        self.commands = quiz.commands
        self.interactions = quiz.interactions
        self.chat = chat
        chat.use_locale(self.service.locale_for)  # its own words in the channel's language
        self.out = out
        self.channel = ChannelRef(Platform.CONSOLE, WORKSPACE, channel)
        self.user = _user(user)
        self.done = False
        self.practice: dict[str, int] = {}  # user key -> their open practice post id
        # The console's own commands (`/clock` is added by `quizbot play`); a feature's
        # file route is typed as `/<command> PATH …` (`/clinic PATH`, `/import PATH`).
        self.extra: dict[str, ConsoleCommand] = {
            "as": _as,
            "press": _press,
            "cancel": _cancel,
            "quit": _quit,
            "exit": _quit,
        }
        # A form being filled in: each line typed is the next field's value.
        self.form: Form | None = None
        self.filled: dict[str, str] = {}

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    async def handle(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            if self.form is not None and not line.startswith("/"):
                await self._fill(line)
            elif line.startswith("/"):
                name, _, rest = line[1:].partition(" ")
                if (extra := self.extra.get(name.lower())) is not None:
                    await extra(self, rest.split())
                elif (route := self.quiz.registry.file_route(name.lower())) and rest.strip():
                    await self.send_file(route, rest.split())
                else:
                    await self._quiz(line[1:])
            else:
                await self._answer(line)
        except UserFacingError as exc:
            self.say(f"! {exc}")

    async def _quiz(self, text: str) -> None:
        settings = await self.service.store.settings.get(self.channel)
        inv = Invocation(self.channel, self.user, settings.locale, EVERYONE)
        for reply in await run_command(self.commands, self.service, inv, text):
            if reply.form is not None:
                self._open(reply.form)
            elif reply.private:
                await self.chat.send_private(self.channel, self.user, reply.message)
                asks = [b.post_id for b in reply.message.buttons if b.action == ANSWER]
                if asks:  # a private question (practice): a bare answer is for it next
                    self.practice[self.user.key] = asks[0]
            else:  # in the channel, as Slack and Discord post it (its buttons pressable)
                await self.chat.post_message(self.channel, reply.message)

    async def _answer(self, text: str) -> None:
        settings = await self.service.store.settings.get(self.channel)
        t = translator(settings.locale)
        choice = _parse_choice(text)
        if choice is None:
            self.say("! " + t("Type a choice number (1-4) or letter (A-D), or /help."))
            return
        if (practice := self.practice.get(self.user.key)) is not None:
            await self.click(Button("", ANSWER, practice, str(choice)))
            post = await self.service.store.posts.get(practice)
            if post is None or post.state is PostState.CLOSED:  # answered (an invalid pick waits)
                del self.practice[self.user.key]
            return
        post = await self.service.open_post(self.channel)
        if post is None:
            self.say("! " + t("No open question: type /ask to get one."))
            return
        await self.click(Button("", ANSWER, post.id, str(choice)))

    async def click(self, button: Button) -> Message | None:
        """Click `button` as the current user; the reply is shown privately (or the form it
        opens is asked for, one field per line)."""
        click = Click.parse(button.encode(), self.user, self.channel, admin=EVERYONE)
        if click is None:
            return None
        if self.interactions.opens_form(click.kind):
            result = await self.interactions.open_form(click)
            if isinstance(result, Form):
                self._open(result)
                return None
            message = result
        else:
            message = await self.interactions.click(click)
        await self.chat.send_private(self.channel, self.user, message)
        return message

    # -- forms ---------------------------------------------------------------------------

    def _open(self, form: Form, keep: dict[str, str] | None = None) -> None:
        self.form, self.filled = form, dict(keep or {})
        self.say(f"  == {form.title} ==  (one line per field; /cancel to stop)")
        self._prompt()

    def _next_field(self) -> FormField | None:
        assert self.form is not None
        return next((f for f in self.form.fields if f.name not in self.filled), None)

    def _prompt(self) -> None:
        field = self._next_field()
        if field is not None:
            hint = f" ({field.placeholder})" if field.placeholder else ""
            self.say(f"  {field.label}{hint}:")

    async def _fill(self, line: str) -> None:
        field = self._next_field()
        assert self.form is not None and field is not None
        self.filled[field.name] = "" if line.strip() == "-" else line.strip()
        if self._next_field() is not None:
            self._prompt()
            return
        form, values = self.form, self.filled
        self.form, self.filled = None, {}
        submission = Submission.parse(form.id, values, self.user, self.channel, admin=EVERYONE)
        if submission is None:
            return
        reply = await self.interactions.submit(submission)
        if reply.errors:
            for name, problem in reply.errors.items():
                self.say(f"! {name}: {problem}")
            keep = {k: v for k, v in values.items() if k not in reply.errors}
            self._open(form, keep)
            return
        if reply.message is not None:
            await self.chat.send_private(self.channel, self.user, reply.message)

    async def send_file(self, route: FileRoute, args: list[str]) -> None:
        """`/<command> PATH [more]`: the member's own file, through the feature's route
        (read where it is, never deleted)."""
        locale = await self.service.locale_for(self.channel)
        t = translator(locale)
        path = await asyncio.to_thread(lambda: Path(args[0]).expanduser())
        try:
            size = (await asyncio.to_thread(path.stat)).st_size
        except OSError:
            self.say("! " + t("{path}: no such file.", path=cut(args[0])))
            return
        sent = SentFile(
            path.name, size, self.user, self.channel, locale, EVERYONE, text=" ".join(args[1:])
        )
        work = await accepted(route, sent, self.service.problems)
        reply = _PrivateLines(self)
        if isinstance(work, Message):
            await reply.result(work)
            return
        await handle(work, path, reply, sent, self.service.problems)

    async def run(self, lines: AsyncIterator[str], *, echo: bool) -> None:
        async for line in lines:
            if echo and line.strip():
                self.say(f"{self.user.display}> {line.rstrip()}")
            await self.handle(line)
            if self.done:
                break
        await self.service.drain_updates()


def _user(name: str) -> UserRef:
    return UserRef(Platform.CONSOLE, WORKSPACE, name.lower(), name)


def _parse_choice(text: str) -> int | None:
    text = text.strip().rstrip(".").upper()
    if text.isdigit() and int(text) >= 1:
        return int(text) - 1
    if len(text) == 1 and text in LETTERS:
        return LETTERS.index(text)
    return None


async def _as(session: ConsoleSession, args: list[str]) -> None:
    if not args:
        session.say("! usage: /as NAME   (act as another user, e.g. /as bob)")
        return
    session.user = _user(args[0])
    session.say(f"(you are now {session.user.display})")


async def _press(session: ConsoleSession, args: list[str]) -> None:
    kind = args[0].lower() if args else None
    buttons = [b for b in session.chat.pressable if kind is None or b.action == kind]
    if not buttons:
        session.say("! no button to press" + (f" of kind {kind!r}" if kind else "") + " yet")
        return
    await session.click(buttons[-1])


class _PrivateLines:
    """The clinic's private answers in the terminal."""

    def __init__(self, session: ConsoleSession) -> None:
        self.session = session

    async def status(self, message: Message) -> None:
        s = self.session
        t = translator(await s.service.locale_for(s.channel))
        s.say("  " + t("(only {name} can see this)", name=s.user.display) + f" {message.body}")

    async def result(self, message: Message) -> None:
        s = self.session
        await s.chat.send_private(s.channel, s.user, replace(message, image=None))
        if message.image is not None:
            t = translator(await s.service.locale_for(s.channel))
            s.say("    " + t("plot: {path}", path=s.chat.save_image(message.image, t)))


async def _cancel(session: ConsoleSession, args: list[str]) -> None:
    if session.form is not None:
        session.form, session.filled = None, {}
        session.say("(form cancelled)")


async def _quit(session: ConsoleSession, args: list[str]) -> None:
    session.done = True


async def stdin_lines(stream: TextIO, prompt: Callable[[], str] | None) -> AsyncIterator[str]:
    """Lines from a stream without blocking the event loop."""
    loop = asyncio.get_running_loop()
    while True:
        if prompt is not None:
            print(prompt(), end="", flush=True, file=sys.stdout)
        line = await loop.run_in_executor(None, stream.readline)
        if not line:
            return
        yield line
