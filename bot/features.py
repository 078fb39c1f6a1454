"""Features: each one module that says, once, what it adds to the quiz.

A feature module exports a factory ``feature(parts) -> Feature``. The `Feature` lists its
commands (with options, admin rule and help text), its button kinds and forms with their
handlers, its reveal hooks, the files members may send it, its background services and its
health checks. The composition root (`bot/app.py` `FEATURES`) lists the factories; a
`Registry` collects what they return, and the core (`QuizService`, `Interactions`,
`run_command`) and every adapter read that one registry — Discord's `/quiz` is generated
from its commands, Slack and the console route clicks and files through it.

Adding a button kind, a command or a file route is done in the feature's own module (plus
its catalog entries and tests); `docs/architecture.md` ("Adding a feature") has an example.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from bot.commands import Command, CommandSet
from bot.domain import ChannelRef, Locale, UserRef
from bot.messages import ANSWER, KIND, Message
from bot.quiz import (
    AnswerListener,
    BoardNote,
    OutcomeRenderer,
    QuizService,
    RevealButton,
    RevealListener,
)

if TYPE_CHECKING:
    from bot.clock import Clock
    from bot.config import Settings
    from bot.deliveries import Deliveries
    from bot.forms import Form, Submission, SubmitReply
    from bot.intake import FileRoute
    from bot.interactions import Click, Interactions
    from bot.metrics import QuizMetrics
    from bot.pages import Page
    from bot.ports import FeatureStore, Runner
    from bot.team import QuestionChecker, QuestionFileReader

ClickHandler = Callable[["Click", Locale], Awaitable[Message]]
FormOpener = Callable[["Click", Locale], Awaitable["Form | Message"]]
SubmitHandler = Callable[["Submission", Locale], Awaitable["SubmitReply"]]
HealthCheck = Callable[[], Awaitable[bool]]
# A line a feature adds to a member's `/quiz stats` (their results apart from the boards'):
# (channel, member, locale) -> the line, or None when there is nothing to say.
StatsLine = Callable[["ChannelRef", "UserRef", Locale], Awaitable[str | None]]
# The channels, of those given, where scheduled questions wait (a live round runs there).
# A line of the admin report (`/quiz report`) about a channel: a running season, the teams.
ReportNote = Callable[["ChannelRef", Locale], Awaitable[str | None]]
ChannelHold = Callable[[Collection[ChannelRef]], Awaitable[set[ChannelRef]]]
S = TypeVar("S")
T = TypeVar("T")


class Ticker(Protocol):
    """Work a feature does on the scheduler's pass (the same clock, the same `tick`)."""

    async def tick(self, now: datetime) -> object: ...

    async def next_event(self, now: datetime) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class ButtonKind:
    """A kind of button (``quiz:<name>:<post>:<value>``) and what a click on it does:
    `click` answers privately, or `form` opens a form instead."""

    name: str
    click: ClickHandler | None = None
    form: FormOpener | None = None
    admin: str = ""  # only admins may press it: the command it belongs to (refusal words)
    about_post: bool = True  # False: post id 0, the value names the subject

    def __post_init__(self) -> None:
        if not KIND.fullmatch(self.name) or (self.click is None) == (self.form is None):
            raise ValueError(f"button kind {self.name!r}: a short name and one of click/form")


@dataclass(frozen=True, slots=True)
class FormKind:
    """The submissions of forms whose `Form.kind` is `name`."""

    name: str
    submit: SubmitHandler
    admin: str = ""


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    commands: Sequence[Command] = ()
    buttons: Sequence[ButtonKind] = ()
    forms: Sequence[FormKind] = ()
    files: Sequence[FileRoute] = ()
    on_reveal: Sequence[RevealListener] = ()
    reveal_buttons: Sequence[RevealButton] = ()
    outcome_renderers: Sequence[OutcomeRenderer] = ()
    # Lines under a member's board and stats (`QuizService.board_notes`).
    board_notes: Sequence[BoardNote] = ()
    # Long-lived work, started in the order listed after every feature is built, and
    # stopped (in reverse) before the store and the platform clients it uses.
    services: Sequence[AbstractAsyncContextManager[Any]] = ()
    checks: dict[str, HealthCheck] = field(default_factory=dict)  # /healthz
    # Web pages below /w/<platform>/<workspace>/ (`bot.pages`; the dashboard serves them).
    pages: Sequence[Page] = ()
    # Due work the scheduler's pass also does (`tick(now)`, `next_event(now)`: a live
    # round's steps), and channels whose scheduled questions wait meanwhile.
    tickers: Sequence[Ticker] = ()
    holds: Sequence[ChannelHold] = ()
    stats: Sequence[StatsLine] = ()  # lines of `/quiz stats` (live rounds' points, apart)
    on_answer: Sequence[AnswerListener] = ()  # told of every click's outcome (App Home)
    report_notes: Sequence[ReportNote] = ()  # lines under the admin report (seasons, teams)


