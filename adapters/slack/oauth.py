"""The OAuth install of multi-workspace mode: ``GET /slack/install`` (the "Add to Slack"
page) and ``GET /slack/oauth_redirect``, through slack-bolt's `AsyncOAuthFlow` with the
installation and state stores on the project's database.

A redirect with a forged, reused or expired state, a cancelled approval, or a code Slack
refuses (``oauth.v2.access`` error) gets a page that says what happened and links back to
the install page; nothing is stored. Every page is in the browser's language
(``Accept-Language``: English or Greek, the gettext catalogs): bolt issues the state and
its cookie and answers with the authorize URL (its own page turned off,
``install_page_rendering_enabled=False``), and the install page links to it.
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
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.scopes import bot_scopes
from bot.domain import Locale
from bot.i18n import N_, Translator, translator

log = logging.getLogger(__name__)

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"

# What an installer reads for each of bolt's failure reasons.
REASONS = {
    "access_denied": N_("The install was cancelled in Slack."),
    "invalid_browser": N_(
        "This link was opened in another browser than the one that started the install."
    ),
    "invalid_state": N_("This install link has expired or was already used."),
    "missing_code": N_("Slack did not send the approval code."),
    "invalid_code": N_("Slack refused the approval (the code expired or was already used)."),
    "storage_error": N_("The installation could not be saved; please try again in a minute."),
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
        t = _translator(args.request)
        await installed(args.installation)
        where = args.installation.team_name or args.installation.enterprise_name or ""
        log.info(
            "Slack: installed in %s (%s)",
            args.installation.team_id or args.installation.enterprise_id,
            where[:60],
        )
        now_in = (
            t("quizbot is now in {place}.", place=html.escape(where))
            if where
            else t("quizbot is now in your workspace.")
        )
        return _page(
            t,
            200,
            t("quizbot is installed"),
            now_in
            + " "
            + t("Type {command} in a channel to start.", command="<code>/quiz help</code>"),
        )

    async def failure(args: AsyncFailureArgs) -> BoltResponse:
        t = _translator(args.request)
        known = REASONS.get(args.reason)
        reason = t(known) if known else t("Slack answered: {reason}", reason=args.reason[:80])
        log.info("Slack: an install failed (%s)", args.reason[:80])
        again = t("Start the install again")
        return _page(
            t,
            args.suggested_status_code,
            t("quizbot could not be installed"),
            f"{html.escape(reason)} <a href='{INSTALL_PATH}'>{html.escape(again)}</a>.",
        )

    settings = AsyncOAuthSettings(
        client_id=client_id,
        client_secret=client_secret,
        scopes=sorted(bot_scopes()),
        install_path=INSTALL_PATH,
        redirect_uri_path=REDIRECT_PATH,
        redirect_uri=redirect_uri,
        authorization_url=authorization_url,
        install_page_rendering_enabled=False,  # our page, in the browser's language
        installation_store=installs,
        installation_store_bot_only=False,
        state_store=states,
        callback_options=AsyncCallbackOptions(success=success, failure=failure),
        logger=logging.getLogger("adapters.slack.oauth"),
    )
    return AsyncOAuthFlow(client=client, settings=settings)


def mount_oauth(app: web.Application, flow: AsyncOAuthFlow) -> None:
    async def install(request: web.Request) -> web.Response:
        """The "Add to Slack" page: bolt's state cookie, and its authorize URL as the
        button."""
        bolt = await to_bolt_request(request)
        issued = await flow.handle_installation(bolt)
        t = _translator(bolt)
        url = html.escape(issued.headers["location"][0])
        button = html.escape(t("Add to Slack"))
        page = _page(
            t,
            200,
            t("Add quizbot to Slack"),
            t(
                "quizbot posts a daily question in your channels, keeps the boards and "
                "explains GPU memory with small demos."
            )
            + f'</p><p><a href="{url}">{button}</a>',
        )
        page.headers["set-cookie"] = list(issued.headers.get("set-cookie", []))
        response: web.Response = await to_aiohttp_response(page)
        return response

    async def redirect(request: web.Request) -> web.Response:
        bolt = await to_bolt_request(request)
        response: web.Response = await to_aiohttp_response(await flow.handle_callback(bolt))
        return response

    app.router.add_get(INSTALL_PATH, install)
    app.router.add_get(REDIRECT_PATH, redirect)


def _translator(request: AsyncBoltRequest) -> Translator:
    """The browser's language (``Accept-Language``), English if it asks for neither."""
    header = ",".join(request.headers.get("accept-language", []))
    return translator(Locale.accepted(header) or Locale.EN)


def _page(t: Translator, status: int, title: str, body: str) -> BoltResponse:
    text = (
        f"<!DOCTYPE html><html lang='{t.locale}'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{body}</p></body></html>"
    )
    return BoltResponse(
        status=status, body=text, headers={"Content-Type": "text/html; charset=utf-8"}
    )


__all__ = ["INSTALL_PATH", "REASONS", "REDIRECT_PATH", "mount_oauth", "oauth_flow"]
