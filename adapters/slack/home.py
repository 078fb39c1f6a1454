"""Slack's App Home: a member's card (`bot.home`) as their home tab.

`app_home_opened` (tab ``home``) publishes the member's card with ``views.publish``, after
the event's acknowledgement; the core's `Homes` asks for a republish after the member's
answers (at most once per interval). Each publish carries the view ``hash`` Slack last
gave for the member's home (the event's, or the previous publish's): a publish that
crossed another one (``hash_conflict``) is rendered afresh and sent once more without it.
``views.publish`` is a tier-4 method: a 429 waits its ``Retry-After`` in `SlackChat`'s
client, as every call does.

Whether the member is an admin (their card's settings section) takes a ``users.info`` call
unless the answer is kept: then the card is published first as a member's, and the check
follows once no card is being published (`ADMIN_WAIT` at most), `ADMIN_CHECKS` at once:
a burst's checks do not hold up its publishes. An admin's home is then published again
with the section.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from adapters.slack.chat import SlackChat
from adapters.slack.render import render
from bot.admin import NOBODY, AdminCheck, AdminStatus, known
from bot.domain import Platform, UserRef
from bot.errors import PlatformError
from bot.home import Card, Homes, card_message
from bot.logs import ThrottledLog
from bot.messages import Message
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)

HASH_CONFLICT = "hash_conflict"
_REMEMBERED = 100_000  # members whose last view hash is kept
ADMIN_CHECKS = 4  # admin checks (users.info) after first publishes, at once at most
ADMIN_WAIT = 1.0  # seconds an admin check waits for the publishes under way, at most


def home_view(message: Message) -> dict[str, Any]:
    """A home tab view of a core `Message`."""
    return {"type": "home", "blocks": render(message).block_list}


class SlackHome:
    """Publishes members' home tabs. `on_event` is Bolt's ``app_home_opened`` listener."""

    def __init__(
        self,
        chat: SlackChat,
        homes: Homes,
        admin: Callable[[UserRef], AdminCheck],
        tasks: TaskSupervisor,
        kept: Callable[[UserRef], AdminStatus | None] = lambda user: None,
    ) -> None:
        self.chat = chat
        self.homes = homes
        self.admin = admin
        self.kept = kept  # whether a member is an admin, where that takes no call
        self.tasks = tasks
        self._checks = asyncio.Semaphore(ADMIN_CHECKS)
        self._publishing = 0  # cards being published (their first publish)
        self._quiet = asyncio.Event()  # set: none is
        self._quiet.set()
        self._hashes: OrderedDict[str, str] = OrderedDict()
        self._problems = ThrottledLog(log)

    async def on_event(self, event: Mapping[str, Any], body: Mapping[str, Any]) -> None:
        """``app_home_opened``: the publish runs after the acknowledgement."""
        if event.get("tab", "home") != "home":
            return  # the Messages tab
        user_id = str(event.get("user") or "")
        team = body.get("team_id") or event.get("team") or ""
        if not user_id or not isinstance(team, str) or not team:
            return
        view = event.get("view")
        if isinstance(view, Mapping) and isinstance(view.get("hash"), str):
            self._remember(f"{Platform.SLACK}:{team}:{user_id}", view["hash"])
        member = UserRef(Platform.SLACK, team, user_id)
        self.homes.opened(member)
        self.tasks.spawn(self._publish_quietly(member), name="slack-home")

    async def _publish_quietly(self, member: UserRef) -> None:
        with contextlib.suppress(PlatformError):  # logged and counted by SlackChat
            await self.publish(member)

    async def publish(self, member: UserRef) -> None:
        """Render `member`'s card and publish it. Whether they are an admin not known yet
        (a call): published as a member's card first, then — an admin's, or a kept
        card's section that no longer holds — again after the check."""
        status = self.kept(member)
        self._publishing += 1
        self._quiet.clear()
        try:
            card, view = await self._publish(member, NOBODY if status is None else known(status))
        finally:
            self._publishing -= 1
            if not self._publishing:
                self._quiet.set()
        if status is not None:
            return
        async with self._checks:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._quiet.wait(), ADMIN_WAIT)
            status = await self.admin(member)()
        if (card.admin is not None) == (status is AdminStatus.YES):
            return
        self.homes.forget(member)
        await self._publish(member, known(status), unless=view)

    async def _publish(
        self, member: UserRef, admin: AdminCheck, unless: dict[str, Any] | None = None
    ) -> tuple[Card, dict[str, Any]]:
        """Render `member`'s card and publish it (not when its view is `unless`); a stale
        hash: once more, fresh."""
        for attempt in (1, 2):
            if attempt == 2:
                self.homes.forget(member)  # a fresh render
            card = await self.homes.home_card(member, admin)
            view = home_view(card_message(card))
            if view == unless:
                return card, view
            known = self._hashes.get(member.key) if attempt == 1 else None
            args: dict[str, Any] = {"user_id": member.user, "view": view}
            if known is not None:
                args["hash"] = known
            try:
                client = await self.chat.client_for(member.workspace)  # its own token
                resp = await self.chat.call(
                    "views.publish", client.views_publish(**args), member.workspace
                )
            except PlatformError as exc:
                if exc.reason == HASH_CONFLICT and attempt == 1:
                    self._hashes.pop(member.key, None)
                    continue
                raise
            published = resp.get("view") or {}
            if isinstance(published, dict) and isinstance(published.get("hash"), str):
                self._remember(member.key, published["hash"])
            return card, view
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _remember(self, key: str, value: str) -> None:
        self._hashes[key] = value
        self._hashes.move_to_end(key)
        while len(self._hashes) > _REMEMBERED:
            self._hashes.popitem(last=False)


__all__ = ["ADMIN_CHECKS", "HASH_CONFLICT", "SlackHome", "home_view"]
