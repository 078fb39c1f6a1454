"""User-visible strings through gettext catalogs (``bot/locale/<lang>/LC_MESSAGES``).

English is the source language. Each feature keeps its own catalog file in
``<lang>/LC_MESSAGES/*.po`` (``quizbot.po`` for the core), compiled to ``.mo`` with
``make catalogs``; all of a locale's catalogs are chained. Tests keep ``.po`` and ``.mo`` in
step and check that every marked string has a Greek translation. Strings are marked with
``t("...")`` / ``t.n(singular, plural, n)`` so ``pybabel extract -k t -k n:1,2`` finds them.
"""

from __future__ import annotations

import gettext
from functools import cache
from pathlib import Path

from bot.domain import Locale

LOCALEDIR = Path(__file__).parent / "locale"


class Translator:
    def __init__(self, locale: Locale) -> None:
        self.locale = locale
        self._t = _catalog(locale)

    def __call__(self, message: str, /, **kwargs: object) -> str:
        text = self._t.gettext(message)
        return text.format(**kwargs) if kwargs else text

    def n(self, singular: str, plural: str, count: int, /, **kwargs: object) -> str:
        text = self._t.ngettext(singular, plural, count)
        return text.format(count=count, **kwargs)


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


def N_(message: str) -> str:
    """Mark a string for extraction; it is translated later with a `Translator`."""
    return message
