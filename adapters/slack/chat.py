"""`SlackChat`: the core's `Chat` port over Slack's Web API (`AsyncWebClient`).

A 429 is retried after its ``Retry-After`` (slack_sdk's rate-limit retry handler), up to
`max_rate_limit_retries` times, so a reveal is not dropped because Slack asked us to
slow down; connection resets and 500/503 answers are retried too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.errors import CALL_ERRORS, describe, platform_error
from adapters.slack.render import SlackMessage, render, render_form
from adapters.slack.tokens import NotInstalled, WorkspaceTokens
from bot.domain import ChannelRef, MessageRef, Platform, UserRef
from bot.errors import PlatformError
from bot.forms import Form
from bot.lifecycle import Lifecycle
from bot.logs import ThrottledLog
from bot.messages import Attachment, Image, Message
from bot.metrics import QuizMetrics

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_API_URL = "https://slack.com/api/"
# Where `url_private` points (Slack, GovSlack): the bot token is sent nowhere else, and
# only over https on the default port.
_FILE_HOSTS = frozenset({"files.slack.com", "files.slack-gov.com"})
_DEFAULT_PORTS = {"https": 443, "http": 80}

Sleep = Callable[[float], Awaitable[None]]


class _SleepsThrough(AsyncRetryHandler):
    """A retry handler that waits between attempts with the injectable sleep instead of
    `asyncio.sleep`: by default slack_sdk's backoff (its interval calculator)."""

    def __init__(self, max_retry_count: int, sleep: Sleep = asyncio.sleep) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self._sleep = sleep

    def _duration(
        self,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None,
        error: Exception | None,
    ) -> float:
        """The seconds to wait before the next attempt."""
        return self.interval_calculator.calculate_sleep_duration(state.current_attempt)

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        duration = self._duration(state, request, response, error)
        state.next_attempt_requested = True
        await self._sleep(duration)
        state.increment_current_attempt()


