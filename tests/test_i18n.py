"""One translation mechanism for every package: every marked string of bot, adapters,
gpu_runner and questions has a Greek translation, the compiled catalogs match the .po,
`Text` values render per locale, and no Greek is left in Python source."""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_keywords
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

from bot.domain import Locale
from bot.formats import Size
from bot.i18n import AND, LOCALEDIR, Join, Text, translator

ROOT = Path(__file__).resolve().parents[1]
# The keywords of bot/i18n.py's docstring, as pybabel takes them (`make extract`).
KEYWORDS = {"t": None, "n": (1, 2), "pgettext": ((1, "c"), 2), "N_": None, "Text": None}
SOURCES = ["bot", "adapters", "gpu_runner", "questions"]
# Still written as inline English/Greek pairs; their conversion moves them to the catalogs
# (and drops them from here).
PENDING: tuple[str, ...] = ()
PLACEHOLDER = re.compile(r"\{(\w+)[^}]*\}")
GREEK = re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]")
# Input vocabularies: Greek a member may type (weekday names, the lint's word lists).
GREEK_ALLOWED = {"bot/scheduling/recurrence.py", "questions/lint.py"}

Key = tuple[str | None, str]  # (msgctxt, msgid)


# The dashboard's templates call the same ``t("…")`` / ``t.n(…)`` (Jinja2's extractor).
TEMPLATES = [("**/templates/**.html", "jinja2.ext:babel_extract")]


def marked_strings() -> dict[Key, str]:
    """Every marked (context, msgid), with where it was found."""
    found: dict[Key, str] = {}
    for package in SOURCES:
        for path, line, msg, _, context in extract_from_dir(
            str(ROOT / package),
            method_map=[("**.py", "python"), *TEMPLATES],
            keywords=KEYWORDS,
        ):
            where = f"{package}/{path}"
            if where.startswith(PENDING):
                continue
            found[(context, msg[0] if isinstance(msg, tuple) else msg)] = f"{where}:{line}"
    return found


def test_the_dashboards_templates_are_read_for_marked_strings() -> None:
    assert (None, "Sign in to the quiz dashboard") in marked_strings()


def po_files(lang: str) -> list[Path]:
    return sorted((LOCALEDIR / lang / "LC_MESSAGES").glob("*.po"))


def greek_entries() -> list[tuple[Path, Key, object]]:
    out: list[tuple[Path, Key, object]] = []
    for po in po_files("el"):
        with po.open("rb") as fp:
            for m in read_po(fp):
                if m.id:
                    msgid = str(m.id[0] if isinstance(m.id, tuple | list) else m.id)
                    out.append((po, (m.context, msgid), m.string))
    return out


def greek_catalog() -> dict[Key, object]:
    return {key: string for _, key, string in greek_entries()}


def test_every_marked_string_has_a_greek_translation() -> None:
    catalog = greek_catalog()
    missing = sorted(
        f"{where}: {key[1]!r}" + (f" (context {key[0]!r})" if key[0] else "")
        for key, where in marked_strings().items()
        if not catalog.get(key)
    )
    assert missing == [], "add these to a .po under bot/locale/el/LC_MESSAGES: " + repr(missing)


def test_every_package_marks_its_strings_for_extraction() -> None:
    packages = {where.split("/")[0] for where in marked_strings().values()}
    assert packages == {p for p in SOURCES if not any(q.startswith(p) for q in PENDING)}


def test_every_marked_call_is_one_pybabel_extracts() -> None:
    """pybabel skips what it cannot read as text: an f-string msgid (the values go in as
    placeholders; placeholder values may be f-strings), a context that is not a literal,
    and a string given to ``translator(locale)(...)`` directly (bind it: ``t = ...``)."""
    found = []
    for where, node in _source_calls():
        if _literal_given_to_a_translator_call(node):
            found.append(f"{where}:{node.lineno}: translator(...)(text)")
        if _called_name(node) not in KEYWORDS:
            continue
        spec = KEYWORDS[_called_name(node)] or (1,)
        for item in spec:
            i = item if isinstance(item, int) else item[0]
            arg = node.args[i - 1] if i <= len(node.args) else None
            if isinstance(arg, ast.JoinedStr):
                found.append(f"{where}:{node.lineno}: f-string")
            forwards = where == "bot/i18n.py"  # the mechanism passes contexts on
            if not isinstance(item, int) and not _is_text(arg) and not forwards:
                found.append(f"{where}:{node.lineno}: context not a literal")
    assert found == [], found


def test_pybabel_finds_every_marked_call_of_the_source() -> None:
    """pybabel reads tokens, not the syntax tree: a keyword's name used as a variable inside
    a marked call's arguments (``n``), or a call inside an f-string, hides a msgid from it.
    Every literal msgid the syntax tree shows must be in pybabel's extraction."""
    extracted = set(marked_strings())
    lost = []
    for where, node in _source_calls():
        key = _literal_key(node)
        if key is not None and key not in extracted:
            lost.append(f"{where}:{node.lineno}: {key[1]!r}")
    assert lost == [], "pybabel does not see these (rename the variable, or move the call): " + (
        repr(lost)
    )


def _source_calls() -> Iterator[tuple[str, ast.Call]]:
    """Every call in the packages whose strings are translated, with its file."""
    for package in SOURCES:
        for path in (ROOT / package).rglob("*.py"):
            where = str(path.relative_to(ROOT))
            if where.startswith(PENDING):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    yield where, node


