"""The OAuth install of multi-workspace mode: ``GET /slack/install`` (the "Add to Slack"
page) and ``GET /slack/oauth_redirect``, through slack-bolt's `AsyncOAuthFlow` with the
installation and state stores on the project's database.

A redirect with a forged, reused or expired state, a cancelled approval, or a code Slack
refuses (``oauth.v2.access`` error) gets a page that says what happened and links back to
the install page; nothing is stored.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.oauth.async_callback_options import (
    AsyncCallbackOptions,
    AsyncFailureArgs,
    AsyncSuccessArgs,
)
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.response import BoltResponse
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.scopes import bot_scopes

log = logging.getLogger(__name__)

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"

# What an installer reads for each of bolt's failure reasons.
REASONS = {
    "access_denied": "The install was cancelled in Slack.",
    "invalid_browser": "This link was opened in another browser than the one that started "
    "the install.",
    "invalid_state": "This install link has expired or was already used.",
    "missing_code": "Slack did not send the approval code.",
    "invalid_code": "Slack refused the approval (the code expired or was already used).",
    "storage_error": "The installation could not be saved; please try again in a minute.",
}

Installed = Callable[[Installation], Awaitable[None]]


def oauth_flow(
    client: AsyncWebClient,
    *,
    client_id: str,
    client_secret: str,
    installs: AsyncInstallationStore,
    states: AsyncOAuthStateStore,
    authorization_url: str,
    installed: Installed,
    redirect_uri: str | None = None,
) -> AsyncOAuthFlow:
    async def success(args: AsyncSuccessArgs) -> BoltResponse:
        await installed(args.installation)
        where = args.installation.team_name or args.installation.enterprise_name or ""
        log.info(
            "Slack: installed in %s (%s)",
            args.installation.team_id or args.installation.enterprise_id,
            where[:60],
        )
        return _page(
            200,
            "quizbot is installed",
            f"quizbot is now in {html.escape(where) or 'your workspace'}. "
            "Type <code>/quiz help</code> in a channel to start.",
        )

    async def failure(args: AsyncFailureArgs) -> BoltResponse:
        reason = REASONS.get(args.reason, f"Slack answered: {args.reason[:80]}")
        log.info("Slack: an install failed (%s)", args.reason[:80])
        return _page(
            args.suggested_status_code,
            "quizbot could not be installed",
            f"{html.escape(reason)} <a href='{INSTALL_PATH}'>Start the install again</a>.",
        )

    settings = AsyncOAuthSettings(
        client_id=client_id,
        client_secret=client_secret,
        scopes=sorted(bot_scopes()),
        install_path=INSTALL_PATH,
        redirect_uri_path=REDIRECT_PATH,
        redirect_uri=redirect_uri,
        authorization_url=authorization_url,
        installation_store=installs,
        installation_store_bot_only=False,
        state_store=states,
        callback_options=AsyncCallbackOptions(success=success, failure=failure),
        logger=logging.getLogger("adapters.slack.oauth"),
    )
    return AsyncOAuthFlow(client=client, settings=settings)


def mount_oauth(app: web.Application, flow: AsyncOAuthFlow) -> None:
    async def install(request: web.Request) -> web.Response:
        bolt = await to_bolt_request(request)
        response: web.Response = await to_aiohttp_response(await flow.handle_installation(bolt))
        return response

    async def redirect(request: web.Request) -> web.Response:
        bolt = await to_bolt_request(request)
        response: web.Response = await to_aiohttp_response(await flow.handle_callback(bolt))
        return response

    app.router.add_get(INSTALL_PATH, install)
    app.router.add_get(REDIRECT_PATH, redirect)


def _page(status: int, title: str, body: str) -> BoltResponse:
    text = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{body}</p></body></html>"
    )
    return BoltResponse(
        status=status, body=text, headers={"Content-Type": "text/html; charset=utf-8"}
    )


__all__ = ["INSTALL_PATH", "REASONS", "REDIRECT_PATH", "mount_oauth", "oauth_flow"]
