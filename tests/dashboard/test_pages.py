"""The pages over real data: the overview's charts and calibration from the aggregates,
the member's own page and data, forget-me, and the admin pages going through the chat's
own use cases (decided once, validated the same)."""

from __future__ import annotations

import json
import re

import pytest

from bot.domain import PostKind, UserRef
from bot.team import Origin, SubmissionState, Workspace
from tests.dashboard.harness import A2, A, Site, member
from tests.quiz import asked

ANN, BOB = member(A, "ann"), member(A, "bob")


async def play(
    site: Site, results: dict[UserRef, bool], kind: PostKind = PostKind.SCHEDULED
) -> str:
    service = site.quiz.service
    post = await asked(service, A, kind=kind)
    q = service.bank.get(post.question_id)
    assert q is not None
    for who, right in results.items():
        await service.record_answer(
            post.id, who, q.answer if right else (q.answer + 1) % q.choice_count
        )
    assert await service.close(post.id) is not None
    return post.question_id


async def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None
    return found.group(1)


async def test_the_overview_states_its_findings_from_the_aggregates(site: Site) -> None:
    for _ in range(6):
        await play(site, {ANN: True, BOB: False})
    async with site.client() as client:
        await site.sign_in(client, ANN, admin=False)
        async with client.get("/w/slack/TA/") as resp:
            assert resp.status == 200
            html = await resp.text()
    assert "12 answers in 28 days" in html
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart"' in html
    assert '<title id="chart-activity-t">' in html and "<desc" in html
    assert "2 players this week" in html
    # two answers a question: too few to judge any
    assert "No question has 5 answers yet" in html
    assert resp.headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert resp.headers["Cache-Control"] == "no-store"
    assert "<script" not in html


async def test_calibration_flags_too_easy_and_too_hard_questions(site: Site) -> None:
    players = [member(A, f"p{i}") for i in range(6)]
    easy = await play(site, {p: True for p in players})
    hard = await play(site, {p: False for p in players})
    async with site.client() as client:
        await site.sign_in(client, ANN, admin=False)
        async with client.get("/w/slack/TA/?channel=CA1") as resp:
            html = await resp.text()
    assert "2 of 2 questions miss 20–90 %: 1 too easy, 1 too hard" in html
    easy_part, hard_part = html.split("Too hard (under 20 %)")
    assert (
        easy in easy_part.split("Too easy (over 90 %)")[1] and hard in hard_part.split("</div>")[0]
    )


async def test_the_member_page_shows_only_their_own_results_and_history(site: Site) -> None:
    qid = await play(site, {ANN: True, BOB: False})
    async with site.client() as client:
        await site.sign_in(client, BOB, admin=False)
        async with client.get("/w/slack/TA/me") as resp:
            html = await resp.text()
        async with client.get("/w/slack/TA/me/data") as resp:
            data = json.loads(await resp.read())
            assert "attachment" in resp.headers["Content-Disposition"]
    question = site.quiz.service.bank.get(qid)
    assert question is not None
    assert question.text(question.locales[0]).prompt[:30] in html.replace("&#39;", "'").replace(
        "&quot;", '"'
    )
    assert "wrong" in html and "(your answer)" in html
    assert data["member"]["user"] == BOB.user
    assert all(a["correct"] is False for a in data["answers"])


async def test_forget_me_asks_to_confirm_then_erases_and_signs_out(site: Site) -> None:
    await play(site, {ANN: True, BOB: True})
    async with site.client() as client:
        csrf = await site.sign_in(client, BOB, admin=False)
        async with client.post("/w/slack/TA/me/forget", data={"csrf": csrf}) as resp:
            assert "Tick the box" in await resp.text()  # not confirmed: nothing erased
        assert (await site.store.scores.player_stats(A, BOB)) is not None
        async with client.post(
            "/w/slack/TA/me/forget", data={"csrf": csrf, "confirm": "yes"}, allow_redirects=False
        ) as resp:
            assert resp.status == 303 and resp.headers["Location"] == "/"
        async with client.get("/") as resp:
            assert "Done: 1 answer" in await resp.text()
        async with client.get("/w/slack/TA/me", allow_redirects=False) as resp:
            assert resp.status == 303  # signed out everywhere
    assert (await site.store.scores.player_stats(A, BOB)) is None
    assert (await site.store.scores.player_stats(A, ANN)) is not None


async def submit(site: Site) -> int:
    from bot.team import team_question

    q = team_question(
        {
            "id": "x",
            "topic": "gpu-memory",
            "difficulty": 1,
            "answer": 0,
            "en": {
                "prompt": "Which is pinned?",
                "choices": ["host", "device"],
                "explanation": "Host.",
            },
        }
    )
    added = await site.store.team.add(
        Workspace.of(A),
        [q],
        origin=Origin.CHAT,
        approved=False,
        now=site.quiz.service.clock.now(),
        author=BOB,
        channel=A,
    )
    return added[0].id


