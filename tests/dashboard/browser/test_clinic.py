"""The memory clinic in chromium, in English and in Greek: a member uploads the sample
snapshot (`quizbot sim sample-snapshot`'s), sees its progress, then reads the result —
the table, the line to copy, the plot — replayed by the local runner's fork-server
child; another member of the workspace gets 404 for it; the uploaded file is gone."""

from __future__ import annotations

import re
import secrets
import tempfile
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from gpu_runner.sim.sample import write_sample
from tests.dashboard.browser.conftest import SLACK_WS, Served
from tests.polling import eventually_sync

LINE = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
WORDS = {
    "en": {"send": "Analyse", "title": "expandable removes the OOM",
           "copy": "The line to copy", "table": "setting"},
    "el": {"send": "Ανάλυση", "title": "Το expandable εξαλείφει",
           "copy": "Η γραμμή για αντιγραφή", "table": "ρύθμιση"},
}  # fmt: skip


def uploads_of(name: str) -> list[Path]:
    """The dashboard's private temporary files for a snapshot named `name`."""
    return sorted(Path(tempfile.gettempdir()).glob(f"quizbot-*-{name}"))


def signed_in(
    browser: Browser, served: Served, user: str, lang: str
) -> tuple[BrowserContext, Page]:
    """A browser signed in through the fake Slack's OpenID endpoints as `user`, a
    member (not an admin) of the workspace."""
    assert served.site is not None and served.slack is not None
    served.slack.add_user(user)
    served.slack.oidc.member = (user, SLACK_WS.workspace, user.title())
    context = browser.new_context(locale="el-GR" if lang == "el" else "en-US")
    page = context.new_page()
    page.goto(served.site.url + "/login/slack")
    expect(page.get_by_role("navigation")).to_be_visible()
    return context, page


@pytest.mark.parametrize("lang", ["en", "el"])
def test_a_member_sends_a_snapshot_sees_progress_and_reads_the_result_only_they_can_open(
    browser: Browser, served: Served, tmp_path: Path, lang: str
) -> None:
    assert served.site is not None
    words = WORDS[lang]
    snapshot = tmp_path / f"sample-{lang}-{secrets.token_hex(4)}.pickle"
    write_sample(snapshot)
    base = f"{served.site.url}/w/slack/{SLACK_WS.workspace}/"
    context, page = signed_in(browser, served, f"UCLINIC{lang.upper()}", lang)
    served.hold_clinic(True)
    try:
        page.goto(base + "clinic")
        page.locator("#file").set_input_files(str(snapshot))
        page.get_by_role("button", name=words["send"]).click()
        expect(page).to_have_url(re.compile(r"/clinic/\d+$"))
        result_url = page.url
        # In progress: the status line names the file; the page refreshes by itself.
        expect(page.get_by_role("status")).to_contain_text(snapshot.name)
        expect(page.locator('meta[http-equiv="refresh"]')).to_have_count(1)
        assert len(uploads_of(snapshot.name)) == 1  # streamed to a private file, kept for now
        served.hold_clinic(False)

        # The result: the line to copy, the table, the plot (the page reloaded itself).
        expect(page.get_by_label(words["copy"])).to_have_value(LINE, timeout=60_000)
        expect(page.get_by_role("heading", level=1)).to_contain_text(words["title"])
        expect(page.locator('meta[http-equiv="refresh"]')).to_have_count(0)
        table = page.locator(".result pre").first
        expect(table).to_contain_text(words["table"])
        expect(table).to_contain_text("expandable")
        expect(table).to_contain_text("recorded")
        plot = page.locator("img.plot")
        expect(plot).to_be_visible()
        width: Any = plot.evaluate("img => img.complete ? img.naturalWidth : 0")
        assert width > 100
        eventually_sync(lambda: not uploads_of(snapshot.name), timeout=30)  # deleted after

        page.goto(base + "clinic")  # the member's own list names it
        expect(page.get_by_role("link", name=snapshot.name)).to_be_visible()
    finally:
        served.hold_clinic(False)
        context.close()

    # Private to the uploader: another member of the workspace gets 404 for it.
    other, page = signed_in(browser, served, f"UOTHER{lang.upper()}", lang)
    try:
        for url in (result_url, result_url + "/plot"):
            response = page.goto(url)
            assert response is not None and response.status == 404, url
        page.goto(base + "clinic")
        expect(page.get_by_role("link", name=snapshot.name)).to_have_count(0)
    finally:
        other.close()
