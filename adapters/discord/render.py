"""Core `Message` -> Discord embed and button rows, within every Discord limit.

Pure functions: no client, no network. The output is the wire shape (`EmbedPayload`,
`RenderedButton` rows) and the JSON body of a message (`message_json`).

Limits (Discord API): embed title 256, description 4,096, 25 fields (name 256, value
1,024), footer 2,048, 6,000 characters in all; message content 2,000; 5 rows of 5 buttons;
button label 80; ``custom_id`` 100. Text over a limit is cut at a line or word boundary,
never inside a code block or a bold run, and ends with "…".
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NotRequired, TypedDict
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.messages import Button, ButtonStyle, Image, Message

log = logging.getLogger(__name__)

TITLE_LIMIT = 256
DESCRIPTION_LIMIT = 4096
FIELD_COUNT_LIMIT = 25
FIELD_NAME_LIMIT = 256
FIELD_VALUE_LIMIT = 1024
FOOTER_LIMIT = 2048
EMBED_TOTAL_LIMIT = 6000
CONTENT_LIMIT = 2000
ROW_LIMIT = 5
BUTTONS_PER_ROW = 5
LABEL_LIMIT = 80
CUSTOM_ID_LIMIT = 100
ATTACHMENT_DESCRIPTION_LIMIT = 1024

ELLIPSIS = "…"
COLOR = 0x5865F2  # Discord blurple

# Discord button styles: 1 primary, 2 secondary, 4 danger.
_STYLES = {ButtonStyle.PRIMARY: 1, ButtonStyle.DEFAULT: 2, ButtonStyle.DANGER: 4}


class EmbedFieldPayload(TypedDict):
    name: str
    value: str
    inline: bool


class EmbedFooterPayload(TypedDict):
    text: str


class EmbedImagePayload(TypedDict):
    url: str


class EmbedPayload(TypedDict):
    type: str
    color: int
    title: NotRequired[str]
    description: NotRequired[str]
    fields: NotRequired[list[EmbedFieldPayload]]
    footer: NotRequired[EmbedFooterPayload]
    image: NotRequired[EmbedImagePayload]


@dataclass(frozen=True, slots=True)
class RenderedButton:
    label: str
    custom_id: str
    style: int  # Discord's ButtonStyle value
    row: int


@dataclass(frozen=True, slots=True)
class Rendered:
    embed: EmbedPayload
    buttons: tuple[RenderedButton, ...]

    @property
    def rows(self) -> list[list[RenderedButton]]:
        rows: list[list[RenderedButton]] = []
        for b in self.buttons:
            while len(rows) <= b.row:
                rows.append([])
            rows[b.row].append(b)
        return rows

    def components(self) -> list[dict[str, object]]:
        """The ``components`` array: action rows (type 1) of buttons (type 2)."""
        return [
            {
                "type": 1,
                "components": [
                    {"type": 2, "style": b.style, "label": b.label, "custom_id": b.custom_id}
                    for b in row
                ],
            }
            for row in self.rows
        ]


# -- text ---------------------------------------------------------------------------------

_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.DOTALL)
_BOLD = re.compile(r"(?<![*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![*\w])")


def to_markdown(text: str) -> str:
    """The core's markdown subset -> Discord markdown: ``*bold*`` becomes ``**bold**``;
    ``_italic_``, code and ``- `` lists are the same. Code is left untouched."""
    parts = _CODE.split(text)
    return "".join(p if i % 2 else _BOLD.sub(r"**\1**", p) for i, p in enumerate(parts))


def truncate(text: str, limit: int) -> str:
    """`text` if it fits, else a prefix cut at a line or word boundary, with no unclosed
    code block, code span or bold run, ending in "…" — at most `limit` characters."""
    if len(text) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return ELLIPSIS[:limit]
    cut = text[: limit - len(ELLIPSIS)]
    # Prefer a boundary in the last quarter; a long word with no space is cut as is.
    floor = int(len(cut) * 0.75)
    for sep in ("\n", " "):
        i = cut.rfind(sep)
        if i >= floor:
            cut = cut[:i]
            break
    cut = _close_markup(cut.rstrip())
    return cut + ELLIPSIS


def _close_markup(text: str) -> str:
    # An unclosed code block is dropped whole: half a code block renders as a broken one.
    if text.count("```") % 2:
        text = text[: text.rfind("```")].rstrip()
    outside = _CODE.sub("", text)
    if outside.count("`") % 2:
        i = text.rfind("`")
        text = text[:i] + text[i + 1 :]
    if _CODE.sub("", text).count("**") % 2:
        i = text.rfind("**")
        text = text[:i] + text[i + 2 :]
    return text.rstrip()


# -- close time ---------------------------------------------------------------------------

# `bot.render.local_time` writes "2027-03-29 09:30 (Europe/Athens)" into the footer; Discord
# renders a `<t:…>` timestamp in each reader's own time, so the embed shows both.
_LOCAL_TIME = re.compile(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}) \(([\w+\-/]+)\)")


def close_time(footer: str) -> datetime | None:
    """The close time written by `bot.render.local_time` in a question footer, if any."""
    m = _LOCAL_TIME.search(footer)
    if m is None:
        return None
    try:
        zone = ZoneInfo(m.group(2))
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=zone)


def discord_timestamp(at: datetime) -> str:
    """``<t:1711704600:f> (<t:1711704600:R>)``: full date and "in 3 hours", per reader."""
    unix = int(at.timestamp())
    return f"<t:{unix}:f> (<t:{unix}:R>)"


# -- message ------------------------------------------------------------------------------


def render(message: Message) -> Rendered:
    """One embed and the button rows for a core message."""
    title = truncate(message.title, TITLE_LIMIT)
    body = to_markdown(message.body)
    suffix = ""
    if message.countdown is not None:  # a live question: the seconds count down by themselves
        suffix = f"\n\n⏰ <t:{int(message.countdown.timestamp())}:R>"
    elif message.buttons and (closes := close_time(message.footer)) is not None:
        suffix = f"\n\n⏰ {discord_timestamp(closes)}"
    footer = truncate(message.footer, FOOTER_LIMIT)
    fields = [
        EmbedFieldPayload(
            name=truncate(to_markdown(f.name), FIELD_NAME_LIMIT) or "\u200b",
            value=truncate(to_markdown(f.value), FIELD_VALUE_LIMIT) or "\u200b",
            inline=f.inline,
        )
        for f in message.fields[:FIELD_COUNT_LIMIT]
    ]
    if len(message.fields) > FIELD_COUNT_LIMIT:
        log.warning("message has %d fields; Discord shows 25", len(message.fields))
    # The 6,000 total: the description gives way first (down to a third), then fields go.
    fixed = len(title) + len(footer)
    room = EMBED_TOTAL_LIMIT - fixed - sum(len(f["name"]) + len(f["value"]) for f in fields)
    keep = min(DESCRIPTION_LIMIT, max(room, DESCRIPTION_LIMIT // 3))
    description = (truncate(body, keep - len(suffix)) + suffix).strip()
    while fields and fixed + len(description) + _fields_len(fields) > EMBED_TOTAL_LIMIT:
        fields.pop()
    embed = EmbedPayload(type="rich", color=COLOR)
    if title:
        embed["title"] = title
    if description:
        embed["description"] = description
    if fields:
        embed["fields"] = fields
    if footer:
        embed["footer"] = EmbedFooterPayload(text=footer)
    if message.image is not None:
        embed["image"] = EmbedImagePayload(url=f"attachment://{message.image.filename}")
    return Rendered(embed, render_buttons(message.buttons))


def _fields_len(fields: list[EmbedFieldPayload]) -> int:
    return sum(len(f["name"]) + len(f["value"]) for f in fields)


def embed_length(embed: EmbedPayload) -> int:
    """What Discord counts against the 6,000 limit."""
    fields = embed.get("fields", [])
    return (
        len(embed.get("title", ""))
        + len(embed.get("description", ""))
        + _fields_len(fields)
        + len(embed.get("footer", {"text": ""})["text"])
    )


def render_buttons(buttons: tuple[Button, ...]) -> tuple[RenderedButton, ...]:
    """Up to 25 buttons, 5 per row; a button whose id would pass 100 characters is left
    out (its click could not be routed) and logged."""
    out: list[RenderedButton] = []
    for button in buttons:
        custom_id = button.encode()
        if len(custom_id) > CUSTOM_ID_LIMIT:
            log.error("button id %r is over Discord's 100 characters; left out", custom_id)
            continue
        if len(out) == ROW_LIMIT * BUTTONS_PER_ROW:
            log.warning("message has more than 25 buttons; Discord shows 25")
            break
        out.append(
            RenderedButton(
                label=truncate(button.label, LABEL_LIMIT) or "\u200b",
                custom_id=custom_id,
                style=_STYLES[button.style],
                row=len(out) // BUTTONS_PER_ROW,
            )
        )
    return tuple(out)


def content(text: str) -> str:
    """Plain message content (captions, fallbacks) within 2,000 characters."""
    return truncate(to_markdown(text), CONTENT_LIMIT)


@functools.lru_cache(maxsize=512)
def _rendered(message: Message) -> Rendered:
    # A burst of clicks on one question gets a handful of distinct replies (per choice and
    # locale): each is rendered once. `Rendered` is only read from here on.
    return render(message)


def image_attachment(image: Image) -> dict[str, Any]:
    """The ``attachments`` entry of a message sent with `image` as ``files[0]`` (the embed
    shows it as ``attachment://<filename>``)."""
    attachment: dict[str, Any] = {"id": 0, "filename": image.filename}
    if image.title:
        attachment["description"] = truncate(image.title, ATTACHMENT_DESCRIPTION_LIMIT)
    return attachment


def no_mentions() -> dict[str, list[str]]:
    """``allowed_mentions`` for every message the bot sends: nothing in it pings anyone
    (a question's text, a member's name or typed answer may hold ``@everyone``)."""
    return {"parse": []}


def message_json(message: Message) -> dict[str, Any]:
    """The JSON of a message (create, edit, interaction reply): its embed and button rows;
    ``components`` is empty when there are no buttons, so an edit removes them."""
    rendered = _rendered(message)
    return {
        "embeds": [rendered.embed],
        "components": rendered.components(),
        "allowed_mentions": no_mentions(),
    }
