"""`SlackAdapter`: the quiz on Slack — `/quiz` commands and the quiz's buttons — in Socket
Mode or HTTP mode, as an async context manager.

The walk of a click: `inbound.Inbound` checks the request and calls `interaction`; an
answer is recorded by the core (`bot.interactions.Interactions.click` →
`storage.answers`) before the acknowledgement goes out, and the private outcome follows
through the click's ``response_url``. A command, or a click that is not an answer, is
stored first (`bot.deliveries.Deliveries`: a redelivery on any replica is dropped, a
crash replays it), acknowledged, then run.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import Any, cast

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from adapters.slack.admins import SlackAdmins
from adapters.slack.chat import SlackChat
from adapters.slack.config import SlackConfig
from adapters.slack.dedupe import RecentKeys
from adapters.slack.errors import CALL_ERRORS, describe
from adapters.slack.files import FileRoutes
from adapters.slack.home import SlackHome
from adapters.slack.inbound import Inbound, Malformed
from adapters.slack.oauth import mount_oauth, oauth_flow
from adapters.slack.payloads import (
    BlockActionsPayload,
    ButtonClick,
    CommandCall,
    SlashCommandForm,
    clicks_to_core,
    command_to_core,
    form_metadata,
    submission_to_core,
)
from adapters.slack.tokens import NotInstalled
from bot.admin import ADMIN_CACHE, AdminCheck, AdminStatus
from bot.commands import Invocation, Reply, run_command
from bot.domain import ChannelRef, Delivery, UserRef
from bot.errors import ConfigError, NotInChannel, PlatformError
from bot.features import Quiz
from bot.forms import Form
from bot.home import PRACTICE_NOW, Homes
from bot.i18n import N_, translator
from bot.lifecycle import Lifecycle
from bot.logs import ThrottledLog
from bot.messages import ANSWER, Message
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
PLATFORM = "slack"
FORM_EXPIRED = N_("The form could not be opened in time; please click again.")
# A response_url takes replies for 30 minutes: replay only what can still be answered.
REPLAY_MAX_AGE = timedelta(minutes=25)


class SlackAdapter(Lifecycle):
    """The quiz on Slack. Start it with ``async with``; in HTTP mode `mount` it on an
    aiohttp application (``POST /slack/events``), in Socket Mode it connects by itself."""

    def __init__(
        self,
        quiz: Quiz,
        chat: SlackChat,
        config: SlackConfig,
        *,
        admin_cache_ttl: float = ADMIN_CACHE.total_seconds(),
        ping_interval: float = 10.0,
        installs: AsyncInstallationStore | None = None,
        states: AsyncOAuthStateStore | None = None,
    ) -> None:
        self.service = quiz.service
        self.commands = quiz.commands
        self.chat = chat
        self.config = config
        self.interactions = quiz.interactions
        self.deliveries = quiz.deliveries
        self.deliveries.add_replayer(PLATFORM, self._replay, REPLAY_MAX_AGE)
        self.tasks = TaskSupervisor("slack")
        self.admins = SlackAdmins(
            chat, quiz.service.clock, config.admin_ids, timedelta(seconds=admin_cache_ttl)
        )
        self._ping_interval = ping_interval
        self._recent = RecentKeys(ttl=600.0)  # answer clicks this process took
        # Outcomes (and the core's count edits) wait for the burst's acknowledgements.
        self._acks = quiz.service.acks
        self._problems = ThrottledLog(log)
        self._inbound: Inbound | None = None
        # Multi-workspace mode: the installs (OAuth), and the org workspaces seen.
        self.installs = installs
        self.states = states
        self._teams_seen: set[str] = set()
        if config.multi_workspace and (installs is None or states is None):
            raise ConfigError("multi-workspace mode needs the installation and state stores")
        self.files = FileRoutes(
            self.chat, self.service, quiz.registry, self.deliveries, self.tasks, self.admin
        )
        self._homes = quiz.registry.service(Homes)  # None: no home feature, no App Home
        self.home = (
            SlackHome(chat, self._homes, self.admin, self.tasks, kept=self.admins.kept)
            if self._homes
            else None
        )

    # -- lifecycle ---------------------------------------------------------------------

    async def initialize(self) -> None:
        self.config.check()
        if not self.config.multi_workspace:
            await self._check_bot_token()
        if self._homes is not None and self.home is not None:
            self._homes.watch(PLATFORM, self.home.publish)
        # One call of our own first: a bad app token fails here with a clear message,
        # where the Socket Mode client would retry forever.
        url = await self._socket_url(self.config.app_token) if self.config.app_token else None
        self._inbound = Inbound(
            self,
            self._events_app(),
            signing_secret=self.config.signing_secret,
            dropped=lambda kind: self.service.metrics.dropped_payloads.inc(
                platform=PLATFORM, kind=kind
            ),
            direct={"app_home_opened": self._home_opened} if self.home is not None else None,
        )
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
        if self._homes is not None:
            self._homes.unwatch(PLATFORM)
        if self._inbound is not None:
            await self._inbound.shutdown()
            self._inbound = None
        await self.tasks.shutdown(timeout)

    @property
    def socket_mode(self) -> bool:
        return self.config.socket_mode

    @property
    def inbound(self) -> Inbound:
        if self._inbound is None:
            raise RuntimeError("SlackAdapter is not started: use `async with SlackAdapter(...)`")
        return self._inbound

    async def idle(self) -> None:
        """Wait until every acknowledged request has been handled (tests, shutdown)."""
        await self.tasks.drain()

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
        app.router.add_post(path, self._handle_http)
        if self.config.multi_workspace:
            assert self.installs is not None and self.states is not None
            assert self.config.client_id and self.config.client_secret
            mount_oauth(
                app,
                oauth_flow(
                    self.chat.client,
                    client_id=self.config.client_id,
                    client_secret=self.config.client_secret,
                    installs=self.installs,
                    states=self.states,
                    authorization_url=self.config.oauth_url,
                    installed=self._installed,
                    redirect_uri=self.config.redirect_uri,
                ),
            )

    async def _handle_http(self, request: web.Request) -> web.Response:
        return await self.inbound.handle_http(request)  # started by then: routes freeze first

    def _events_app(self) -> AsyncApp:
        """Bolt, for the Events API only (`url_verification`, `message` events in direct
        messages: files sent to the bot): requests reach it already verified."""
        multi = self.config.multi_workspace

        # A plain function: bolt passes its arguments by name (a bound method's `self`
        # would be taken for one).
        async def authorize(
            enterprise_id: str | None, team_id: str | None
        ) -> AuthorizeResult | None:
            return await self._authorize(enterprise_id, team_id)

        app = AsyncApp(
            name="quizbot",
            client=self.chat.client,
            request_verification_enabled=False,
            process_before_response=True,
            logger=logging.getLogger("adapters.slack.bolt"),
            authorize=cast(Any, authorize) if multi else None,
        )
        app.event("message")(self.files.on_event)  # every one: an unhandled event is a 404
        if multi:
            app.event("app_uninstalled")(self._uninstalled)
            app.event("tokens_revoked")(self._revoked)
        return app  # app_home_opened: `_home_opened`, without Bolt

    async def _home_opened(self, body: Mapping[str, Any]) -> None:
        """``app_home_opened`` (a direct event: a burst of them is parsed once each, not
        routed through Bolt): the member's home is published after the acknowledgement;
        in multi-workspace mode only for a workspace with an install (as Bolt's
        `authorize` would)."""
        event = body.get("event")
        if self.home is None or not isinstance(event, Mapping):
            return
        team = body.get("team_id") or event.get("team") or ""
        if not isinstance(team, str):
            return
        enterprise = body.get("enterprise_id")
        if team and not await self.workspace_ready(
            team, enterprise if isinstance(enterprise, str) else None
        ):
            return
        await self.home.on_event(event, body)

    # -- multi-workspace mode ----------------------------------------------------------

    async def _authorize(
        self, enterprise_id: str | None, team_id: str | None
    ) -> AuthorizeResult | None:
        """Bolt's `authorize` for the Events API: the workspace's token (rotated by
        `WorkspaceTokens` under the store's claim); None (bolt logs it) when none."""
        if not team_id or not await self.workspace_ready(team_id, enterprise_id):
            return None
        token = await self.chat.token_for(team_id)
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=token)

    async def workspace_ready(self, team_id: str, enterprise_id: str | None = None) -> bool:
        """Multi-workspace mode: whether an install serves `team_id` (a request of one
        that has none is dropped with a logged line, nothing stored or posted)."""
        if not self.config.multi_workspace or self.chat.tokens is None:
            return True
        if enterprise_id and team_id not in self._teams_seen:
            remember = getattr(self.installs, "remember_team", None)
            if remember is not None:
                await remember(team_id, enterprise_id)
            self._teams_seen.add(team_id)
        try:
            await self.chat.tokens.token(team_id)
        except NotInstalled:  # logged once per interval by WorkspaceTokens
            self.service.metrics.dropped_payloads.inc(platform=PLATFORM, kind="not installed")
            return False
        except PlatformError:
            return False
        return True

    async def _installed(self, installation: Installation) -> None:
        """A (re)install: read its token afresh."""
        if self.chat.tokens is not None:
            if installation.team_id:
                self.chat.tokens.forget(installation.team_id)
            else:
                self.chat.tokens.forget_all()

    async def _uninstalled(self, body: dict[str, Any]) -> None:
        await self._forget_tokens(body, "uninstalled the app")

    async def _revoked(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        if (event.get("tokens") or {}).get("bot"):
            await self._forget_tokens(body, "revoked the bot token")

    async def _forget_tokens(self, body: dict[str, Any], what: str) -> None:
        """Delete the workspace's tokens at once: nothing is sent for it afterwards."""
        assert self.installs is not None and self.chat.tokens is not None
        team = body.get("team_id")
        enterprise = body.get("enterprise_id")
        org_wide = bool(body.get("is_enterprise_install"))
        await self.installs.async_delete_all(
            enterprise_id=enterprise, team_id=None if org_wide else team
        )
        if org_wide:
            self.chat.tokens.forget_all()
        elif team:
            self.chat.tokens.forget(str(team))
        log.info("Slack: %s %s: its tokens are deleted", team or enterprise, what)

    # -- /quiz -------------------------------------------------------------------------

    async def command(self, form: Mapping[str, str]) -> None:
        """Store the command (a redelivery stops here), then run it after the ack."""
        try:
            call = command_to_core(cast(SlashCommandForm, form))
        except KeyError as exc:
            raise Malformed(f"a slash command without {exc}") from None
        if not await self.workspace_ready(call.channel.workspace, form.get("enterprise_id")):
            return
        key = f"slack:command:{call.trigger_id}" if call.trigger_id else None
        if key is not None and not await self.deliveries.begin(
            key, PLATFORM, {"kind": "command", "form": dict(form)}
        ):
            log.info("Slack: dropped a repeated delivery of /quiz %s", call.subcommand)
            return
        self.tasks.spawn(self._run_command(call, key), name="slack-command")

    async def _run_command(self, call: CommandCall, key: str | None) -> None:
        locale = await self.service.locale_for(call.channel)
        inv = Invocation(call.channel, call.user, locale, self.admin(call.user))
        for reply in await run_command(self.commands, self.service, inv, call.text):
            await self._reply_command(call, reply)
        if key is not None:
            await self.deliveries.finish(key)

    async def _reply_command(self, call: CommandCall, reply: Reply) -> None:
        try:
            if reply.form is not None and call.trigger_id:
                try:
                    await self.chat.open_form(
                        call.trigger_id,
                        reply.form,
                        form_metadata(call.channel),
                        call.channel.workspace,
                    )
                    return
                except PlatformError:
                    pass  # the trigger expired (3 s): say it instead
            if not reply.private:
                try:
                    await self.chat.post_message(call.channel, reply.message)
                    return
                except NotInChannel:
                    if not call.response_url:
                        raise
                # A channel the bot has not joined: answer in the channel through the command.
                await self.chat.respond(call.response_url, reply.message, private=False)
                return
            await self._private(call.channel, call.user, call.response_url, reply.message)
        except PlatformError:
            pass  # logged and counted by SlackChat; the user sees nothing more we can send

    # -- buttons -----------------------------------------------------------------------

    async def interaction(
        self, payload: Mapping[str, Any], *, retry: bool = False
    ) -> dict[str, Any] | None:
        """Answers are recorded before this returns (the acknowledgement follows); other
        clicks are stored first, then run after it. A redelivered answer click that this
        process already handled is dropped; elsewhere it is recorded once more (a no-op)
        and answered with the outcome of its first delivery. A form's submission is
        answered in the acknowledgement itself (returned: Slack shows the errors in the
        form, or closes it)."""
        team = payload.get("team") or {}
        if isinstance(team, dict) and team.get("id"):
            enterprise = payload.get("enterprise") or {}
            org = enterprise.get("id") if isinstance(enterprise, dict) else None
            if not await self.workspace_ready(str(team["id"]), org):
                return None
        if payload.get("type") == "view_submission":
            return await self._submitted(payload)
        self._acks.enter()
        try:
            await self._clicked(payload, retry)
        finally:
            self._acks.leave()
        return None

    async def _clicked(self, payload: Mapping[str, Any], retry: bool) -> None:
        if payload.get("type") != "block_actions":
            raise Malformed(f"an interaction of type {str(payload.get('type'))[:30]!r}")
        try:
            clicks = clicks_to_core(cast(BlockActionsPayload, payload))
        except (KeyError, TypeError, AttributeError) as exc:
            raise Malformed(f"a block_actions payload without {exc}") from None
        for click in clicks:
            if click.click.kind == PRACTICE_NOW and not click.click.channel.channel:
                # A click in the App Home has no channel: the button names it.
                where = ChannelRef(
                    click.click.user.platform, click.click.user.workspace, click.click.value
                )
                click = replace(click, click=replace(click.click, channel=where))
            if click.click.kind == ANSWER:
                if self._recent.seen(click.key) and retry:
                    continue
                message = await self.interactions.click(
                    click.click.again() if retry else click.click
                )
                self.tasks.spawn(self._show(click, message), name="slack-outcome")
                continue
            if not self.interactions.knows(click.click):
                # A kind no feature here takes (a stale button): said so, nothing stored.
                self.service.metrics.dropped_payloads.inc(platform=PLATFORM, kind="foreign click")
                self.tasks.spawn(self._run_click(replace(click, trigger_id="")), name="slack-click")
                continue
            click = replace(click, click=replace(click.click, admin=self.admin(click.click.user)))
            if self.interactions.opens_form(click.click.kind):
                # views.open must follow within 3 s of the click: no delivery round trip.
                self.tasks.spawn(self._open_form(click), name="slack-form")
                continue
            if click.trigger_id and not await self.deliveries.begin(
                click.key, PLATFORM, {"kind": "click", "payload": dict(payload)}
            ):
                continue  # a redelivery
            self.tasks.spawn(self._run_click(click), name="slack-click")
        return None

    async def _run_click(self, click: ButtonClick) -> None:
        message = await self.interactions.click(click.click)
        await self._show(click, message)
        if click.trigger_id:
            await self.deliveries.finish(click.key)

    async def _open_form(self, click: ButtonClick) -> None:
        result = await self.interactions.open_form(click.click)
        if isinstance(result, Form):
            try:
                await self.chat.open_form(
                    click.trigger_id,
                    result,
                    form_metadata(click.click.channel),
                    click.click.channel.workspace,
                )
                return
            except PlatformError:
                result = Message(
                    body=translator(await self.service.locale_for(click.click.channel))(
                        FORM_EXPIRED
                    )
                )
        await self._show(click, result)

    async def _submitted(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        try:
            submission = submission_to_core(dict(payload))
        except (KeyError, TypeError, AttributeError) as exc:
            raise Malformed(f"a view_submission without {exc}") from None
        if submission is None:
            raise Malformed("a view_submission of a form that is not ours")
        submission = replace(submission, admin=self.admin(submission.user))
        reply = await self.interactions.submit(submission)
        if reply.errors:
            return {"response_action": "errors", "errors": dict(reply.errors)}
        if reply.message is not None:
            self.tasks.spawn(
                self._say_privately(submission.channel, submission.user, reply.message),
                name="slack-submitted",
            )
        return None

    async def _say_privately(self, channel: Any, user: UserRef, message: Message) -> None:
        with contextlib.suppress(PlatformError):  # logged and counted by SlackChat
            await self.chat.send_private(channel, user, message)

    async def _show(self, click: ButtonClick, message: Message) -> None:
        await self._acks.wait()
        with contextlib.suppress(PlatformError):  # logged and counted by SlackChat
            await self._private(click.click.channel, click.click.user, click.response_url, message)

    async def _private(
        self,
        channel: Any,
        user: UserRef,
        response_url: str | None,
        message: Message,
    ) -> None:
        # response_url first: it has no Web API rate tier (a burst of 1,000 clicks would
        # wait minutes on chat.postEphemeral's) and works where the bot is not a member.
        if response_url:
            try:
                await self.chat.respond(response_url, message, private=True)
                return
            except PlatformError as exc:
                self._problems.problem(
                    f"response_url {exc.reason[:60]}",
                    "response_url failed (%s); using chat.postEphemeral",
                    exc.reason,
                )
        await self.chat.send_private(channel, user, message)

    # -- replay after a crash ----------------------------------------------------------

    async def _replay(self, delivery: Delivery) -> None:
        payload = delivery.payload or {}
        if payload.get("kind") == "command":
            form = cast(SlashCommandForm, payload["form"])
            await self._run_command(command_to_core(form), None)
        elif payload.get("kind") == "click":
            for click in clicks_to_core(cast(BlockActionsPayload, payload["payload"])):
                if click.key == delivery.key:
                    core = replace(click.click, admin=self.admin(click.click.user))
                    await self._show(click, await self.interactions.click(core))
        elif payload.get("kind") == "file":
            await self.files.replay(payload, delivery.key)

    # -- admins ------------------------------------------------------------------------

    def admin(self, user: UserRef) -> AdminCheck:
        """Asked only for what is for admins: a `users.info` call, cached."""

        async def check() -> AdminStatus:
            return await self.admin_status(user)

        return check

    async def admin_status(self, user: UserRef) -> AdminStatus:
        """Listed in QUIZBOT_ADMINS, or a workspace admin or owner (users.info, kept
        `ADMIN_CACHE`); UNKNOWN when Slack cannot say (`SlackAdmins`). The dashboard asks
        the same."""
        return await self.admins(user)

    # -- start-up checks ---------------------------------------------------------------

    async def _check_bot_token(self) -> None:
        try:
            await self.chat.client.auth_test()
        except CALL_ERRORS as exc:
            status, reason = describe(exc)
            if status is None:
                raise ConfigError(
                    f"cannot reach Slack's Web API at {self.config.api_url} ({reason}); check "
                    "the network, or SLACK_API_URL if you set it"
                ) from exc
            raise ConfigError(
                f"Slack refused SLACK_BOT_TOKEN ({reason}): copy the Bot User OAuth Token "
                "(xoxb-...) from the app's OAuth & Permissions page, and reinstall the app "
                "if its scopes changed"
            ) from exc

    async def _socket_url(self, app_token: str) -> str:
        try:
            resp = await self.chat.client.apps_connections_open(app_token=app_token)
        except CALL_ERRORS as exc:
            raise ConfigError(
                f"Slack refused SLACK_APP_TOKEN ({describe(exc)[1]}): create an app-level token "
                "with the connections:write scope (Basic Information > App-Level Tokens) and "
                "turn Socket Mode on"
            ) from exc
        return str(resp["url"])


__all__ = ["EVENTS_PATH", "SlackAdapter"]
