"""Core `Message` -> Slack Block Kit blocks and a fallback text, within every Block Kit limit.

Pure functions. Long text is never rejected: it is cut at a word boundary and ends in "…".
Lengths are measured in UTF-16 code units (what Slack's limits count is not documented;
UTF-16 is never shorter than code points, so the measure errs on the safe side), after
escaping, so an escaped ``&lt;`` counts as four.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from bot.forms import FieldKind, Form
from bot.messages import Button, ButtonStyle, Field, Message

log = logging.getLogger(__name__)

Block = dict[str, Any]
_T = TypeVar("_T")

MAX_BLOCKS: Final = 50
SECTION_TEXT_MAX: Final = 3000
HEADER_TEXT_MAX: Final = 150
BUTTON_TEXT_MAX: Final = 75
ACTION_ID_MAX: Final = 255
BUTTON_VALUE_MAX: Final = 2000
ACTIONS_ELEMENTS_MAX: Final = 25
SECTION_FIELDS_MAX: Final = 10
FIELD_TEXT_MAX: Final = 2000
CONTEXT_TEXT_MAX: Final = 3000
# Slack truncates `text` at 40,000 characters; it is only the notification and fallback,
# so keep it short.
FALLBACK_TEXT_MAX: Final = 3000
# Slack answered `msg_blocks_too_long` near 13,000 characters of block text in one report:
# keep all the text in a message's blocks below that (long demo output goes in a file).
BLOCKS_TEXT_BUDGET: Final = 12_000
MAX_FIELDS: Final = 20
MAX_BUTTONS: Final = 5 * ACTIONS_ELEMENTS_MAX

ELLIPSIS: Final = "…"
_ENTITY_TAIL = re.compile(r"&[a-z]{0,3}$")
_LIST_ITEM = re.compile(r"^(\s*)- ", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """What `chat.postMessage`/`chat.update`/`chat.postEphemeral` take: `text` and `blocks`."""

    text: str
    blocks: tuple[Block, ...]

    @property
    def block_list(self) -> list[Block]:
        return list(self.blocks)


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def slack_len(text: str) -> int:
    """Length in UTF-16 code units (an emoji outside the BMP counts two)."""
    if text.isascii():
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


def escape(text: str) -> str:
    """Slack's three control characters in mrkdwn and message text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def truncate(text: str, limit: int) -> str:
    """`text` if it fits in `limit`, else its longest prefix that ends at a word boundary
    (a hard cut when a single word is longer than half the limit) followed by "…".

    Never cuts inside an ``&amp;``-style entity.
    """
    if slack_len(text) <= limit:
        return text
    if limit <= slack_len(ELLIPSIS):
        return ELLIPSIS[: max(limit, 0)]
    room = limit - slack_len(ELLIPSIS)
    cut = _prefix_fitting(text, room)
    head = text[:cut]
    if cut < len(text) and not text[cut].isspace():
        space = max(head.rfind(" "), head.rfind("\n"))
        if space >= room // 2:
            head = head[:space]
    if (m := _ENTITY_TAIL.search(head)) is not None:
        head = head[: m.start()]
    return head.rstrip() + ELLIPSIS


def _prefix_fitting(text: str, room: int) -> int:
    used = 0
    for i, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > room:
            return i
    return len(text)


def to_mrkdwn(body: str) -> str:
    """The core's markdown subset (``*bold*``, ``_italic_``, ```code```, ``- `` lists) in
    Slack mrkdwn: the same markers, escaped, with bullets for list lines."""
    return _LIST_ITEM.sub(r"\1• ", escape(body))