async def test_an_admin_approves_a_submission_once(site: Site) -> None:
    number = await submit(site)
    async with site.client() as alice, site.client() as carol:
        csrf_a = await site.sign_in(alice, member(A, "alice"), admin=True)
        csrf_c = await site.sign_in(carol, member(A, "carol"), admin=True)
        async with alice.get("/w/slack/TA/review") as resp:
            assert "Which is pinned?" in await resp.text()
        form = {"action": "approve", "id": str(number)}
        async with alice.post("/w/slack/TA/review", data={**form, "csrf": csrf_a}) as resp:
            assert "joins the team pack" in await resp.text()
        async with carol.post("/w/slack/TA/review", data={**form, "csrf": csrf_c}) as resp:
            assert "alice" in await resp.text()  # the chat's "already approved by alice"
    sub = await site.store.team.get(number)
    assert sub is not None and sub.state is SubmissionState.APPROVED
    assert sub.decided_by is not None and sub.decided_by.user == "UALICE"


@pytest.mark.parametrize(
    ("who", "admin", "tokens"),
    [
        pytest.param(ANN, False, (None,), id="a-member-with-a-valid-form"),
        pytest.param(member(A, "alice"), True, ("", "x" * 43), id="an-admin-without-the-csrf"),
    ],
)
async def test_an_approval_refused_changes_nothing(
    site: Site, who: UserRef, admin: bool, tokens: tuple[str | None, ...]
) -> None:
    """A member cannot approve, even with a valid form; an admin's post without the
    session's CSRF token (none, or a wrong one) changes nothing either."""
    number = await submit(site)
    async with site.client() as client:
        csrf = await site.sign_in(client, who, admin=admin)
        for token in tokens:
            form = {"csrf": csrf if token is None else token, "action": "approve"}
            async with client.post("/w/slack/TA/review", data={**form, "id": str(number)}) as resp:
                assert resp.status == 403
    sub = await site.store.team.get(number)
    assert sub is not None and sub.state is SubmissionState.PENDING


async def test_schedules_are_added_and_removed_with_the_commands_validation(site: Site) -> None:
    async with site.client() as client:
        csrf = await site.sign_in(client, member(A, "alice"), admin=True)
        bad = {
            "csrf": csrf,
            "channel": "CA1",
            "action": "add",
            "time": "25:00",
            "zone": "Europe/Athens",
        }
        async with client.post("/w/slack/TA/schedules", data=bad) as resp:
            html = await resp.text()
            assert "25:00" in html
        assert await site.store.schedules.in_channel(A) == []
        good = {**bad, "time": "09:30", "days": "mon-fri"}
        async with client.post("/w/slack/TA/schedules", data=good) as resp:
            html = await resp.text()
            assert "Scheduled questions for this channel" in html
        (schedule,) = await site.store.schedules.in_channel(A)
        assert schedule.local_time == "09:30" and schedule.timezone == "Europe/Athens"
        off = {"csrf": csrf, "channel": "CA1", "action": "remove", "id": str(schedule.id)}
        async with client.post("/w/slack/TA/schedules", data=off) as resp:
            assert f"#{schedule.id}" in await resp.text()
        assert await site.store.schedules.in_channel(A) == []


async def test_channel_settings_go_through_the_chat_commands(site: Site) -> None:
    async with site.client() as client:
        csrf = await site.sign_in(client, member(A, "alice"), admin=True)
        form = {"csrf": csrf, "channel": "CA2", "setting": "demos", "value": "button"}
        async with client.post("/w/slack/TA/channel", data=form) as resp:
            assert resp.status == 200
        form = {"csrf": csrf, "channel": "CA2", "setting": "generated", "value": "250"}
        async with client.post("/w/slack/TA/channel", data=form) as resp:
            assert "250" in await resp.text()  # refused by /quiz generated's own check
    settings = await site.store.settings.get(A2)
    assert settings.demo_policy.value == "button" and settings.generated_share == 25


CSV = (
    "prompt,a,b,c,d,e,answer,explanation,topic,difficulty,locale,references\n"
    "What is 2+2?,3,4,,,,B,Arithmetic.,math,1,en,\n"
    "Broken,only,,,,,Z,x,math,1,fr,\n"
)


async def test_an_import_reports_errors_by_row_and_export_reads_back(site: Site) -> None:
    async with site.client() as client:
        csrf = await site.sign_in(client, member(A, "alice"), admin=True)
        import aiohttp

        form = aiohttp.FormData()
        form.add_field("csrf", csrf)
        form.add_field("file", CSV.encode(), filename="ours.csv", content_type="text/csv")
        async with client.post("/w/slack/TA/questions/import", data=form) as resp:
            html = await resp.text()
        assert "1 new question from 2 entries" in html
        assert "line 3" in html
        async with client.get("/w/slack/TA/questions/export") as resp:
            text = await resp.text()
        assert "What is 2+2?" in text and "Broken" not in text