class RetryAfterHandler(_SleepsThrough, AsyncRateLimitErrorRetryHandler):
    """slack_sdk's rate-limit handler: waits ``Retry-After`` seconds plus up to a second
    of jitter (so many waiting calls do not return at once), with an injectable sleep."""

    def __init__(
        self,
        max_retry_count: int,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        super().__init__(max_retry_count, sleep)
        self._jitter = jitter

    def _duration(
        self,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None,
        error: Exception | None,
    ) -> float:
        if response is None:
            raise error or RuntimeError("rate-limit retry without a response")
        wait = 1.0
        for name, values in response.headers.items():
            if name.lower() == "retry-after" and values:
                with contextlib.suppress(ValueError):
                    wait = max(0.0, float(values[0]))
        duration = wait + min(max(self._jitter(), 0.0), 1.0)
        log.warning("Slack rate limit on %s: retrying in %.1f s", request.url, duration)
        return duration


class _ConnectionErrorRetry(_SleepsThrough, AsyncConnectionErrorRetryHandler):
    """Connection resets, with slack_sdk's backoff."""


class _ServerErrorRetry(_SleepsThrough, AsyncServerErrorRetryHandler):
    """500/503 answers, with slack_sdk's backoff."""


def retry_handlers(max_rate_limit_retries: int, sleep: Sleep) -> list[AsyncRetryHandler]:
    """Connection errors and 500/503 twice each with slack_sdk's backoff, 429s as Slack's
    Retry-After says: every wait through `sleep`."""
    return [
        _ConnectionErrorRetry(2, sleep),
        RetryAfterHandler(max_rate_limit_retries, sleep),
        _ServerErrorRetry(2, sleep),
    ]


class OAuthWebClient(AsyncWebClient):
    """`AsyncWebClient` whose ``oauth.v2.access`` sends the client credentials in the form
    body (which Slack takes as well as HTTP Basic auth) rather than through aiohttp's
    deprecated `BasicAuth`: installs and token refreshes."""

    async def oauth_v2_access(
        self,
        *,
        client_id: str,
        client_secret: str,
        code: str | None = None,
        redirect_uri: str | None = None,
        grant_type: str | None = None,
        refresh_token: str | None = None,
        **kwargs: Any,
    ) -> AsyncSlackResponse:
        fields = {
            "client_id": client_id,
            "client_secret": client_secret,
            "code": code,
            "redirect_uri": redirect_uri,
            "grant_type": grant_type,
            "refresh_token": refresh_token,
            **kwargs,
        }
        data = {k: v for k, v in fields.items() if v is not None}
        response: AsyncSlackResponse = await self.api_call("oauth.v2.access", data=data)
        return response


class SlackChat(Lifecycle):
    """Outbound Slack calls. Start it (``async with``) before use: it owns the HTTP session
    shared by every Web API call and `response_url` reply.

    Every failed call (after slack_sdk's retries) is logged once per interval with its
    method and status, counted in ``quizbot_platform_errors_total``, and raised as the
    core's `PlatformError` (`NotInChannel` where the bot may not post).

    Single-token mode (`token`, SLACK_BOT_TOKEN) sends every call with that token. In
    multi-workspace mode (`tokens`) every call that concerns a workspace is sent with that
    workspace's own bot token (`WorkspaceTokens`): a post, a reply, an ephemeral, an
    upload, `users.info` of workspace A never goes out with B's token; a workspace with no
    installation gets nothing (`NotInstalled`, logged once)."""

    def __init__(
        self,
        token: str | None,
        *,
        tokens: WorkspaceTokens | None = None,
        base_url: str = DEFAULT_API_URL,
        max_rate_limit_retries: int = 30,
        sleep: Sleep = asyncio.sleep,
        timeout: int = 30,
        metrics: QuizMetrics | None = None,
    ) -> None:
        if token is None and tokens is None:
            raise ValueError("SlackChat needs a bot token or WorkspaceTokens")
        self._token = token
        self.tokens = tokens
        self._clients: dict[str, AsyncWebClient] = {}
        self._base_url = base_url if base_url.endswith("/") else base_url + "/"
        self._handlers = retry_handlers(max_rate_limit_retries, sleep)
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        self.metrics = metrics
        self._problems = ThrottledLog(log)

    async def initialize(self) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=100),
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            )
            self._client = OAuthWebClient(
                token=self._token,
                base_url=self._base_url,
                session=self._session,
                timeout=self._timeout,
                retry_handlers=self._handlers,
            )
            if self.tokens is not None:
                self.tokens.oauth_client = self._client  # tokenless in this mode

    async def shutdown(self) -> None:
        if self.tokens is not None:
            await self.tokens.shutdown()
        if self._session is not None:
            await self._session.close()
            self._session = None
            self._client = None
            self._clients.clear()

    @property
    def multi_workspace(self) -> bool:
        return self.tokens is not None

    @property
    def client(self) -> AsyncWebClient:
        if self._client is None:
            raise RuntimeError("SlackChat is not started: use `async with SlackChat(...)`")
        return self._client

    async def client_for(self, workspace: str) -> AsyncWebClient:
        """The client that acts in `workspace`: the one token's (single-token mode), or a
        client with the workspace's own bot token on the shared session."""
        if self.tokens is None:
            return self.client
        token = await self.tokens.token(workspace)
        client = self._clients.get(token)
        if client is None:
            if self._session is None:
                raise RuntimeError("SlackChat is not started: use `async with SlackChat(...)`")
            if len(self._clients) >= 10_000:
                self._clients.clear()
            client = self._clients[token] = AsyncWebClient(
                token=token,
                base_url=self._base_url,
                session=self._session,
                timeout=self._timeout,
                retry_handlers=self._handlers,
            )
        return client

    async def can_post(self, channel: ChannelRef) -> bool:
        """False for a channel of a workspace with no installation (multi-workspace mode):
        the scheduler skips its slots (paused) until the workspace installs again."""
        if self.tokens is None:
            return True
        try:
            await self.tokens.token(channel.workspace)
        except NotInstalled:
            return False
        return True

    async def token_for(self, workspace: str) -> str:
        if self.tokens is None:
            assert self._token is not None
            return self._token
        return await self.tokens.token(workspace)

    async def call(self, method: str, work: Awaitable[T], workspace: str | None = None) -> T:
        """Await one Web API call; a failure becomes a logged, counted `PlatformError`."""
        try:
            return await work
        except CALL_ERRORS as exc:
            status, reason = describe(exc)
            if self.metrics is not None:
                self.metrics.platform_errors.inc(
                    platform="slack", method=method, status=str(status or "none")
                )
            if workspace is not None and self.tokens is not None and reason in _TOKEN_GONE:
                self.tokens.forget(workspace)  # read the store again next time
                self._problems.problem(
                    f"slack token refused {workspace} {reason}",
                    "Slack refused the bot token of workspace %s (%s, on %s): nothing sent; "
                    "its token is read again from the installs (reinstall the app if it "
                    "was revoked)",
                    workspace,
                    reason,
                    method,
                )
            else:
                self._problems.problem(
                    f"slack {method} {status} {reason}",
                    "Slack %s failed: %s %s",
                    method,
                    status,
                    reason,
                )
            raise platform_error(method, exc) from exc

    # -- the Chat port -----------------------------------------------------------------

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        slack = render(message)
        client = await self.client_for(channel.workspace)
        resp = await self.call(
            "chat.postMessage",
            client.chat_postMessage(
                channel=channel.channel, **_content(slack), unfurl_links=False, unfurl_media=False
            ),
            channel.workspace,
        )
        ref = MessageRef(channel, str(resp["ts"]))
        if message.image is not None:
            await self.upload_image(ref, message.image)
        return ref

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        slack = render(message)
        client = await self.client_for(parent.channel.workspace)
        resp = await self.call(
            "chat.postMessage",
            client.chat_postMessage(
                channel=parent.channel.channel,
                thread_ts=parent.message,
                **_content(slack),
                unfurl_links=False,
                unfurl_media=False,
            ),
            parent.channel.workspace,
        )
        if message.image is not None:
            await self.upload_image(parent, message.image)
        return MessageRef(parent.channel, str(resp["ts"]))

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        client = await self.client_for(channel.workspace)
        await self.call(
            "chat.postEphemeral",
            client.chat_postEphemeral(
                channel=channel.channel, user=user.user, **_content(render(message))
            ),
            channel.workspace,
        )

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        client = await self.client_for(ref.channel.workspace)
        await self.call(
            "chat.update",
            client.chat_update(
                channel=ref.channel.channel, ts=ref.message, **_content(render(message))
            ),
            ref.channel.workspace,
        )

    async def upload_image(self, parent: MessageRef, image: Image, comment: str = "") -> None:
        """`files_upload_v2`: get an upload URL, send the bytes, complete into the thread."""
        client = await self.client_for(parent.channel.workspace)
        await self.call(
            "files.upload",
            client.files_upload_v2(
                channel=parent.channel.channel,
                thread_ts=parent.message,
                file=image.data,
                filename=image.filename,
                title=image.title or image.filename,
                initial_comment=comment or None,
            ),
            parent.channel.workspace,
        )

    # -- beyond the port ---------------------------------------------------------------

    async def respond(self, response_url: str, message: Message, *, private: bool = True) -> None:
        """Reply through an interaction's `response_url` (no Web API rate tier; works in
        channels the bot has not joined)."""
        if self._session is None:
            raise RuntimeError("SlackChat is not started: use `async with SlackChat(...)`")
        slack = render(message)
        hook = AsyncWebhookClient(
            response_url,
            session=self._session,
            timeout=self._timeout,
            retry_handlers=self._handlers,
        )
        resp = await self.call(
            "response_url",
            hook.send(
                text=slack.text,
                blocks=slack.block_list,
                response_type="ephemeral" if private else "in_channel",
                replace_original=False,
            ),
        )
        if resp.status_code != 200:
            raise PlatformError("Slack", "response_url", resp.status_code, resp.body[:200])

    async def open_form(
        self, trigger_id: str, form: Form, metadata: str, workspace: str = ""
    ) -> None:
        """Open `form` as a modal for the user (of `workspace`) whose click or command
        carried `trigger_id` (valid for 3 s)."""
        client = await self.client_for(workspace)
        await self.call(
            "views.open",
            client.views_open(trigger_id=trigger_id, view=render_form(form, metadata)),
            workspace,
        )

    async def send_file(
        self, channel: ChannelRef, user: UserRef, file: Attachment, comment: str = ""
    ) -> None:
        """A file only `user` sees: uploaded into their direct message with the bot
        (`conversations.open`, then `files_upload_v2`)."""
        client = await self.client_for(channel.workspace)
        opened = await self.call(
            "conversations.open", client.conversations_open(users=user.user), channel.workspace
        )
        dm = str((opened.get("channel") or {}).get("id", ""))
        await self.call(
            "files.upload",
            client.files_upload_v2(
                channel=dm,
                file=file.data,
                filename=file.filename,
                title=file.title or file.filename,
                initial_comment=comment or None,
            ),
            channel.workspace,
        )

    async def download(
        self, url: str, max_bytes: int, sink: Callable[[bytes], object], workspace: str = ""
    ) -> int:
        """Stream a file a member shared (its ``url_private``) into `sink`, with the bot
        token (``files:read``); only to Slack's own hosts (or the configured API's host).
        Raises `PlatformError` for a refusal, a login page instead of the file, or more
        than `max_bytes`."""
        if self._session is None:
            raise RuntimeError("SlackChat is not started: use `async with SlackChat(...)`")
        if not self._is_file_url(url):
            where = urlsplit(url)
            raise PlatformError(
                "Slack",
                "files",
                None,
                f"not a Slack file URL: {where.scheme}://{where.netloc[:60]}",
            )
        headers = {"Authorization": f"Bearer {await self.token_for(workspace)}"}
        try:
            # No redirect is followed: its target would get the token unchecked. Slack
            # answers a file it will not give with a redirect to its login page anyway.
            async with self._session.get(url, headers=headers, allow_redirects=False) as resp:
                if resp.status != 200 or resp.content_type == "text/html":
                    raise PlatformError(
                        "Slack",
                        "files",
                        resp.status,
                        "the file could not be downloaded (is the files:read scope granted?)",
                    )
                size = 0
                async for chunk in resp.content.iter_chunked(1 << 16):
                    size += len(chunk)
                    if size > max_bytes:
                        raise PlatformError(
                            "Slack", "files", resp.status, f"the file is over {max_bytes:,} bytes"
                        )
                    sink(chunk)
                return size
        except aiohttp.ClientError as exc:
            raise PlatformError("Slack", "files", None, str(exc)[:200]) from exc

    def _is_file_url(self, url: str) -> bool:
        """Slack's file hosts over https on the default port, or exactly the configured
        API's scheme, host and port (a GovSlack proxy, the tests' fake)."""
        try:
            parts, base = urlsplit(url), urlsplit(self._base_url)
            where = (parts.scheme, parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme))
            api = (base.scheme, base.hostname, base.port or _DEFAULT_PORTS.get(base.scheme))
        except ValueError:  # a port that is not a number
            return False
        return where == api or where in {("https", host, 443) for host in _FILE_HOSTS}

    async def group_members(self, workspace: str, group: str) -> list[UserRef] | None:
        """A user group's members (`bot.teams.GroupDirectory`); None when Slack refuses
        (no such group, no usergroups:read scope)."""
        try:
            client = await self.client_for(workspace)
            resp = await self.call(
                "usergroups.users.list", client.usergroups_users_list(usergroup=group), workspace
            )
        except PlatformError:
            return None
        users = resp.get("users")
        if not isinstance(users, list):
            return None
        return [UserRef(Platform.SLACK, workspace, str(u), str(u)) for u in users]

    async def user_info(self, user_id: str, workspace: str = "") -> dict[str, Any]:
        client = await self.client_for(workspace)
        resp = await self.call("users.info", client.users_info(user=user_id), workspace)
        user = resp.get("user")
        return user if isinstance(user, dict) else {}


# Errors after which a workspace's kept token is read from the store again.
_TOKEN_GONE = frozenset({"invalid_auth", "token_revoked", "token_expired", "account_inactive"})


def _content(slack: SlackMessage) -> dict[str, Any]:
    return {"text": slack.text, "blocks": slack.block_list}


__all__ = ["DEFAULT_API_URL", "RetryAfterHandler", "SlackChat"]