@functools.lru_cache(maxsize=512)
def render(message: Message) -> SlackMessage:
    """Blocks: header (title), sections (body), fields, actions (buttons), context (footer)."""
    buttons = _buttons(message.buttons)
    head: list[Block] = []
    if message.title.strip():
        head.append(_header(message.title))
    footer: list[Block] = [_context(message.footer)] if message.footer.strip() else []
    if message.countdown is not None:
        footer.append(_countdown(message.countdown))
    budget = BLOCKS_TEXT_BUDGET - sum(_text_len(b) for b in head + footer)
    fields = _fields(message.fields, budget // 2)
    budget -= sum(slack_len(f["text"]) for f in fields)
    tail: list[Block] = [
        {"type": "section", "fields": chunk} for chunk in _chunks(fields, SECTION_FIELDS_MAX)
    ]
    tail += [
        {"type": "actions", "elements": chunk} for chunk in _chunks(buttons, ACTIONS_ELEMENTS_MAX)
    ]
    tail += footer
    room = MAX_BLOCKS - len(head) - len(tail)
    body = [_section(text) for text in split_sections(to_mrkdwn(message.body), room, budget)]
    return SlackMessage(text=fallback_text(message), blocks=tuple(head + body + tail))


def fallback_text(message: Message) -> str:
    """The notification text (and what clients without blocks show)."""
    return truncate(escape(message.plain_text()), FALLBACK_TEXT_MAX) or " "


def split_sections(text: str, max_sections: int, budget: int = BLOCKS_TEXT_BUDGET) -> list[str]:
    """Split mrkdwn into section texts of at most `SECTION_TEXT_MAX`, at line, then word
    boundaries; at most `max_sections` of them and `budget` characters in all (what does
    not fit is cut with "…")."""
    text = text.strip()
    if not text or max_sections <= 0 or budget <= slack_len(ELLIPSIS):
        return []
    # Each section boundary drops a newline, so the parts never hold more than the text.
    text = truncate(text, budget)
    out: list[str] = []
    current = ""
    for piece in _pieces(text):
        joined = f"{current}\n{piece}" if current else piece
        if slack_len(joined) <= SECTION_TEXT_MAX:
            current = joined
            continue
        if current:
            out.append(current)
        current = piece
    if current:
        out.append(current)
    out = [s for s in (p.strip("\n") for p in out) if s.strip()]
    if len(out) > max_sections:
        last = truncate(out[max_sections - 1], SECTION_TEXT_MAX - slack_len(ELLIPSIS))
        out = [*out[: max_sections - 1], last if last.endswith(ELLIPSIS) else last + ELLIPSIS]
    return out


def _pieces(text: str) -> Iterator[str]:
    """Lines, each at most one section long (an overlong line is cut into word-bounded
    parts, the last part of a cut line is not marked since the text continues)."""
    for line in text.split("\n"):
        while slack_len(line) > SECTION_TEXT_MAX:
            part = truncate(line, SECTION_TEXT_MAX)[: -len(ELLIPSIS)].rstrip()
            if not part:  # a word longer than a section
                part = line[: _prefix_fitting(line, SECTION_TEXT_MAX)]
                if (m := _ENTITY_TAIL.search(part)) is not None and m.start() > 0:
                    part = part[: m.start()]
            yield part
            line = line[len(part) :].lstrip()
        yield line


def _header(title: str) -> Block:
    text = truncate(" ".join(title.split()), HEADER_TEXT_MAX)
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": True}}


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _fields(fields: tuple[Field, ...], budget: int) -> list[Block]:
    out: list[Block] = []
    used = 0
    for f in fields[:MAX_FIELDS]:
        text = truncate(f"*{escape(f.name)}*\n{to_mrkdwn(f.value)}", FIELD_TEXT_MAX)
        if used + slack_len(text) > budget:
            break
        out.append({"type": "mrkdwn", "text": text})
        used += slack_len(text)
    if len(out) < len(fields):
        log.warning("message has %d fields; showing the first %d", len(fields), len(out))
    return out


def _text_len(block: Block) -> int:
    if block["type"] == "context":
        return sum(slack_len(e["text"]) for e in block["elements"])
    return slack_len(block["text"]["text"])


def _context(footer: str) -> Block:
    text = truncate(to_mrkdwn(footer), CONTEXT_TEXT_MAX)
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def slack_date(at: datetime) -> str:
    """A time every reader sees in their own zone: ``<!date^EPOCH^{time_secs}|fallback>``."""
    return f"<!date^{int(at.timestamp())}^{{time_secs}}|{at.astimezone(UTC):%H:%M:%S} UTC>"


def _countdown(at: datetime) -> Block:
    """The closing time of a live question (it renders in each reader's zone; no edits)."""
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": f"⏰ {slack_date(at)}"}]}


def _buttons(buttons: tuple[Button, ...]) -> list[Block]:
    out: list[Block] = []
    seen: set[str] = set()
    for button in buttons:
        action_id = button.encode()
        if len(action_id) > ACTION_ID_MAX or action_id in seen:
            # The id is the button's identity: cutting it would make clicks unreadable.
            log.error("button %r cannot be sent to Slack (action_id %r)", button.label, action_id)
            continue
        if len(out) == MAX_BUTTONS:
            log.warning("message has more than %d buttons; the rest are left out", MAX_BUTTONS)
            break
        seen.add(action_id)
        element: Block = {
            "type": "button",
            "text": {
                "type": "plain_text",
                "text": truncate(button.label.strip() or "·", BUTTON_TEXT_MAX),
                "emoji": True,
            },
            "action_id": action_id,
            "value": action_id[:BUTTON_VALUE_MAX],
        }
        if button.style is not ButtonStyle.DEFAULT:
            element["style"] = button.style.value
        out.append(element)
    return out


def _chunks(items: Sequence[_T], size: int) -> list[list[_T]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


__all__ = ["SlackMessage", "escape", "render", "slack_len", "to_mrkdwn", "truncate"]


MODAL_TITLE = 24
MODAL_BUTTON = 24
INPUT_LABEL = 2000
PLACEHOLDER = 150
INITIAL_VALUE = 3000


def render_form(form: Form, metadata: str, cancel: str = "") -> dict[str, Any]:
    """A core `Form` as a Slack modal view (``views.open``): one input block per field,
    ``block_id`` and ``action_id`` both the field's name; `metadata` (where the form was
    opened) travels back in ``private_metadata``."""
    blocks: list[dict[str, Any]] = []
    for f in form.fields:
        element: dict[str, Any] = {
            "type": "plain_text_input",
            "action_id": f.name,
            "multiline": f.kind is FieldKind.PARAGRAPH,
            "max_length": min(f.max_length, INITIAL_VALUE),
        }
        if f.placeholder:
            element["placeholder"] = _plain(f.placeholder, PLACEHOLDER)
        if f.value:
            element["initial_value"] = f.value[:INITIAL_VALUE]
        blocks.append(
            {
                "type": "input",
                "block_id": f.name,
                "label": _plain(f.label, INPUT_LABEL),
                "element": element,
                "optional": not f.required,
            }
        )
    view: dict[str, Any] = {
        "type": "modal",
        "callback_id": form.id,
        "title": _plain(form.title, MODAL_TITLE),
        "submit": _plain(form.submit, MODAL_BUTTON),
        "blocks": blocks,
        "private_metadata": metadata[:3000],
    }
    if cancel:
        view["close"] = _plain(cancel, MODAL_BUTTON)
    return view


def _plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(text, limit) or "…"}
