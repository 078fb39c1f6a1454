"""`SlackAdapter`: the Bolt app's listeners (`/quiz`, the quiz's buttons) and its lifecycle
in Socket Mode or HTTP mode.

Requests are acknowledged by `Inbound` before Bolt sees them (Slack's 3-second limit); the
listeners still call `ack()` first and catch and log their own errors, so they also work
under Bolt's own runner (where an exception just after `ack()` can become a 404).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self, cast

from aiohttp import ClientError, web
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError

from adapters.slack.chat import ResponseUrlError, SlackChat
from adapters.slack.config import SlackConfig
from adapters.slack.dedupe import RecentKeys
from adapters.slack.inbound import Inbound
from adapters.slack.payloads import (
    BlockActionsPayload,
    ButtonClick,
    CommandCall,
    SlashCommandForm,
    clicks_to_core,
    command_to_core,
)
from bot.commands import CommandSet, Invocation, Reply, run_command
from bot.domain import ChannelRef, Locale, UserRef
from bot.errors import ConfigError
from bot.i18n import translator
from bot.messages import ActionKind, Message
from bot.quiz import QuizService

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
# Posting where the bot may not: tell the user how to fix it instead of "something failed".
_NOT_IN_CHANNEL = {"not_in_channel", "channel_not_found", "is_archived"}

ActionHandler = Callable[[ButtonClick], Awaitable[Message | None]]


class SlackAdapter:
    """The quiz on Slack. Start it with ``async with``; in HTTP mode `mount` it on an
    aiohttp application (``POST /slack/events``), in Socket Mode it connects by itself."""

    def __init__(
        self,
        service: QuizService,
        commands: CommandSet,
        chat: SlackChat,
        config: SlackConfig,
        *,
        concurrency: int = 32,
        dedupe_ttl: float = 600.0,
        admin_cache_ttl: float = 600.0,
        ping_interval: float = 10.0,
    ) -> None:
        self.service = service
        self.commands = commands
        self.chat = chat
        self.config = config
        self._concurrency = concurrency
        self._recent = RecentKeys(ttl=dedupe_ttl)
        self._admin_ttl = timedelta(seconds=admin_cache_ttl)
        self._admins: dict[str, tuple[bool, datetime]] = {}
        self._asked: dict[str, datetime] = {}
        self._ping_interval = ping_interval
        self._action_handlers: dict[ActionKind, ActionHandler] = {}
        self._app: AsyncApp | None = None
        self._inbound: Inbound | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.initialize()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()

    async def initialize(self) -> None:
        self.config.check()
        await self._check_bot_token()
        # One call of our own first: a bad app token fails here with a clear message,
        # where the Socket Mode client would retry forever.
        url = await self._socket_url(self.config.app_token) if self.config.app_token else None
        self._app = self._build_app()
        self._inbound = Inbound(
            self._app, signing_secret=self.config.signing_secret, concurrency=self._concurrency
        )
        await self._inbound.start()
        if self.config.app_token and url:
            try:
                await self._inbound.connect(
                    self.config.app_token, self.chat.client, url, self._ping_interval
                )
            except BaseException:
                await self.shutdown()
                raise
            log.info("Slack: connected in Socket Mode")

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Disconnect, finish the requests already acknowledged (up to `timeout`)."""
        if self._inbound is not None:
            await self._inbound.stop(timeout)
            self._inbound = None

    @property
    def socket_mode(self) -> bool:
        return self.config.socket_mode

    @property
    def app(self) -> AsyncApp:
        if self._app is None:
            raise RuntimeError("SlackAdapter is not started: use `async with SlackAdapter(...)`")
        return self._app

    @property
    def inbound(self) -> Inbound:
        if self._inbound is None:
            raise RuntimeError("SlackAdapter is not started: use `async with SlackAdapter(...)`")
        return self._inbound

    async def idle(self) -> None:
        """Wait until every acknowledged request has been processed (tests, shutdown)."""
        await self.inbound.idle()

    async def healthy(self) -> bool:
        """For /healthz: connected (Socket Mode) or taking requests (HTTP mode)."""
        if self._inbound is None:
            return False
        return await self._inbound.connected() if self.socket_mode else True

    # -- HTTP mode ---------------------------------------------------------------------

    def mount(self, app: web.Application, path: str = EVENTS_PATH) -> None:
        """Serve Slack's requests (commands, interactivity, events) at `path` on `app`."""
        if not self.config.signing_secret:
            raise ConfigError(
                "HTTP mode needs SLACK_SIGNING_SECRET to verify Slack's requests "
                "(Basic Information > App Credentials)"
            )
        app.router.add_post(path, self.handle_http)

    async def handle_http(self, request: web.Request) -> web.Response:
        return await self.inbound.handle_http(request)

    # -- extension ---------------------------------------------------------------------

    def add_action_handler(self, kind: ActionKind, handler: ActionHandler) -> None:
        """Handle clicks on `quiz:<kind>:...` buttons (e.g. the reveal's demo button); a
        returned message is shown to the clicking user only."""
        self._action_handlers[kind] = handler

    # -- Bolt --------------------------------------------------------------------------

    def _build_app(self) -> AsyncApp:
        app = AsyncApp(
            name="quizbot",
            client=self.chat.client,
            # `Inbound` has verified the signature and acknowledged the request already;
            # Bolt routes it and runs the listener to the end (on a bounded worker).
            request_verification_enabled=False,
            process_before_response=True,
            logger=logging.getLogger("adapters.slack.bolt"),
        )

        async def on_command(ack: Any, body: dict[str, Any]) -> None:
            await ack()
            await _logged(self._command(cast(SlashCommandForm, body)))

        async def on_click(ack: Any, body: dict[str, Any]) -> None:
            await ack()
            await _logged(self._clicks(cast(BlockActionsPayload, body)))

        app.command(self.config.command)(on_command)
        app.action(re.compile(r"^quiz:"))(on_click)
        return app

    # -- /quiz -------------------------------------------------------------------------

    async def _command(self, form: SlashCommandForm) -> None:
        call = command_to_core(form)
        # Slack redelivers (HTTP retries, Socket Mode envelopes) with the same trigger_id.
        if call.trigger_id and self._recent.seen(f"command:{call.trigger_id}"):
            log.info("Slack: dropped a repeated delivery of /quiz %s", call.text)
            return
        locale = (await self.service.store.settings.get(call.channel)).locale
        name = call.subcommand
        is_ask = name == "ask"
        if is_ask and (wait := self._cooldown_left(call.channel)) > 0:
            t = translator(locale)
            text = t.n(
                "A question was just asked in this channel: /quiz ask works again in "
                "{count} second.",
                "A question was just asked in this channel: /quiz ask works again in "
                "{count} seconds.",
                wait,
            )
            await self._reply_command(call, Reply(Message(body=text)))
            return
        if is_ask:  # claimed before the next await: two concurrent asks cannot both pass
            self._asked[call.channel.key] = self.service.clock.now()
        try:
            is_admin = name in self.commands.admin_only and await self.is_admin(call.user)
            inv = Invocation(call.channel, call.user, locale, is_admin=is_admin)
            replies = await run_command(self.commands, self.service, inv, call.text)
        except Exception as exc:
            if is_ask:  # nobody saw a question: no cooldown
                self._asked.pop(call.channel.key, None)
            slack_error = exc if isinstance(exc, SlackApiError) else None
            await self._reply_command(call, Reply(self._failure(slack_error, locale)))
            if slack_error is None:
                raise
            return
        if is_ask and replies:
            # `ask` answers only when it refused (e.g. an unknown topic): no cooldown then.
            self._asked.pop(call.channel.key, None)
        for reply in replies:
            await self._reply_command(call, reply)

    def _cooldown_left(self, channel: ChannelRef) -> int:
        cooldown = self.config.ask_cooldown
        last = self._asked.get(channel.key)
        if last is None or cooldown <= timedelta(0):
            return 0
        left = (last + cooldown - self.service.clock.now()).total_seconds()
        if left <= 0:
            del self._asked[channel.key]
            return 0
        return max(1, round(left))

    async def _reply_command(self, call: CommandCall, reply: Reply) -> None:
        if not reply.private:
            try:
                await self.chat.post_message(call.channel, reply.message)
                return
            except SlackApiError as exc:
                if _error(exc) not in _NOT_IN_CHANNEL or not call.response_url:
                    raise
            # A channel the bot has not joined: answer in the channel through the command.
            await self.chat.respond(call.response_url, reply.message, private=False)
            return
        await self._private(call.channel, call.user, call.response_url, reply.message)

    async def _private(
        self, channel: ChannelRef, user: UserRef, response_url: str | None, message: Message
    ) -> None:
        # response_url first: it has no Web API rate tier (a burst of 1,000 clicks would
        # wait minutes on chat.postEphemeral's) and works where the bot is not a member.
        if response_url:
            try:
                await self.chat.respond(response_url, message, private=True)
                return
            except (ResponseUrlError, SlackClientError, ClientError, TimeoutError) as exc:
                log.warning("response_url failed (%s); using chat.postEphemeral", exc)
        await self.chat.send_private(channel, user, message)

    def _failure(self, exc: SlackApiError | None, locale: Locale) -> Message:
        t = translator(locale)
        if exc is not None and _error(exc) in _NOT_IN_CHANNEL:
            return Message(
                body=t("I cannot post in this channel yet: add me with /invite, then try again.")
            )
        if exc is not None:
            log.error("Slack refused a call: %s", exc)
        return Message(body=t("Something went wrong on our side; please try again in a moment."))

    # -- admins ------------------------------------------------------------------------

    async def is_admin(self, user: UserRef) -> bool:
        """Listed in QUIZBOT_ADMINS, or a workspace admin or owner (users.info, cached)."""
        if user.user in self.config.admin_ids:
            return True
        now = self.service.clock.now()
        cached = self._admins.get(user.key)
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            info = await self.chat.user_info(user.user)
        except SlackApiError as exc:
            log.warning("users.info failed for %s: %s", user.user, _error(exc))
            return False
        admin = any(bool(info.get(k)) for k in ("is_admin", "is_owner", "is_primary_owner"))
        self._admins[user.key] = (admin, now + self._admin_ttl)
        return admin

    # -- buttons -----------------------------------------------------------------------

    async def _clicks(self, payload: BlockActionsPayload) -> None:
        for click in clicks_to_core(payload):
            key = f"click:{click.trigger_id}:{click.action}:{click.post_id}:{click.value}"
            if click.trigger_id and self._recent.seen(key):
                log.info("Slack: dropped a repeated delivery of a click on post %s", click.post_id)
                continue
            try:
                message = await self._click(click)
            except Exception as exc:
                log.exception("Slack: a click on post %s failed", click.post_id)
                locale = (await self.service.store.settings.get(click.channel)).locale
                message = self._failure(exc if isinstance(exc, SlackApiError) else None, locale)
            if message is not None:
                await self._private(click.channel, click.user, click.response_url, message)

    async def _click(self, click: ButtonClick) -> Message | None:
        if click.action is ActionKind.ANSWER:
            reply = await self.service.record_answer(click.post_id, click.user, click.choice)
            return reply.message
        handler = self._action_handlers.get(click.action)
        if handler is not None:
            return await handler(click)
        t = translator((await self.service.store.settings.get(click.channel)).locale)
        return Message(body=t("This button is not available any more."))

    # -- start-up checks ---------------------------------------------------------------

    async def _check_bot_token(self) -> None:
        try:
            await self.chat.client.auth_test()
        except SlackApiError as exc:
            raise ConfigError(
                f"Slack refused SLACK_BOT_TOKEN ({_error(exc)}): copy the Bot User OAuth Token "
                "(xoxb-...) from the app's OAuth & Permissions page, and reinstall the app "
                "if its scopes changed"
            ) from exc
        except (SlackClientError, ClientError, OSError, TimeoutError) as exc:
            raise ConfigError(
                f"cannot reach Slack's Web API at {self.config.api_url} ({exc}); check the "
                "network, or SLACK_API_URL if you set it"
            ) from exc

    async def _socket_url(self, app_token: str) -> str:
        try:
            resp = await self.chat.client.apps_connections_open(app_token=app_token)
        except SlackApiError as exc:
            raise ConfigError(
                f"Slack refused SLACK_APP_TOKEN ({_error(exc)}): create an app-level token "
                "with the connections:write scope (Basic Information > App-Level Tokens) and "
                "turn Socket Mode on"
            ) from exc
        return str(resp["url"])


async def _logged(work: Awaitable[None]) -> None:
    # Bolt's error path can turn an exception just after ack() into a 404: never let one out.
    try:
        await work
    except Exception:
        log.exception("Slack: a request failed after it was acknowledged")


def _error(exc: SlackApiError) -> str:
    try:
        return str(exc.response["error"])
    except (KeyError, TypeError):
        return str(exc)


__all__ = ["EVENTS_PATH", "ActionHandler", "SlackAdapter"]
