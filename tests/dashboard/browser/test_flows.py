"""A member's and an admin's flows in chromium, in English and in Greek: sign in through
the fake Slack and Discord OAuth endpoints (and the console's one-time link), read the
overview, approve a submission, add a schedule, forget-me. With QUIZBOT_SCREENSHOTS=1 the
main pages are saved as docs/dashboard/*.png (the documentation's pictures)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from bot.domain import PostKind
from bot.team import Origin, Workspace, team_question
from tests.dashboard.browser.conftest import CONSOLE_WS, GUILD, SHOOT, SHOTS, SLACK_WS, Served
from tests.dashboard.harness import member
from tests.quiz import asked

WORDS = {
    "en": {"overview": "Team overview", "approve": "Approve #{n}",
           "approved": "joins the team pack", "add": "Add the schedule",
           "added": "Scheduled questions for this channel",
           "erase": "Erase my data", "confirm": "Yes, erase my data and sign me out",
           "done": "Done:", "signin": "Sign in with Slack", "review": "Review",
           "mine": "My results", "skip": "Skip to the content"},
    "el": {"overview": "Επισκόπηση ομάδας", "approve": "Έγκριση #{n}",
           "approved": "μπαίνει στις ερωτήσεις της ομάδας", "add": "Προσθήκη προγράμματος",
           "added": "Προγραμματισμένες ερωτήσεις",
           "erase": "Διαγραφή των δεδομένων μου", "confirm": "Ναι, διαγράψτε τα δεδομένα μου",
           "done": "Έγινε", "signin": "Σύνδεση με Slack", "review": "Έλεγχος",
           "mine": "Τα αποτελέσματά μου", "skip": "Μετάβαση στο περιεχόμενο"},
}  # fmt: skip


def shot(page: Page, name: str) -> None:
    if SHOOT:
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def seed(served: Served, lang: str) -> int:
    """Answers to show and a submission to approve; the submission's number."""
    site = served.site
    assert site is not None

    async def go() -> int:
        service = site.quiz.service
        people = [member(SLACK_WS, f"{lang}{i}") for i in range(6)]
        for round_ in range(3):
            post = await asked(service, SLACK_WS, kind=PostKind.SCHEDULED)
            q = service.bank.get(post.question_id)
            assert q is not None
            for i, who in enumerate(people):
                right = (i + round_) % 3 != 0
                await service.record_answer(
                    post.id, who, q.answer if right else (q.answer + 1) % q.choice_count
                )
            await service.close(post.id)
        text = {
            "prompt": f"Which memory is pinned? ({lang})",
            "choices": ["host", "device"],
            "explanation": "Host memory.",
        }
        q = team_question(
            {"id": "x", "topic": "gpu-memory", "difficulty": 1, "answer": 0, "en": text}
        )
        added = await site.store.team.add(
            Workspace.of(SLACK_WS), [q], origin=Origin.CHAT, approved=False,
            now=service.clock.now(), author=people[1], channel=SLACK_WS,
        )  # fmt: skip
        return added[0].id

    return served.call(go())


@pytest.mark.parametrize("lang", ["en", "el"])
def test_an_admin_signs_in_with_slack_reads_approves_schedules_and_forgets_in_a_browser(
    browser: Browser, served: Served, lang: str
) -> None:
    assert served.site is not None and served.slack is not None
    number = seed(served, lang)
    served.slack.oidc.member = (f"UADMIN{lang.upper()}", "T0FAKE", "Alice")
    served.slack.add_user(f"UADMIN{lang.upper()}", admin=True)
    words = WORDS[lang]
    context = browser.new_context(
        locale="el-GR" if lang == "el" else "en-US", viewport={"width": 1100, "height": 900}
    )
    page = context.new_page()
    try:
        page.goto(served.site.url + "/")
        expect(page.get_by_role("link", name=words["signin"])).to_be_visible()
        shot(page, f"signin-{lang}")
        page.get_by_role("link", name=words["signin"]).click()
        expect(page.get_by_role("heading", level=1)).to_contain_text(words["overview"])
        expect(page.locator("svg.chart").first).to_be_visible()
        shot(page, f"overview-{lang}")
        page.get_by_role("navigation").get_by_role("link", name=words["review"]).click()
        page.get_by_role("button", name=words["approve"].format(n=number)).click()
        expect(page.locator(".notice")).to_contain_text(words["approved"])
        shot(page, f"review-{lang}")
        page.goto(served.site.url + "/w/slack/T0FAKE/schedules")
        page.locator("#time").fill("09:30")
        page.locator("#zone").fill("Europe/Athens")
        page.locator("#days").fill("mon-fri")
        page.get_by_role("button", name=words["add"]).click()
        expect(page.locator(".notice")).to_contain_text(words["added"])
        shot(page, f"schedules-{lang}")
        page.goto(served.site.url + "/w/slack/T0FAKE/me")
        shot(page, f"member-{lang}")
        page.goto(served.site.url + "/w/slack/T0FAKE/me/forget")
        page.get_by_label(words["confirm"]).check()
        page.get_by_role("button", name=words["erase"]).click()
        expect(page.locator(".notice")).to_contain_text(words["done"])
        expect(page.get_by_role("link", name=words["signin"])).to_be_visible()  # signed out
    finally:
        context.close()


def context_in(browser: Browser, lang: str, **kw: Any) -> BrowserContext:
    return browser.new_context(locale="el-GR" if lang == "el" else "en-US", **kw)


@pytest.mark.parametrize("lang", ["en", "el"])
def test_a_member_signs_in_with_discord_and_sees_no_admin_page(
    browser: Browser, served: Served, lang: str
) -> None:
    assert served.site is not None and served.discord is not None
    served.discord.oauth.member.guilds = {GUILD: ("Fake Guild", 0, [])}
    words = WORDS[lang]
    context = context_in(browser, lang)
    page = context.new_page()
    try:
        page.goto(served.site.url + "/login/discord")
        expect(page.get_by_role("heading", level=1)).to_contain_text(words["overview"])
        nav = page.get_by_role("navigation")
        expect(nav.get_by_role("link", name=words["mine"])).to_be_visible()
        expect(nav.get_by_role("link", name=words["review"])).to_have_count(0)
        response = page.goto(served.site.url + f"/w/discord/{GUILD}/review")
        assert response is not None and response.status == 403
    finally:
        context.close()


@pytest.mark.parametrize("lang", ["en", "el"])
def test_the_console_link_signs_in_once_and_the_pages_work_by_keyboard(
    browser: Browser, served: Served, lang: str
) -> None:
    site = served.site
    assert site is not None
    link = served.call(site.dashboard.console_link())
    words = WORDS[lang]
    context = context_in(browser, lang)
    page = context.new_page()
    try:
        page.goto(link)
        expect(page.get_by_role("heading", level=1)).to_contain_text(words["overview"])
        page.keyboard.press("Tab")
        expect(page.get_by_role("link", name=words["skip"])).to_be_focused()
        again = context.new_page()
        again.context.clear_cookies()
        response = again.goto(link)
        assert response is not None and response.status == 400  # used already
        assert CONSOLE_WS.workspace == "console"
    finally:
        context.close()


def test_a_phone_sized_page_has_no_sideways_scroll(browser: Browser, served: Served) -> None:
    site = served.site
    assert site is not None
    link = served.call(site.dashboard.console_link())
    context = browser.new_context(viewport={"width": 375, "height": 740})
    page = context.new_page()
    try:
        page.goto(link)
        width: Any = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375
        shot(page, "overview-phone")
    finally:
        context.close()