def _literal_key(node: ast.Call) -> Key | None:
    """(context, msgid) of a marked call whose msgid (and context) are literals."""
    if _called_name(node) not in KEYWORDS:
        return None
    spec = KEYWORDS[_called_name(node)] or (1,)
    context, msgid = None, None
    for item in spec:
        i = item if isinstance(item, int) else item[0]
        arg = node.args[i - 1] if i <= len(node.args) else None
        if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str):
            return None
        if isinstance(item, int):
            msgid = arg.value if msgid is None else msgid
        else:
            context = arg.value
    return None if msgid is None else (context, msgid)


def _is_text(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _literal_given_to_a_translator_call(call: ast.Call) -> bool:
    inner = call.func
    return (
        isinstance(inner, ast.Call)
        and _called_name(inner) == "translator"
        and bool(call.args)
        and _is_text(call.args[0])
    )


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def test_a_msgid_in_two_catalog_files_has_one_translation() -> None:
    seen: dict[Key, tuple[Path, object]] = {}
    for po, key, string in greek_entries():
        if key in seen:
            first, translation = seen[key]
            assert translation == string, f"{key} in {first.name} and {po.name} differ"
        seen[key] = (po, string)


def test_the_makefile_extracts_with_the_keywords_the_tests_check() -> None:
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(r"^I18N_KEYWORDS := (.+)$", makefile, re.MULTILINE)
    assert match, "the Makefile's extract target names its keywords in I18N_KEYWORDS"
    flags = shlex.split(match.group(1))
    names = [flags[i + 1] for i, flag in enumerate(flags) if flag == "-k"]
    assert parse_keywords(names) == KEYWORDS
    assert all(package in makefile for package in SOURCES)


def test_greek_translations_keep_the_placeholders() -> None:
    for po in po_files("el"):
        with po.open("rb") as fp:
            for m in read_po(fp):
                ids = m.id if isinstance(m.id, tuple | list) else (m.id,)
                known = {name for i in ids for name in PLACEHOLDER.findall(i)}
                if len(ids) > 1:
                    known.add("count")  # a plural's count is always filled
                strings = m.string if isinstance(m.string, tuple | list) else (m.string,)
                for s in strings:
                    assert set(PLACEHOLDER.findall(str(s))) <= known, (po.name, m.id)


def test_no_greek_in_python_source_outside_catalogs_and_tests() -> None:
    found = sorted(
        str(path.relative_to(ROOT))
        for package in [*SOURCES, "storage"]
        for path in (ROOT / package).rglob("*.py")
        if GREEK.search(path.read_text(encoding="utf-8"))
    )
    left = [p for p in found if p not in GREEK_ALLOWED and not p.startswith(PENDING)]
    assert left == [], "move this text to a catalog (bot/i18n.py says how): " + repr(left)


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


def test_a_text_renders_in_each_locale_with_its_values() -> None:
    text = Text("Channel leader: {name} with {points} points", name="Ada", points=3)
    assert text.render(Locale.EN) == "Channel leader: Ada with 3 points"
    assert text.render(Locale.EL) == "Πρώτος στο κανάλι: Ada με 3 πόντους"
    assert text == Text("Channel leader: {name} with {points} points", name="Ada", points=3)
    assert text != text.fill(points=4)


def test_a_text_fills_its_placeholders_with_other_localized_pieces() -> None:
    item = Text.n("{count} answer:", "{count} answers:", 2)
    outer = Text("Channel leader: {name} with {points} points", name=item, points=Size(1536))
    assert outer.render(Locale.EN) == "Channel leader: 2 answers: with 1.5 KiB points"
    assert outer.render(Locale.EL).startswith("Πρώτος στο κανάλι: 2 απαντήσεις:")
    assert outer.render(Locale.EL).endswith("1,5 KiB πόντους")


def test_a_join_uses_the_locales_separators() -> None:
    parts = [Text("below"), Text("above")]
    assert Join(parts).render(Locale.EN) == "below; above"
    assert Join(parts, end=".").render(Locale.EL) == "κάτω· πάνω."
    three = Join(["a", "b", "c"], ", ", last=AND)
    assert three.render(Locale.EN) == "a, b and c"
    assert three.render(Locale.EL) == "a, b και c"
    assert Join(["a"], ", ", last=AND).render(Locale.EL) == "a"


def test_a_context_gives_one_english_string_two_renderings() -> None:
    assert translator(Locale.EL).pgettext("clinic table column", "reserved") == "reserved"
    assert translator(Locale.EL)("reserved") == "δεσμευμένη (reserved)"
    assert Text.pgettext("list separator", "; ").render(Locale.EL) == "· "
    assert translator(Locale.EL).pgettext("list separator", "; ") == "· "
    assert Text.pgettext("list separator", "; ").render(Locale.EN) == "; "


def test_a_text_has_no_language_until_rendered() -> None:
    text = Text("below")
    with pytest.raises(TypeError, match="render"):
        str(text)
    with pytest.raises(TypeError, match="render"):
        f"{text}"
    with pytest.raises(AttributeError):
        text.msgid = "above"


def test_a_translator_renders_localized_placeholder_values() -> None:
    el = translator(Locale.EL)
    assert el("Channel leader: {name} with {points} points", name=Text("below"), points=2) == (
        "Πρώτος στο κανάλι: κάτω με 2 πόντους"
    )


def _key(value: object) -> object:
    return tuple(value) if isinstance(value, list | tuple) else value
