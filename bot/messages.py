"""Platform-neutral outbound messages.

The core builds `Message` values; each adapter renders them (Slack Block Kit, Discord
embeds + views, console text) and enforces its platform's limits. The body uses a small
markdown subset: ``*bold*``, ``_italic_``, ```code``` and ``- `` list lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

MAX_POST_ID = 2**63 - 1  # what the database can hold; a larger id is no post of ours
MAX_VALUE = 64  # a choice index, a demo id: short
_ID = re.compile(r"[0-9]{1,19}")


class ButtonStyle(StrEnum):
    DEFAULT = "default"
    PRIMARY = "primary"
    DANGER = "danger"


ANSWER = "answer"  # the one kind the core handles itself (value: the choice index)
# Every other kind (`quiz:<kind>:…`) is a feature's own (`bot.features.ButtonKind`).
KIND = re.compile(r"[a-z][a-z0-9-]{0,23}")


@dataclass(frozen=True, slots=True)
class Button:
    """A button. Adapters encode (`action`, `post_id`, `value`) in the platform's id field."""

    label: str
    action: str  # ANSWER, or a kind a feature registered
    post_id: int
    value: str
    style: ButtonStyle = ButtonStyle.DEFAULT

    def encode(self) -> str:
        """``quiz:answer:<post>:<value>``: short (well under Discord's 100 characters)."""
        return f"quiz:{self.action}:{self.post_id}:{self.value}"

    @staticmethod
    def decode(custom_id: str) -> tuple[str, int, str] | None:
        """The inverse of `encode`, for every platform; None for anything that is not
        shaped like one of our buttons or is out of range (such a click never reaches the
        database; whether its kind is registered is the core's `Interactions` to say)."""
        parts = custom_id.split(":", 3)
        if len(parts) != 4 or parts[0] != "quiz" or not _ID.fullmatch(parts[2]):
            return None
        post_id = int(parts[2])
        if post_id > MAX_POST_ID or len(parts[3]) > MAX_VALUE or not KIND.fullmatch(parts[1]):
            return None
        if post_id == 0 and parts[1] == ANSWER:
            return None
        return parts[1], post_id, parts[3]


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    value: str
    inline: bool = True


@dataclass(frozen=True, slots=True)
class Image:
    filename: str
    data: bytes
    title: str = ""


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file sent privately to one member (their data export)."""

    filename: str
    data: bytes
    mime_type: str = "application/json"
    title: str = ""


@dataclass(frozen=True, slots=True)
class Message:
    title: str = ""
    body: str = ""
    buttons: tuple[Button, ...] = ()
    fields: tuple[Field, ...] = ()
    footer: str = ""
    image: Image | None = None
    # A closing time each platform shows counting down by itself (Slack's `<!date^…>`,
    # Discord's `<t:…:R>`; the console prints it): no edit per second.
    countdown: datetime | None = None

    def plain_text(self) -> str:
        """A text fallback (notifications, console, Slack's `text`)."""
        parts = [p for p in (self.title, self.body) if p]
        parts += [f"{f.name}: {f.value}" for f in self.fields]
        if self.footer:
            parts.append(self.footer)
        return "\n".join(parts)
