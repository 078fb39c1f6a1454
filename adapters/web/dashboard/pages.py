"""Serving the registry's pages (`bot.pages.Page`) under ``/w/<platform>/<workspace>/``.

The order of checks, the same for every page and method: a session (else: GET goes to
the sign-in, anything else is 403); the workspace is the session's and the quiz knows it
(else 404, never saying which); the page exists (404) and takes the method (405); an
admin page asks the workspace's admin check (403 with the chat's refusal words); a POST
carries the session's CSRF token (403) — for an upload, as the form's first field, read
after the announced length was checked and before the file. Then the handler runs with a
`PageRequest` and its result is rendered, redirected or sent as a file.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from aiohttp import web

from adapters.web.bodies import is_cut, streamed, streams_body
from adapters.web.dashboard import tokens
from adapters.web.dashboard.uploads import Refused, receive
from bot.admin import EVERYONE, NOBODY, AdminCheck, AdminStatus, admin_refusal
from bot.boundary import failure_message
from bot.domain import Locale, Platform, UserRef
from bot.errors import UserFacingError
from bot.i18n import N_, translator
from bot.intake import SentFile
from bot.logs import ThrottledLog, problem_key
from bot.pages import POST, Download, Page, PageNotFound, PageRequest, Redirect, Render
from bot.signin import Membership, WebSession
from bot.team import Workspace

if TYPE_CHECKING:
    from adapters.web.dashboard.site import AdminLookup, Dashboard

log = logging.getLogger(__name__)
_NUMBER = r"(\d{1,18})"
EXPIRED = N_("This form has expired: reload the page and send it again.")


def _pattern(page: Page) -> re.Pattern[str]:
    parts = [_NUMBER if p.startswith("{") else re.escape(p) for p in page.path.split("/")]
    return re.compile("/".join(parts) if page.path else "")


class PageServer:
    def __init__(self, site: Dashboard, admins: Mapping[Platform, AdminLookup]) -> None:
        self.site = site
        self.admins = admins
        self.routes = [(_pattern(p), p) for p in site.quiz.registry.pages]
        self.problems = ThrottledLog(log)

    def match(self, rest: str) -> tuple[Page, dict[str, int]] | None:
        rest = rest.strip("/")
        for pattern, page in self.routes:
            found = pattern.fullmatch(rest)
            if found:
                return page, {n: int(v) for n, v in zip(page.params, found.groups(), strict=True)}
        return None

    def admin_check(self, membership: Membership, member: UserRef) -> AdminCheck:
        """The platform's own rule, asked on the server for each request (at most once):
        Slack's users.info and Discord's member and roles (the bot's token), each kept
        `bot.admin.ADMIN_CACHE` at most, as in chat; the console's sign-in says it
        (everyone). A platform without a lookup here has no admins."""
        lookup = self.admins.get(member.platform)
        if lookup is None:
            return EVERYONE if member.platform is Platform.CONSOLE and membership.admin else NOBODY
        answer: list[AdminStatus] = []

        async def check() -> AdminStatus:  # asked once per request
            if not answer:
                answer.append(await lookup(member))
            return answer[0]

        return check

    @streams_body
    async def serve(self, request: web.Request) -> web.StreamResponse:
        site = self.site
        found = await site.session(request)
        session = found[0] if found else None
        locale = site.locale(request, session)
        t = translator(locale)
        if session is None:
            if request.method in ("GET", "HEAD"):
                return web.Response(status=303, headers={"Location": "/"})
            return site.refusal(request, 403, t("Sign in first."), locale)
        platform = request.match_info["platform"]
        ws = request.match_info["workspace"]
        membership = session.membership(ws) if platform == session.platform else None
        not_found = t("Not found.")
        if membership is None:
            return site.refusal(request, 404, not_found, locale, signed_in=session)
        workspace = Workspace(Platform(platform), ws)
        channels = tuple(await site.store.dashboard.channels(workspace))
        matched = self.match(request.match_info.get("rest", ""))
        if not channels or matched is None:
            return site.refusal(request, 404, not_found, locale, signed_in=session)
        page, args = matched
        method = "GET" if request.method == "HEAD" else request.method
        if method not in page.methods:
            return web.Response(status=405, headers={"Allow": ", ".join(page.methods)})
        member = session.member(ws)
        admin = self.admin_check(membership, member)
        if page.admin and (status := await admin()) is not AdminStatus.YES:
            words = admin_refusal(Platform(platform), page.path.split("/")[0] or "", status, t)
            return site.refusal(request, 403, words, locale, signed_in=session)
        base = f"/w/{platform}/{quote(ws, safe='')}/"
        req = PageRequest(
            site.quiz, site.store, member, workspace, admin, locale, method, dict(request.query),
            args=args, channels=channels,
        )  # fmt: skip
        try:
            if method == POST:
                req = await self._posted(request, req, page, session, locale)
            result = await page.handler(req)
        except Refused as exc:
            return site.refusal(request, exc.status, exc.message, locale, signed_in=session)
        except PageNotFound:
            return site.refusal(request, 404, not_found, locale, signed_in=session)
        except UserFacingError as exc:
            return site.refusal(request, 400, str(exc), locale, signed_in=session)
        except Exception as exc:
            if req.upload is not None:
                req.upload.discard()
            if is_cut(exc):
                raise  # a slow, cut or malformed upload: the body guard answers it
            self.problems.problem(problem_key("dashboard page", exc), "page failed", exc=exc)
            body = failure_message(locale, exc).body
            return site.refusal(request, 500, body, locale, signed_in=session)
        return await self._answer(request, result, req, session, base, page, locale)

    async def _posted(
        self,
        request: web.Request,
        req: PageRequest,
        page: Page,
        session: WebSession,
        locale: Locale,
    ) -> PageRequest:
        t = translator(locale)
        if page.upload:
            route = self.site.quiz.registry.file_route(page.upload)
            if route is None:
                raise PageNotFound(page.upload)

            def sent(name: str, size: int, fields: dict[str, str]) -> SentFile:
                channel = req.channel if not fields.get("channel") else _chosen(req, fields)
                return SentFile(
                    name, size, req.member, channel, locale, req.admin, options=_options(fields)
                )

            got = await receive(request, route, session.csrf, sent, self.problems, t)
            form = {**got.fields}
            if got.refusal is not None:
                raise UserFacingError(got.refusal.body)
            return _with(req, form=form, upload=got.upload)
        if request.content_type not in ("application/x-www-form-urlencoded", "multipart/form-data"):
            raise Refused(403, t(EXPIRED))  # no form, so no CSRF token
        async with streamed(request):
            posted = await request.post()
        form = {str(k)[:32]: str(v)[:2000] for k, v in posted.items() if isinstance(v, str)}
        if not tokens.same(form.get("csrf", ""), session.csrf):
            raise Refused(403, t(EXPIRED))
        return _with(req, form=form)

    async def _answer(
        self,
        request: web.Request,
        result: Any,
        req: PageRequest,
        session: WebSession,
        base: str,
        page: Page,
        locale: Locale,
    ) -> web.StreamResponse:
        site = self.site
        if isinstance(result, Redirect):
            to = "/" if result.to.startswith("/") else base + result.to
            if result.query:
                to += "?" + urlencode(dict(result.query))
            response = web.Response(status=303, headers={"Location": to})
            if result.sign_out:
                await site.sessions.delete_member(session.platform, session.user)
                site.end_session(response)
            site.set_notice(response, result.notice)
            return response
        if isinstance(result, Download):
            inline = result.content_type == "image/png"
            disposition = "inline" if inline else "attachment"
            return web.Response(
                body=result.data,
                headers={
                    "Content-Type": result.content_type,
                    "Content-Disposition": f'{disposition}; filename="{result.name}"',
                },
            )
        assert isinstance(result, Render)
        is_admin = await req.admin() is AdminStatus.YES
        nav = [
            {"path": p.path, "title": p.title, "here": p is page}
            for p in site.quiz.registry.pages
            if p.nav and (is_admin or not p.admin)
        ]
        context = {
            "signed_in": session,
            "member": req.member,
            "workspace": req.workspace,
            "workspace_name": (session.membership(req.workspace.id) or Membership("")).name,
            "base": base,
            "nav": nav,
            "csrf": session.csrf,
            "is_admin": is_admin,
            "path": request.path_qs,
            **result.context,
        }
        return site.render(request, result.template, locale, context, result.status)


def _with(req: PageRequest, **changes: Any) -> PageRequest:
    from dataclasses import replace

    return replace(req, **changes)


def _chosen(req: PageRequest, fields: dict[str, str]) -> Any:
    return _with(req, form=fields).channel


def _options(fields: dict[str, str]) -> dict[str, str]:
    """A form's small fields as a file route reads a command's options (gpu_memory)."""
    return {k: v.strip() for k, v in fields.items() if k not in ("csrf", "channel") and v.strip()}


__all__ = ["PageServer"]
