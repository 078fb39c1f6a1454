"""Forms: what a click or a command asks the user to fill in (a number, a question to
submit, a reason), whatever the platform — a Slack modal (`views.open`), a Discord modal
(interaction response type 9), prompts in the console.

A form's `id` routes the submission back: ``quiz:form:<kind>:<post>:<value>``, the same
shape as a button's. Each field may carry its own `check` (its value and the values typed
before it -> what to fix): the console asks a field again as soon as it fails; a submitted
modal gets every failing field's own problem (Slack shows them under the fields, Discord
in a message naming each field). The core then validates the whole submission and answers
with a private message, or with a problem per field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from bot.admin import NOBODY, AdminCheck
from bot.domain import ChannelRef, Locale, UserRef
from bot.messages import MAX_POST_ID, MAX_VALUE, Message

FORM_PREFIX = "quiz:form:"
MAX_FIELDS = 5  # Discord's modal limit; Slack takes more
FIELD_MAX = 4000


class FieldKind(StrEnum):
    TEXT = "text"  # one line
    PARAGRAPH = "paragraph"  # several lines
    NUMBER = "number"  # one line, read as a number by the core


FieldCheck = Callable[[str, Mapping[str, str]], str | None]
"""A field's own check: its value (stripped) and every value typed so far -> the problem,
in the form's language, or None when the value is good."""


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    label: str
    kind: FieldKind = FieldKind.TEXT
    required: bool = True
    max_length: int = 200
    placeholder: str = ""
    value: str = ""  # prefilled (a retry keeps what was typed)
    check: FieldCheck | None = field(default=None, compare=False, repr=False)

    def problem(self, values: Mapping[str, str]) -> str | None:
        """What is wrong with this field's value in `values`, or None."""
        if self.check is None:
            return None
        return self.check(values.get(self.name, "").strip(), values)


@dataclass(frozen=True, slots=True)
class Form:
    kind: str
    post_id: int
    value: str
    title: str
    fields: tuple[FormField, ...]
    submit: str = "Submit"

    def __post_init__(self) -> None:
        if not 1 <= len(self.fields) <= MAX_FIELDS:
            raise ValueError(f"a form has 1..{MAX_FIELDS} fields, not {len(self.fields)}")

    @property
    def id(self) -> str:
        return f"{FORM_PREFIX}{self.kind}:{self.post_id}:{self.value}"

    def problems(self, values: Mapping[str, str]) -> dict[str, str]:
        """Each field's own problem with `values`, by field name (empty: all good)."""
        return {f.name: p for f in self.fields if (p := f.problem(values)) is not None}

    @staticmethod
    def decode(form_id: str) -> tuple[str, int, str] | None:
        """``quiz:form:<kind>:<post>:<value>`` -> its parts; None when not one of ours."""
        if not form_id.startswith(FORM_PREFIX):
            return None
        parts = form_id[len(FORM_PREFIX) :].split(":", 2)
        if len(parts) != 3 or not parts[1].isascii() or not parts[1].isdigit():
            return None
        post_id = int(parts[1])
        if not 0 <= post_id <= MAX_POST_ID or len(parts[2]) > MAX_VALUE or not parts[0]:
            return None
        return parts[0], post_id, parts[2]


@dataclass(frozen=True, slots=True)
class Submission:
    """A filled-in form, as every platform reports it."""

    kind: str
    post_id: int
    value: str
    values: Mapping[str, str]
    user: UserRef
    channel: ChannelRef
    user_locale: Locale | None = None
    admin: AdminCheck = NOBODY  # asked only for a form that is for admins

    @classmethod
    def parse(
        cls,
        form_id: str,
        values: Mapping[str, str],
        user: UserRef,
        channel: ChannelRef,
        user_locale: Locale | None = None,
        admin: AdminCheck = NOBODY,
    ) -> Submission | None:
        decoded = Form.decode(form_id)
        if decoded is None:
            return None
        kind, post_id, value = decoded
        clean = {str(k)[:64]: str(v)[:FIELD_MAX] for k, v in values.items()}
        return cls(kind, post_id, value, clean, user, channel, user_locale, admin)


@dataclass(frozen=True, slots=True)
class SubmitReply:
    """The answer to a submission: a private message, or what to fix per field."""

    message: Message | None = None
    errors: Mapping[str, str] = field(default_factory=dict)
    form: Form | None = None  # the form again (prefilled), where a platform re-shows it

    @property
    def ok(self) -> bool:
        return not self.errors


__all__ = ["FieldCheck", "FieldKind", "Form", "FormField", "Submission", "SubmitReply"]
