"""The dashboard on the bot's aiohttp server: sign-in, sessions, and the registry's pages.

URLs (a contract): ``/`` (sign-in, or your workspaces), ``/login/slack``,
``/login/discord``, ``/auth/slack/callback``, ``/auth/discord/callback``, ``/logout``,
``/lang``, ``/static/…`` and every page a feature registered under
``/w/<platform>/<workspace id>/…``. A workspace that is unknown, or not the signed-in
member's, is a 404 whatever the page; an admin page is refused (403) to anyone the
workspace's admin check does not say yes for, on every request.

Sessions: the cookie carries a random token and its HMAC (`QUIZBOT_WEB_SECRET`);
`HttpOnly`, `SameSite=Lax`, `Secure` unless the dashboard is served over plain http on
127.0.0.1; the database keeps the token's SHA-256, the member, their workspaces and the
CSRF token every form carries and every POST must return. Sign-in: state and PKCE
verifier kept in the database (single use, ten minutes, any replica); attempts per
client and minute are limited.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from adapters.web.dashboard import tokens
from adapters.web.dashboard.oauth import Identity, Provider, SignInError
from adapters.web.dashboard.pages import PageServer
from adapters.web.dashboard.render import environment
from adapters.web.dashboard.security import security_headers
from bot.admin import AdminStatus
from bot.domain import Locale, Platform, UserRef
from bot.features import Quiz
from bot.i18n import N_, translator
from bot.ports import FeatureStore
from bot.signin import Membership, WebSession, WebSessions
from bot.team import Workspace

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
COOKIE = "quizbot_session"
SECURE_COOKIE = "__Host-quizbot_session"  # the prefix browsers hold to Secure, Path=/
LANG_COOKIE = "quizbot_lang"
NOTICE_COOKIE = "quizbot_notice"
CONSOLE = "console"

AdminLookup = Callable[[UserRef], Awaitable[AdminStatus]]


@dataclass(frozen=True, slots=True)
class DashboardConfig:
    secret: bytes
    public_url: str  # the base of redirects: https://quiz.example.com
    secure: bool = True  # cookies only over https
    session_ttl: timedelta = timedelta(hours=12)
    sign_in_ttl: timedelta = timedelta(minutes=10)
    sign_ins_per_minute: int = 20  # per client address, across replicas
    console_user: str = ""  # `quizbot web`: the local console's member, an admin
    providers: Mapping[str, Provider] = field(default_factory=dict)  # "slack", "discord"


class Dashboard:
    def __init__(
        self,
        quiz: Quiz,
        store: FeatureStore,
        sessions: WebSessions,
        config: DashboardConfig,
        *,
        admins: Mapping[Platform, AdminLookup] | None = None,
    ) -> None:
        self.quiz = quiz
        self.store = store
        self.sessions = sessions
        self.config = config
        self.clock = quiz.service.clock
        self.env = environment()
        self.pages = PageServer(self, admins or {})

    @property
    def cookie(self) -> str:
        return SECURE_COOKIE if self.config.secure else COOKIE

    def mount(self, app: web.Application) -> None:
        """Add the dashboard's routes to the bot's server (before it starts)."""
        app.middlewares.append(security_headers)
        r = app.router
        r.add_get("/", self.front)
        r.add_get("/login/{provider}", self.login)
        r.add_get("/auth/{provider}/callback", self.callback)
        r.add_route("*", "/logout", self.logout)
        r.add_post("/lang", self.language)
        r.add_get("/static/{name}", self.static)
        r.add_route("*", "/w/{platform}/{workspace}", self.pages.serve)
        r.add_route("*", "/w/{platform}/{workspace}/{rest:.*}", self.pages.serve)

    # -- sessions ----------------------------------------------------------------------

    async def session(self, request: web.Request) -> tuple[WebSession, str] | None:
        """The signed-in session, and its token's hash."""
        token = tokens.unsign(self.config.secret, request.cookies.get(self.cookie))
        if token is None:
            return None
        token_hash = tokens.digest(token)
        found = await self.sessions.get(token_hash, self.clock.now())
        return (found, token_hash) if found is not None else None

    async def start_session(self, identity: Identity, response: web.StreamResponse) -> None:
        now = self.clock.now()
        token = tokens.new_token()
        session = WebSession(
            platform=identity.platform,
            user=identity.user,
            name=identity.name,
            workspaces=identity.workspaces,
            csrf=tokens.new_token(),
            created_at=now,
            expires_at=now + self.config.session_ttl,
        )
        await self.sessions.create(tokens.digest(token), session)
        response.set_cookie(
            self.cookie,
            tokens.sign(self.config.secret, token),
            max_age=int(self.config.session_ttl.total_seconds()),
            path="/",
            httponly=True,
            secure=self.config.secure,
            samesite="Lax",
        )

    def end_session(self, response: web.StreamResponse) -> None:
        response.del_cookie(self.cookie, path="/")

    def locale(self, request: web.Request, session: WebSession | None) -> Locale:
        if session is not None and session.locale is not None:
            return session.locale
        chosen = Locale.parse(request.cookies.get(LANG_COOKIE, ""))
        if chosen is not None:
            return chosen
        return Locale.accepted(request.headers.get("Accept-Language", "")) or Locale.EN

    def notice(self, request: web.Request) -> str:
        """The one-time notice a redirect left (base64url inside: a cookie value holds no
        newline or quote as such)."""
        value = tokens.unsign(self.config.secret, request.cookies.get(NOTICE_COOKIE))
        try:
            return base64.urlsafe_b64decode(value.encode()).decode() if value else ""
        except (ValueError, UnicodeDecodeError):
            return ""

    def set_notice(self, response: web.StreamResponse, text: str) -> None:
        if text:
            response.set_cookie(
                NOTICE_COOKIE,
                tokens.sign(
                    self.config.secret, base64.urlsafe_b64encode(text[:1200].encode()).decode()
                ),
                max_age=60,
                path="/",
                httponly=True,
                secure=self.config.secure,
                samesite="Lax",
            )

    def render(
        self,
        request: web.Request,
        template: str,
        locale: Locale,
        context: Mapping[str, Any],
        status: int = 200,
    ) -> web.Response:
        t = translator(locale)
        notice = self.notice(request)
        html = self.env.get_template(template).render(
            t=t, n=t.n, locale=locale.value, notice=notice, **context
        )
        response = web.Response(text=html, status=status, content_type="text/html")
        if notice:
            response.del_cookie(NOTICE_COOKIE, path="/")
        return response

    def refusal(
        self, request: web.Request, status: int, message: str, locale: Locale, **context: Any
    ) -> web.Response:
        return self.render(
            request, "error.html", locale, {"status": status, "message": message, **context}, status
        )

    # -- the front page, sign-in, sign-out ------------------------------------------------

    async def front(self, request: web.Request) -> web.StreamResponse:
        found = await self.session(request)
        session = found[0] if found else None
        wanted = Locale.parse(request.query.get("lang", ""))
        locale = wanted or self.locale(request, session)
        if session is None:
            response = self.render(
                request,
                "signin.html",
                locale,
                {
                    "providers": sorted(self.config.providers),
                    "console": bool(self.config.console_user),
                },
            )
        else:
            response = self.render(
                request,
                "workspaces.html",
                locale,
                {"session": session, "csrf": session.csrf, "signed_in": session},
            )
        if wanted is not None:
            response.set_cookie(
                LANG_COOKIE, wanted.value, max_age=365 * 86400, path="/", samesite="Lax"
            )
        return response

    async def _limited(self, request: web.Request, locale: Locale) -> web.Response | None:
        """Sign-in attempts per client address and minute, counted in the database."""
        now = self.clock.now()
        window = now.replace(second=0, microsecond=0)
        hits = await self.sessions.hit(f"sign-in:{request.remote or '?'}", window)
        if hits <= self.config.sign_ins_per_minute:
            return None
        t = translator(locale)
        response = self.refusal(
            request, 429, t("Too many sign-in attempts: wait a minute and try again."), locale
        )
        response.headers["Retry-After"] = "60"
        return response

    def redirect_uri(self, provider: str) -> str:
        return f"{self.config.public_url}/auth/{provider}/callback"

    async def login(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["provider"]
        locale = self.locale(request, None)
        if (limited := await self._limited(request, locale)) is not None:
            return limited
        if name == CONSOLE and self.config.console_user:
            return await self._console(request, locale)
        provider = self.config.providers.get(name)
        if provider is None:
            t = translator(locale)
            return self.refusal(request, 404, t("Not found."), locale)
        now = self.clock.now()
        state, verifier = tokens.new_token(), tokens.new_token() + tokens.new_token()
        await self.sessions.purge(now)
        await self.sessions.put_sign_in(
            tokens.digest(state), name, verifier, now, now + self.config.sign_in_ttl
        )
        return see_other(provider.authorize_url(state, verifier, self.redirect_uri(name)))

    async def callback(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["provider"]
        locale = self.locale(request, None)
        t = translator(locale)
        if (limited := await self._limited(request, locale)) is not None:
            return limited
        provider = self.config.providers.get(name)
        if provider is None:
            return self.refusal(request, 404, t("Not found."), locale)
        state, code = request.query.get("state", ""), request.query.get("code", "")
        verifier = (
            await self.sessions.take_sign_in(tokens.digest(state), name, self.clock.now())
            if state and len(state) < 200
            else None
        )
        if verifier is None or not code or len(code) > 500:
            message = t("This sign-in link has expired or was used already: sign in again.")
            return self.refusal(request, 400, message, locale, retry=True)
        try:
            identity = await provider.identify(code, verifier, self.redirect_uri(name))
        except SignInError as exc:
            log.warning("%s sign-in failed: %s", name, exc)
            return self.refusal(
                request, 502, t("The sign-in did not complete: {why}.", why=str(exc)), locale
            )
        known = []
        for m in identity.workspaces:  # only workspaces the quiz has a channel in
            if await self.store.dashboard.channels(Workspace(identity.platform, m.workspace)):
                known.append(m)
        identity = replace(identity, workspaces=tuple(known))
        if not identity.workspaces:
            message = t(
                "You are signed in, but the quiz bot is in none of your workspaces or servers."
            )
            return self.refusal(request, 403, message, locale, retry=True)
        return await self._signed_in(identity)

    async def _signed_in(self, identity: Identity) -> web.StreamResponse:
        only = identity.workspaces[0].workspace if len(identity.workspaces) == 1 else None
        to = f"/w/{identity.platform}/{only}/" if only is not None else "/"
        response = see_other(to)
        await self.start_session(identity, response)
        log.info("dashboard: %s user signed in", identity.platform)
        return response

    async def console_link(self) -> str:
        """`quizbot web`: a one-time sign-in link for the console's member (ten minutes)."""
        now = self.clock.now()
        token = tokens.new_token()
        await self.sessions.put_sign_in(
            tokens.digest(token), CONSOLE, CONSOLE, now, now + self.config.sign_in_ttl
        )
        return f"{self.config.public_url}/login/console?{urlencode({'token': token})}"

    async def _console(self, request: web.Request, locale: Locale) -> web.StreamResponse:
        token = request.query.get("token", "")
        taken = (
            await self.sessions.take_sign_in(tokens.digest(token), CONSOLE, self.clock.now())
            if token and len(token) < 200
            else None
        )
        if taken is None:
            t = translator(locale)
            message = t("This sign-in link has expired or was used already: run quizbot web again.")
            return self.refusal(request, 400, message, locale)
        user = self.config.console_user
        member = Membership(CONSOLE, CONSOLE, True)  # everyone is an admin, as in `play`
        return await self._signed_in(Identity(Platform.CONSOLE, user, user, (member,)))

    async def logout(self, request: web.Request) -> web.StreamResponse:
        found = await self.session(request)
        locale = self.locale(request, found[0] if found else None)
        if request.method == "GET":
            if found is None:
                return see_other("/")
            session = found[0]
            return self.render(
                request, "logout.html", locale, {"csrf": session.csrf, "signed_in": session}
            )
        if request.method != "POST":
            return web.Response(status=405, headers={"Allow": "GET, POST"})
        if found is None:
            return see_other("/")
        form = await request.post()
        if not tokens.same(str(form.get("csrf", "")), found[0].csrf):
            return self.refusal(request, 403, translator(locale)(EXPIRED), locale)
        await self.sessions.delete(found[1])
        response = see_other("/")
        self.end_session(response)
        return response

    async def language(self, request: web.Request) -> web.StreamResponse:
        found = await self.session(request)
        form = await request.post()
        locale = Locale.parse(str(form.get("lang", ""))) or Locale.EN
        back = str(form.get("back", "/"))
        if not back.startswith("/") or back.startswith("//"):
            back = "/"
        if found is None:
            return see_other("/?" + urlencode({"lang": locale.value}))
        if not tokens.same(str(form.get("csrf", "")), found[0].csrf):
            return self.refusal(request, 403, translator(locale)(EXPIRED), locale)
        await self.sessions.set_locale(found[1], locale)
        return see_other(back)

    async def static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        path = STATIC / name
        if "/" in name or name.startswith(".") or not path.is_file():
            return web.Response(status=404)
        types = {".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png"}
        response = web.Response(
            body=path.read_bytes(), content_type=types.get(path.suffix, "application/octet-stream")
        )
        response.headers["Cache-Control"] = "public, max-age=3600"
        return response

    def expires(self, now: datetime) -> datetime:
        return now + self.config.session_ttl


EXPIRED = N_("This form has expired: reload the page and send it again.")


def see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})


__all__ = ["AdminLookup", "Dashboard", "DashboardConfig"]
