"""Checks that Greek output is Greek, for every package's tests: no msgid missing from the
catalogs while it rendered, no English sentence left, Greek numbers in plots, and the texts
a matplotlib figure draws."""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable
from functools import cache

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from bot.domain import Locale
from bot.i18n import catalog


def texts(fig: Figure) -> list[Text]:
    """Every text the PNG shows: figure texts, titles, labels, ticks of drawn axes, notes,
    legends."""
    FigureCanvasAgg(fig).draw()
    found: list[Text] = [*fig.texts]
    if fig._suptitle is not None:
        found.append(fig._suptitle)
    for ax in fig.axes:
        found += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.axison:
            found += [ax.xaxis.label, ax.yaxis.label]
            # Tick labels inside the view only (matplotlib also lays out the next ones).
            x0, x1 = sorted(ax.get_xlim())
            y0, y1 = sorted(ax.get_ylim())
            found += [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
            found += [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
        legend = ax.get_legend()
        if legend is not None:
            found += [*legend.get_texts(), legend.get_title()]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def prose(report: str) -> str:
    """The report without code (spans and blocks keep Python's and torch's own format) and
    without version numbers."""
    text = re.sub(r"```.*?```", " ", report, flags=re.DOTALL)
    text = re.sub(r"`[^`]*`", " ", text)
    return re.sub(r"(torch|CUDA) \d+(\.\d+)*\S*", " ", text)


def greek_numbers_in_plot(demo: str, words: list[str]) -> None:
    """A decimal comma and a thousands dot in the Greek plot, ticks included (versions and
    event names such as ``fwd 1.2`` aside)."""
    for word in words:
        text = re.sub(r"\b(fwd|bwd) \d+\.\d+", " ", prose(word))
        assert not re.findall(r"\d\.(?=\d)(?!\d{3}(?!\d))", text), (demo, word)
        assert not re.findall(r"\d{2},\d{3}(?!\d)", text), (demo, word)  # "15,728"


# English words that no Greek sentence keeps: one of them in Greek prose is untranslated
# text. Terms the glossary keeps in English (allocator, cache, pool, batch, ...) and API
# names are not among them.
_WORDS = """
the of and is are was were to in on at by for with from into under over than then
when while each every its it this that these those an only not but or so be been
has have had after before same new all both per which what whose can cannot does
would will
"""
ENGLISH_WORDS = frozenset(_WORDS.split())


def english_words(text: str) -> list[str]:
    """The English function words of `text`'s prose; identifiers (``reserved_bytes.all``,
    ``all-reduce``, ``x[:16]``) are code, not words."""
    words = (w.strip(",;:·!?()*\"'") for w in prose(text).split())
    return [w for w in words if w.isalpha() and w.isascii() and w.lower() in ENGLISH_WORDS]


def check_greek_is_greek(el_report: str, plot_texts: list[str] | None = None) -> None:
    """No English sentence in the Greek report or plot (code spans aside)."""
    for text in [el_report, *(plot_texts or [])]:
        assert not english_words(text), (english_words(text), text)


class CatalogMisses(gettext.NullTranslations):
    """The end of the Greek catalog chain: records every msgid no catalog translated."""

    def __init__(self) -> None:
        super().__init__()
        self.missed: list[str] = []

    def gettext(self, message: str) -> str:
        self.missed.append(message)
        return message

    def ngettext(self, msgid1: str, msgid2: str, n: int) -> str:
        self.missed.append(msgid1)
        return msgid1 if n == 1 else msgid2

    def pgettext(self, context: str, message: str) -> str:
        self.missed.append(f"{context}|{message}")
        return message

    def npgettext(self, context: str, msgid1: str, msgid2: str, n: int) -> str:
        self.missed.append(f"{context}|{msgid1}")
        return msgid1 if n == 1 else msgid2


@cache
def catalog_misses() -> CatalogMisses:
    """Installed once per process, at the end of the Greek chain (gettext's own fallback)."""
    misses = CatalogMisses()
    catalog(Locale.EL).add_fallback(misses)
    return misses


def greek_misses(run: Callable[[], object]) -> list[str]:
    """The msgids a Greek rendering looked up and found in no catalog."""
    misses = catalog_misses()
    start = len(misses.missed)
    run()
    return misses.missed[start:]
