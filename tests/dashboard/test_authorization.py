"""The authorization matrix: {anonymous, member of A, admin of A, admin of B} × every
route × every method, each answer as the rules say (never a page of another workspace,
never an admin page for a member, never a change without the CSRF token)."""

from __future__ import annotations

import pytest

from bot.pages import Page
from tests.dashboard.harness import A, B, Site, member

METHODS = ("GET", "POST", "PUT", "DELETE")
WHO = ("anonymous", "member of A", "admin of A", "admin of B")


def page_url(page: Page) -> str:
    return "/w/slack/TA/" + page.path.replace("{job}", "1")


def expected_page(who: str, page: Page, method: str) -> int:
    if who == "anonymous":
        return 303 if method == "GET" else 403
    if who == "admin of B":
        return 404  # not their workspace: as if it did not exist
    if method not in page.methods:
        return 405
    if page.admin and who == "member of A":
        return 403
    if method == "POST":
        return 403  # no CSRF token
    if page.path.startswith("clinic/{job}"):
        return 404  # nobody's upload here: not theirs either
    return 200


def expected_site(who: str, path: str, method: str) -> int:
    signed_in = who != "anonymous"
    table: dict[str, dict[str, int]] = {
        "/": {"GET": 200},
        "/static/style.css": {"GET": 200},
        "/login/slack": {"GET": 404},  # no Slack sign-in configured on this site
        "/auth/slack/callback": {"GET": 404},
        "/logout": {"GET": 200 if signed_in else 303, "POST": 403 if signed_in else 303},
        "/lang": {"POST": 403 if signed_in else 303},
    }
    return table[path].get(method, 405)


async def test_every_route_and_method_answers_each_kind_of_visitor_as_the_rules_say(
    site: Site,
) -> None:
    clients = {who: site.client() for who in WHO}
    try:
        await site.sign_in(clients["member of A"], member(A, "ann"), admin=False)
        await site.sign_in(clients["admin of A"], member(A, "alice"), admin=True)
        await site.sign_in(clients["admin of B"], member(B, "bob"), admin=True)
        wrong: list[str] = []
        checked = 0
        for who, client in clients.items():
            for page in site.quiz.registry.pages:
                for method in METHODS:
                    async with client.request(
                        method, page_url(page), allow_redirects=False
                    ) as resp:
                        want = expected_page(who, page, method)
                        checked += 1
                        if resp.status != want:
                            url = page_url(page)
                            wrong.append(f"{who} {method} {url}: {resp.status} != {want}")
            for path in ("/", "/static/style.css", "/login/slack", "/auth/slack/callback",
                         "/logout", "/lang"):  # fmt: skip
                for method in METHODS:
                    async with client.request(method, path, allow_redirects=False) as resp:
                        want = expected_site(who, path, method)
                        checked += 1
                        if resp.status != want:
                            wrong.append(f"{who} {method} {path}: {resp.status} != {want}")
        assert wrong == []
        assert checked == len(WHO) * len(METHODS) * (len(site.quiz.registry.pages) + 6)
    finally:
        for client in clients.values():
            await client.close()


@pytest.mark.parametrize("path", ["", "leaderboard", "me", "review", "schedules"])
async def test_a_member_of_a_gets_404_for_every_page_of_b_and_of_an_unknown_workspace(
    site: Site, path: str
) -> None:
    async with site.client() as client:
        await site.sign_in(client, member(A, "ann"), admin=True)
        for url in (f"/w/slack/TB/{path}", f"/w/slack/TZ/{path}", f"/w/discord/TA/{path}"):
            async with client.get(url, allow_redirects=False) as resp:
                assert resp.status == 404, url
                assert "TB" not in await resp.text() or "TB" in url
        async with client.get(f"/w/slack/TA/{path}", allow_redirects=False) as resp:
            assert resp.status == 200


async def test_a_session_naming_a_workspace_the_quiz_does_not_know_gets_404(site: Site) -> None:
    from bot.domain import ChannelRef, Platform

    ghost = member(ChannelRef(Platform.SLACK, "TGHOST", "C"), "gus")
    async with site.client() as client:
        await site.sign_in(client, ghost, admin=True)
        async with client.get("/w/slack/TGHOST/", allow_redirects=False) as resp:
            assert resp.status == 404
