"""User-visible strings through gettext catalogs (``bot/locale/<lang>/LC_MESSAGES``): the one
translation mechanism of every package (the core, the adapters, the runner's demos, clinic
and simulator, the generated-question families).

English is the source language and the msgid. Each feature keeps its own catalog file in
``<lang>/LC_MESSAGES/<feature>.po``, compiled to ``.mo`` with ``make catalogs``; all of a
locale's catalogs are chained (a msgid is looked up in each file in name order). Tests keep
``.po`` and ``.mo`` in step and check that every marked string of every package has a Greek
translation (``tests/test_i18n.py``).

Two ways to mark a string, both found by ``make extract`` (pybabel):

- **At once**, where the locale is known: ``t = translator(locale)``, then
  ``t("Peak {size}", size=...)``, ``t.n("{count} player", "{count} players", n)``,
  ``t.pgettext("clinic table column", "reserved")`` (a msgctxt, where one English string
  needs two Greek renderings). ``N_("...")`` marks a string kept for later (``t(that)``).
- **Later**, as a value: ``Text("{head}: block cached", head=...)`` is an English msgid plus
  its placeholders' values, rendered per locale with ``.render(locale)``; ``Text.n`` and
  ``Text.pgettext`` as above. ``str()`` of a `Text` is an error: it has no language until
  rendered. A placeholder value may be a ``str`` or number (used as is), another `Text`, a
  `Join` of parts, or a deferred format of `bot.formats` (``Size(n, exact=True)``,
  ``Number(x, 1)``, ``Percent(f)``): each is rendered in the same locale. ``fill`` adds
  values to a template (``STEP.fill(head=...)``). `Join` joins parts with a separator that
  is itself translated (`LIST_SEPARATOR`: ``"; "`` in English, ``"· "`` in Greek, where
  ``;`` is the question mark; `AND` before the last part).

The extraction keywords: ``t``, ``n:1,2``, ``pgettext:1c,2``, ``N_``, ``Text`` (a call of
any of these names whose arguments are string literals; never an f-string, whose text is
not known until it runs: pass the values as placeholders; and no call inside an f-string,
which pybabel cannot see into). pybabel also takes a bare *name* among these keywords for
the start of a call, so never name a variable ``n`` or ``t`` inside the arguments of a
marked call: the test that compares pybabel's extraction with the source's calls says
where one was lost. ``{name}`` placeholders are ``str.format`` fields, filled only when
values are given; numbers a reader sees go through `bot.formats` (the locale's decimal
comma), not a format spec. Keep a ``%`` out of a msgid where it can (pass ``12.5 %`` as a
value): pybabel takes ``% o`` for a printf placeholder and refuses the translation.

A package outside ``bot`` (``gpu_runner``, ``questions``) imports this module and
`bot.formats` (both pure Python: the runner's child imports them, the bot never imports
the runner) and puts its catalog beside the core's, one file per feature:
``bot/locale/el/LC_MESSAGES/<feature>.po`` (``demo_reports.po``, ``clinic_report.po``,
``simulator.po``, ``families.po``, ...). A msgid found in two files must have the same
translation there (the test checks it), or a context of its own.
"""

from __future__ import annotations

import gettext
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol, TypeAlias

from bot.domain import Locale

LOCALEDIR = Path(__file__).parent / "locale"


class Localized(Protocol):
    """Anything that renders in a locale: `Text`, `Join`, `bot.formats.Size`, ..."""

    def render(self, locale: Locale, /) -> str: ...


Arg: TypeAlias = "str | int | float | Localized"


def _value(value: object, locale: Locale) -> object:
    """A placeholder's value: a `Localized` one rendered in `locale`, any other as is."""
    if isinstance(value, str | int | float):
        return value
    render = getattr(value, "render", None)
    return render(locale) if callable(render) else value


def _fill(template: str, args: Mapping[str, object], locale: Locale) -> str:
    if not args:
        return template
    return template.format(**{k: _value(v, locale) for k, v in args.items()})


class Translator:
    """A locale's catalogs, called at once: ``t("Leaderboard")``, ``t.n(...)``, ``t.pgettext(...)``.
    Placeholder values may be `Localized` (rendered in this translator's locale)."""

    def __init__(self, locale: Locale) -> None:
        self.locale = locale
        self._t = _catalog(locale)

    def __call__(self, message: str, /, **kwargs: object) -> str:
        return _fill(self._t.gettext(message), kwargs, self.locale)

    def n(self, singular: str, plural: str, count: int, /, **kwargs: object) -> str:
        text = self._t.ngettext(singular, plural, count)
        return _fill(text, {"count": count, **kwargs}, self.locale)

    def pgettext(self, context: str, message: str, /, **kwargs: object) -> str:
        """A msgid in a context (msgctxt): the same English, a different translation."""
        return _fill(self._t.pgettext(context, message), kwargs, self.locale)