class _Collected(Generic[T]):
    """A `Registry` attribute: the items every feature gave under the same name, in order."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, registry: Registry, owner: type | None = None) -> tuple[T, ...]:
        return registry._all(self.name)


class Registry:
    """What every feature added, in the order the composition root lists them."""

    def __init__(self, features: Iterable[Feature] = ()) -> None:
        self.features: list[Feature] = []
        self.commands = CommandSet()
        self.buttons: dict[str, ButtonKind] = {}
        self.forms: dict[str, FormKind] = {}
        self._collected: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._replanners: list[Callable[[], object]] = []
        for feature in features:
            self.add(feature)

    def add(self, feature: Feature) -> None:
        if any(f.name == feature.name for f in self.features):
            raise ValueError(f"feature {feature.name!r} is registered twice")
        for command in feature.commands:
            self.commands.add(command)
        for button in feature.buttons:
            if button.name == ANSWER or button.name in self.buttons:
                raise ValueError(f"button kind {button.name!r} is registered twice")
            self.buttons[button.name] = button
        for form in feature.forms:
            if form.name in self.forms:
                raise ValueError(f"form kind {form.name!r} is registered twice")
            self.forms[form.name] = form
        paths = {p.path for p in self.pages}
        for page in feature.pages:
            if page.path in paths:
                raise ValueError(f"page {page.path!r} is registered twice")
            paths.add(page.path)
        self.features.append(feature)

    def _all(self, attribute: str) -> tuple[Any, ...]:
        # Read on hot paths (each answer's outcome renderers): kept until a feature is added.
        key = (attribute, len(self.features))
        found = self._collected.get(key)
        if found is None:
            found = tuple(item for f in self.features for item in getattr(f, attribute))
            self._collected[key] = found
        return found

    files: _Collected[FileRoute] = _Collected()
    on_reveal: _Collected[RevealListener] = _Collected()
    reveal_buttons: _Collected[RevealButton] = _Collected()
    outcome_renderers: _Collected[OutcomeRenderer] = _Collected()
    board_notes: _Collected[BoardNote] = _Collected()
    on_answer: _Collected[AnswerListener] = _Collected()
    pages: _Collected[Page] = _Collected()
    stats: _Collected[StatsLine] = _Collected()
    report_notes: _Collected[ReportNote] = _Collected()
    tickers: _Collected[Ticker] = _Collected()

    def on_replan(self, listener: Callable[[], object]) -> None:
        """Call `listener` whenever a ticker's next event moves (`replan`): the scheduler
        plans its wake-up at the nearest one again."""
        self._replanners.append(listener)

    def replan(self) -> None:
        """A feature's next due work moved in this process (a season started, or ended
        early): whoever plans the tickers' wake-ups plans them again. Other replicas see
        it at their next pass."""
        for listener in tuple(self._replanners):
            listener()

    async def held(self, channels: Collection[ChannelRef]) -> set[ChannelRef]:
        """Those of `channels` whose scheduled questions wait (a feature holds them)."""
        out: set[ChannelRef] = set()
        for hold in self._all("holds"):
            out |= await hold(channels)
        return out

    services: _Collected[AbstractAsyncContextManager[Any]] = _Collected()

    @property
    def checks(self) -> dict[str, HealthCheck]:
        return {k: v for f in self.features for k, v in f.checks.items()}

    def service(self, kind: type[S]) -> S | None:
        """The first service of `kind` a feature runs (the console's clock drives the
        scheduler; a script waits for the demo dispatcher)."""
        return next((s for s in self.services if isinstance(s, kind)), None)

    def file_route(self, command: str) -> FileRoute | None:
        """The route of files sent with `command` (Discord's attachment option)."""
        return next((r for r in self.files if r.command == command), None)

    def file_route_for(self, name: str) -> FileRoute | None:
        """The route a file sent on its own takes, by its name (a Slack DM)."""
        return next((r for r in self.files if r.accepts(name)), None)


@dataclass(frozen=True, slots=True)
class Parts:
    """What a feature's factory may use to build itself."""

    service: QuizService
    store: FeatureStore
    clock: Clock
    settings: Settings
    registry: Registry
    metrics: QuizMetrics
    runner: Runner | None = None  # None: no demos and no clinic in this process
    checker: QuestionChecker | None = None  # the bank's validator with the team rules
    reader: QuestionFileReader | None = None  # question files: YAML, CSV, Open Trivia DB
    demos: Any = None  # the demo catalog (`gpu_runner.demos.default_registry()`)
    wakeups: bool = True  # APScheduler wakes the scheduler (False: explicit reconciles only)


FeatureFactory = Callable[[Parts], Feature]


@dataclass(frozen=True, slots=True)
class Quiz:
    """The core as every adapter is given it (`bot.app.assemble` builds it): the use cases,
    the features' registry, the click use case and the stored-request log."""

    service: QuizService
    registry: Registry
    interactions: Interactions
    deliveries: Deliveries

    @property
    def commands(self) -> CommandSet:
        return self.registry.commands


__all__ = [
    "ButtonKind",
    "ChannelHold",
    "ClickHandler",
    "Feature",
    "FeatureFactory",
    "FormKind",
    "FormOpener",
    "HealthCheck",
    "Parts",
    "Quiz",
    "Registry",
    "StatsLine",
    "SubmitHandler",
    "Ticker",
]