async def test_an_upload_too_large_is_refused_before_its_body_is_read(site: Site) -> None:
    import asyncio

    async with site.client() as client:
        csrf = await site.sign_in(client, member(A, "alice"), admin=True)
        reader, writer = await asyncio.open_connection("127.0.0.1", site.server.port)
        cookie = "; ".join(f"{c.key}={c.value}" for c in client.cookie_jar)
        writer.write(
            (
                "POST /w/slack/TA/questions/import HTTP/1.1\r\nHost: x\r\n"
                f"Cookie: {cookie}\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                f"Content-Length: {50 * 1024 * 1024}\r\n\r\n--b\r\n"
            ).encode()
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readline(), 5)  # answered with 49 MB unsent
        writer.close()
        assert head.startswith(b"HTTP/1.1 413")
        assert csrf


async def test_no_page_reads_the_answers_but_the_members_own_history(site: Site) -> None:
    """Every figure comes from the aggregates the close keeps: the SQL of every reading
    and admin page names no `answers` table, except the member page's history, an index
    range on the member's own answers."""
    from sqlalchemy import event

    for _ in range(3):
        await play(site, {ANN: True, BOB: False})
    seen: list[tuple[str, str]] = []
    page = [""]

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append((page[0], " ".join(statement.split())))

    engine = site.store.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        async with site.client() as client:
            await site.sign_in(client, ANN, admin=True)
            for path in (
                "", "?channel=CA1", "leaderboard", "leaderboard?window=week&scope=workspace",
                "leaderboard?window=day", "me", "demos", "clinic", "review", "channel",
                "questions", "schedules",
            ):  # fmt: skip
                page[0] = path
                async with client.get(f"/w/slack/TA/{path}") as resp:
                    assert resp.status == 200, path
    finally:
        event.remove(engine, "before_cursor_execute", record)
    reading = [(p, s) for p, s in seen if re.search(r"\b(FROM|JOIN) answers\b", s)]
    assert reading and {p for p, _ in reading} == {"me"}, reading
    for _, statement in reading:
        assert re.search(r"WHERE answers\.member_id = ", statement), statement


async def test_the_league_page_shows_the_season_boards_and_the_teams_fair_scores(
    site: Site,
) -> None:
    from datetime import timedelta

    from bot.seasons import SeasonScope

    clock = site.quiz.service.clock
    now = clock.now()
    ws = Workspace.of(A)
    cat = member(A, "cat")
    async with site.client() as client:
        await site.sign_in(client, ANN, admin=False)
        async with client.get("/w/slack/TA/league") as resp:
            assert resp.status == 200
            empty = await resp.text()
        await site.store.seasons.start(
            A, SeasonScope.CHANNEL, "Spring", now, now + timedelta(weeks=2), "UANN", now
        )
        for name, who in (("Owls", (ANN, BOB)), ("Larks", (cat,))):
            await site.store.leagues.create(ws, name, now)
            for m in who:
                await site.store.leagues.join(m, name, now)
        await play(site, {ANN: True, BOB: True, cat: True})
        await play(site, {ANN: True, BOB: False, cat: True})
        async with client.get("/w/slack/TA/league") as resp:
            html = await resp.text()
        csrf = await csrf_of(html)
        async with client.post(
            "/lang", data={"csrf": csrf, "lang": "el", "back": "/w/slack/TA/league"}
        ) as resp:
            greek = await resp.text()
    assert "No season is running in this channel" in empty and "No teams yet" in empty
    assert "<strong>Spring</strong>" in html
    season = html.split('id="season-h"')[1].split('id="teams-h"')[0]
    rows = re.findall(r'<th scope="row">(\w+)</th><td>(\d+)</td>', season)
    points = {name: int(p) for name, p in rows[:3]}
    assert set(points) == {"ann", "bob", "cat"} and rows[2][0] == "bob"
    assert points["ann"] == points["cat"] > points["bob"] > 0
    teams = html.split('id="teams-h"')[1]
    # Every point was scored in the season: the all-time team board adds the same points.
    owls = points["ann"] + points["bob"]
    per = f"{owls / 2:.1f}"
    owls_row = rf"Owls</th><td>{owls}</td><td>{re.escape(per)}</td><td>2</td><td>2</td>"
    assert re.search(owls_row, teams), teams
    larks = points["cat"]
    assert re.search(rf"Larks</th><td>{larks}</td><td>{larks}\.0</td><td>1</td><td>1</td>", teams)
    assert "Πρωτάθλημα" in greek and "Πόντοι ανά ενεργό μέλος" in greek
    assert re.search(rf"Owls</th><td>{owls}</td><td>{per.replace('.', ',')}</td>", greek)
