"""Every marked string has a Greek translation, and the compiled catalogs match the .po."""

from __future__ import annotations

import re
from io import BytesIO
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

from bot.domain import Locale
from bot.i18n import LOCALEDIR, translator

ROOT = Path(__file__).resolve().parents[1]
KEYWORDS = {"t": None, "n": (1, 2), "N_": None}
SOURCES = ["bot", "adapters"]
PLACEHOLDER = re.compile(r"\{(\w+)[^}]*\}")


# The dashboard's templates call the same ``t("…")`` / ``t.n(…)`` (Jinja2's extractor).
TEMPLATES = [("**/templates/**.html", "jinja2.ext:babel_extract")]


def marked_strings() -> set[str]:
    found: set[str] = set()
    for package in SOURCES:
        for _, _, msg, _, _ in extract_from_dir(
            str(ROOT / package), method_map=[("**.py", "python"), *TEMPLATES], keywords=KEYWORDS
        ):
            found.add(msg[0] if isinstance(msg, tuple) else msg)
    return found


def test_the_dashboards_templates_are_read_for_marked_strings() -> None:
    assert "Sign in to the quiz dashboard" in marked_strings()


def po_files(lang: str) -> list[Path]:
    return sorted((LOCALEDIR / lang / "LC_MESSAGES").glob("*.po"))


def greek_catalog() -> dict[str, object]:
    out: dict[str, object] = {}
    for po in po_files("el"):
        with po.open("rb") as fp:
            for m in read_po(fp):
                if m.id:
                    out[m.id[0] if isinstance(m.id, tuple) else m.id] = m.string
    return out


def test_every_marked_string_has_a_greek_translation() -> None:
    catalog = greek_catalog()
    missing = sorted(s for s in marked_strings() if not catalog.get(s))
    assert missing == [], "add these to a .po under bot/locale/el/LC_MESSAGES: " + repr(missing)


def test_greek_translations_keep_the_placeholders() -> None:
    for msgid, msgstr in greek_catalog().items():
        strings = msgstr if isinstance(msgstr, tuple) else (msgstr,)
        for s in strings:
            assert set(PLACEHOLDER.findall(str(s))) <= set(PLACEHOLDER.findall(msgid)), msgid


@pytest.mark.parametrize("po", po_files("el"), ids=lambda p: p.name)
def test_compiled_catalog_is_up_to_date(po: Path) -> None:
    mo = po.with_suffix(".mo")
    assert mo.exists(), f"run `make catalogs` to compile {po.name}"
    with po.open("rb") as fp:
        source = read_po(fp)
    buf = BytesIO()
    write_mo(buf, source)
    buf.seek(0)
    expected = {_key(m.id): _key(m.string) for m in read_mo(buf) if m.id}
    with mo.open("rb") as fp:
        actual = {_key(m.id): _key(m.string) for m in read_mo(fp) if m.id}
    assert actual == expected, f"{mo.name} is stale: run `make catalogs`"


def test_translator_formats_plurals_and_falls_back_to_english() -> None:
    el = translator(Locale.EL)
    assert el.n("{count} player", "{count} players", 1) == "1 παίκτης"
    assert el.n("{count} player", "{count} players", 3) == "3 παίκτες"
    assert el("not in any catalog {x}", x=1) == "not in any catalog 1"
    assert translator(Locale.EN)("Leaderboard") == "Leaderboard"


def test_platform_locale_tags_map_to_supported_locales() -> None:
    assert Locale.parse("el-GR") is Locale.EL
    assert Locale.parse("en_US") is Locale.EN
    assert Locale.parse("de") is None


def _key(value: object) -> object:
    return tuple(value) if isinstance(value, list | tuple) else value
