"""Templates (Jinja2, autoescaped) and the filters they use: the chat's markdown subset
as HTML, charts as SVG, dates. Every string a page shows goes through the bot's gettext
catalogs: templates call ``t("…")`` and ``t.n(…)`` with the request's translator."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from adapters.web.dashboard import svg

TEMPLATES = Path(__file__).parent / "templates"
_BOLD = re.compile(r"\*([^*\n]+)\*")
_CODE = re.compile(r"`([^`\n]+)`")


def chat_markdown(text: str) -> Markup:
    """The bot's message markdown (``*bold*``, ```` `code` ````, fenced blocks, ``- ``
    lists) as HTML; everything escaped first, so a member's text stays text."""
    out: list[str] = []
    in_block = False
    items: list[str] = []

    def flush() -> None:
        if items:
            out.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
            items.clear()

    for line in str(text).split("\n"):
        if line.strip().startswith("```"):
            flush()
            out.append("</pre>" if in_block else "<pre>")
            in_block = not in_block
            continue
        safe = str(escape(line))
        if in_block:
            out.append(safe + "\n")
            continue
        safe = _CODE.sub(r"<code>\1</code>", _BOLD.sub(r"<strong>\1</strong>", safe))
        if line.startswith("- "):
            items.append(safe[2:])
            continue
        flush()
        if safe.strip():
            out.append(f"<p>{safe}</p>")
    flush()
    if in_block:
        out.append("</pre>")
    return Markup("".join(out).replace("<pre>\n", "<pre>"))


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["chat"] = chat_markdown
    env.globals["chart"] = svg.render
    env.filters["when"] = _when
    return env


def _when(value: Any) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if value is not None else "–"


__all__ = ["TEMPLATES", "chat_markdown", "environment"]
