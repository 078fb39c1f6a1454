"""Fakes at the edge: an in-memory `Chat` that records what was sent."""

from __future__ import annotations

from dataclasses import dataclass

from bot.clinic import ClinicProgress
from bot.domain import ChannelRef, MessageRef, UserRef
from bot.messages import Attachment, Image, Message


@dataclass(frozen=True, slots=True)
class Sent:
    kind: str  # post | thread | private | update | image | file
    channel: ChannelRef
    message: Message | None
    ref: MessageRef | None = None
    parent: MessageRef | None = None
    user: UserRef | None = None
    image: Image | None = None
    file: Attachment | None = None


class RecordingChat:
    def __init__(self) -> None:
        self.sent: list[Sent] = []
        self._n = 0
        self.fail_posts = 0  # fail the next N post_message calls
        self.fail_threads = 0  # fail the next N reply_in_thread calls

    def _ref(self, channel: ChannelRef) -> MessageRef:
        self._n += 1
        return MessageRef(channel, f"msg-{self._n}")

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        if self.fail_posts:
            self.fail_posts -= 1
            raise ConnectionError("platform unavailable")
        ref = self._ref(channel)
        self.sent.append(Sent("post", channel, message, ref=ref))
        return ref

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        if self.fail_threads:
            self.fail_threads -= 1
            raise ConnectionError("platform unavailable")
        ref = self._ref(parent.channel)
        self.sent.append(Sent("thread", parent.channel, message, ref=ref, parent=parent))
        return ref

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        self.sent.append(Sent("private", channel, message, user=user))

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        self.sent.append(Sent("update", ref.channel, message, ref=ref))

    async def upload_image(self, parent: MessageRef, image: Image, comment: str = "") -> None:
        self.sent.append(Sent("image", parent.channel, None, parent=parent, image=image))

    async def send_file(
        self, channel: ChannelRef, user: UserRef, file: Attachment, comment: str = ""
    ) -> None:
        self.sent.append(Sent("file", channel, None, user=user, file=file))

    def of(self, kind: str) -> list[Sent]:
        return [s for s in self.sent if s.kind == kind]


class ProgressLog(list[ClinicProgress]):
    """A clinic run's progress callback that keeps every update, in order."""

    async def __call__(self, update: ClinicProgress) -> None:
        self.append(update)