class Text:
    """An English msgid and its placeholders' values, rendered in a locale later (see the
    module's docstring). Immutable; equal when msgid, context, plural and values are."""

    __slots__ = ("args", "context", "count", "msgid", "plural")

    msgid: str
    args: Mapping[str, Arg]
    context: str | None
    plural: str | None
    count: int

    def __init__(self, msgid: str, /, **args: Arg) -> None:
        self._set(msgid, args, None, None, 0)

    def _set(
        self,
        msgid: str,
        args: Mapping[str, Arg],
        context: str | None,
        plural: str | None,
        count: int,
    ) -> None:
        object.__setattr__(self, "msgid", msgid)
        object.__setattr__(self, "args", dict(args))
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "plural", plural)
        object.__setattr__(self, "count", count)

    @classmethod
    def pgettext(cls, context: str, msgid: str, /, **args: Arg) -> Text:
        """A msgid in a context (msgctxt), where one English string needs two renderings."""
        text = cls.__new__(cls)
        text._set(msgid, args, context, None, 0)
        return text

    @classmethod
    def n(cls, singular: str, plural: str, count: int, /, **args: Arg) -> Text:
        """A plural: ``Text.n("{count} OOM", "{count} OOMs", k)``; ``{count}`` is filled."""
        text = cls.__new__(cls)
        text._set(singular, args, None, plural, count)
        return text

    def fill(self, **args: Arg) -> Text:
        """The same msgid with more (or replaced) placeholder values."""
        text = Text.__new__(Text)
        text._set(self.msgid, {**self.args, **args}, self.context, self.plural, self.count)
        return text

    def render(self, locale: Locale, /) -> str:
        catalog = _catalog(locale)
        if self.plural is not None:
            found = catalog.ngettext(self.msgid, self.plural, self.count)
            return _fill(found, {"count": self.count, **self.args}, locale)
        if self.context is not None:
            return _fill(catalog.pgettext(self.context, self.msgid), self.args, locale)
        return _fill(catalog.gettext(self.msgid), self.args, locale)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Text is immutable: use fill() for other values ({name})")

    def _key(self) -> tuple[object, ...]:
        args = tuple(sorted(self.args.items()))
        return (self.msgid, self.context, self.plural, self.count, args)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Text) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        extra = "".join(
            f", {k}={v!r}" for k, v in (("context", self.context), ("plural", self.plural)) if v
        )
        return f"Text({self.msgid!r}{extra}, args={self.args!r})"

    def __str__(self) -> str:
        raise TypeError(f"{self!r} has no language yet: call .render(locale)")

    def __format__(self, spec: str) -> str:
        raise TypeError(f"{self!r} has no language yet: call .render(locale)")


# The separators of a list, translated like any text ("; " reads as a question mark in Greek).
LIST_SEPARATOR = Text.pgettext("list separator", "; ")
AND = Text.pgettext("list separator before the last item", " and ")


@dataclass(frozen=True, slots=True)
class Join:
    """Parts joined in the reader's locale: ``Join(parts)`` -> "a; b; c" (Greek with a
    middle dot); ``Join(parts, ", ", last=AND)`` -> "a, b and c"; `end` closes it."""

    parts: tuple[Arg, ...]
    separator: Arg = LIST_SEPARATOR
    last: Arg | None = None
    end: str = ""

    def __init__(
        self,
        parts: Iterable[Arg],
        separator: Arg = LIST_SEPARATOR,
        *,
        last: Arg | None = None,
        end: str = "",
    ) -> None:
        object.__setattr__(self, "parts", tuple(parts))
        object.__setattr__(self, "separator", separator)
        object.__setattr__(self, "last", last)
        object.__setattr__(self, "end", end)

    def render(self, locale: Locale, /) -> str:
        items = [str(_value(p, locale)) for p in self.parts]
        sep = str(_value(self.separator, locale))
        if self.last is not None and len(items) > 1:
            head = sep.join(items[:-1]) + str(_value(self.last, locale)) + items[-1]
        else:
            head = sep.join(items)
        return head + self.end


@cache
def _catalog(locale: Locale) -> gettext.NullTranslations:
    if locale is Locale.EN:
        return gettext.NullTranslations()
    files = sorted((LOCALEDIR / locale.value / "LC_MESSAGES").glob("*.mo"))
    if not files:
        raise FileNotFoundError(f"no compiled catalogs for {locale.value} in {LOCALEDIR}")
    chain: gettext.NullTranslations | None = None
    for path in files:
        with path.open("rb") as fp:
            catalog = gettext.GNUTranslations(fp)
        if chain is None:
            chain = catalog
        else:
            chain.add_fallback(catalog)
    assert chain is not None
    return chain


@cache
def translator(locale: Locale) -> Translator:
    return Translator(locale)


def catalog(locale: Locale) -> gettext.NullTranslations:
    """The locale's chained catalogs (tests add a fallback at the end to see misses)."""
    return _catalog(locale)


def N_(message: str) -> str:
    """Mark a string for extraction; it is translated later with a `Translator`."""
    return message


__all__ = [
    "AND",
    "LIST_SEPARATOR",
    "LOCALEDIR",
    "N_",
    "Arg",
    "Join",
    "Localized",
    "Text",
    "Translator",
    "catalog",
    "translator",
]
