"""Forms on Discord: a core `Form` as a modal (interaction response type 9), a submitted
modal (interaction type 5) read back by `payloads.modal_values`, and the core's field
problems as a private message — Discord cannot show a modal again with its errors marked,
so the message names each problem and gives back what was typed, to paste into the form
when it is opened again.

Discord's limits: ``custom_id`` 100 characters, title 45, at most 5 rows of one text input
each; an input's label 45, placeholder 100, value and ``max_length`` 4,000.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from adapters.discord.payloads import ModalDataPayload
from adapters.discord.render import CUSTOM_ID_LIMIT, truncate
from adapters.discord.replies import reply_response
from bot.boundary import failure_message
from bot.domain import Locale
from bot.forms import MAX_FIELDS, FieldKind, Form, FormField, Submission, SubmitReply
from bot.i18n import N_, translator
from bot.messages import Message

log = logging.getLogger(__name__)

MODAL = 9
ACTION_ROW = 1
TEXT_INPUT = 4
SHORT, PARAGRAPH = 1, 2
TITLE_LIMIT = 45
LABEL_LIMIT = 45
PLACEHOLDER_LIMIT = 100
VALUE_LIMIT = 4000
ECHO_BUDGET = 3000  # of the embed's 4,096 characters, for the text given back

FORM_NOT_OPENED = N_("The form could not be opened in time; please click again.")
NOT_SAVED = N_("Nothing was saved. Fix this and submit the form again:")
YOU_TYPED = N_("What you typed, to paste back in:")


def form_response(form: Form | Message, locale: Locale) -> dict[str, Any]:
    """The initial response to a click or command that opens a form: the modal, or the
    message that stands in for it (a refusal, or a form that cannot open on Discord)."""
    if isinstance(form, Message):
        return reply_response(form)
    modal = modal_response(form)
    return modal if modal is not None else reply_response(failure_message(locale))


def modal_response(form: Form) -> dict[str, Any] | None:
    """The initial response that opens `form`; None when its id cannot be routed back
    (over 100 characters: logged)."""
    if len(form.id) > CUSTOM_ID_LIMIT:
        log.error("form id %r is over Discord's 100 characters; not opened", form.id[:120])
        return None
    rows = [{"type": ACTION_ROW, "components": [_text_input(f)]} for f in form.fields[:MAX_FIELDS]]
    title = truncate(form.title, TITLE_LIMIT) or "…"
    return {"type": MODAL, "data": {"custom_id": form.id, "title": title, "components": rows}}


def _text_input(field: FormField) -> dict[str, Any]:
    label, detail = _label(field.label)
    placeholder = " — ".join(p for p in (detail, field.placeholder) if p)
    max_length = max(1, min(field.max_length, VALUE_LIMIT))
    out: dict[str, Any] = {
        "type": TEXT_INPUT,
        "custom_id": field.name,
        "style": PARAGRAPH if field.kind is FieldKind.PARAGRAPH else SHORT,
        "label": label,
        "required": field.required,
        "max_length": max_length,
    }
    if placeholder:
        out["placeholder"] = truncate(placeholder, PLACEHOLDER_LIMIT)
    if field.value:
        out["value"] = field.value[:max_length]
    return out


def _label(text: str) -> tuple[str, str]:
    """A label within Discord's 45 characters, and the detail that moved out of it: a
    trailing parenthesis ("Your prediction, in MiB (±1 counts as right)") goes to the
    placeholder rather than being cut off."""
    if len(text) <= LABEL_LIMIT:
        return text, ""
    head, sep, tail = text.partition(" (")
    if sep and head and len(head) <= LABEL_LIMIT:
        return head, tail.removesuffix(")")
    return truncate(text, LABEL_LIMIT) or "…", ""


def modal_values(data: ModalDataPayload) -> dict[str, str]:
    """A submitted modal's text inputs, by ``custom_id``: in action rows (each of one
    input) or in labels (Discord's newer layout)."""
    values: dict[str, str] = {}
    pending: list[object] = list(data.get("components") or [])
    while pending:
        item = pending.pop(0)
        if not isinstance(item, Mapping):
            continue
        if isinstance(item.get("custom_id"), str) and isinstance(item.get("value"), str):
            values[item["custom_id"]] = item["value"]
        children = item.get("components")
        if isinstance(children, list):
            pending.extend(children)
        if isinstance(item.get("component"), Mapping):
            pending.append(item["component"])
    return values


def problems_message(submission: Submission, reply: SubmitReply, locale: Locale) -> Message:
    """The core's problems with a submission, each named, and everything typed given back
    (in code blocks, so nothing in it is formatted away)."""
    t = translator(locale)
    labels = {f.name: f.label for f in reply.form.fields} if reply.form is not None else {}
    lines = [t(NOT_SAVED)]
    lines += [f"- *{labels.get(name, name)}*: {problem}" for name, problem in reply.errors.items()]
    typed = [(labels.get(n, n), v) for n, v in submission.values.items() if v.strip()]
    if typed:
        room = ECHO_BUDGET // len(typed)
        lines += ["", t(YOU_TYPED)]
        for label, value in typed:
            lines += [f"*{label}*", _code_block(value, room)]
    return Message(body="\n".join(lines))


def _code_block(text: str, room: int) -> str:
    # A fence inside the text would end the block early: break it with zero-width spaces.
    safe = text.replace("```", "`\u200b`\u200b`")
    if len(safe) > room:
        safe = safe[: max(room - 1, 1)] + "…"
    return f"```\n{safe}\n```"


__all__ = ["FORM_NOT_OPENED", "MODAL", "form_response", "modal_response", "problems_message"]
