"""A live round across two real processes on PostgreSQL: `quizbot serve` A runs the lobby
and question 1 and is killed (SIGKILL) mid-question; `quizbot serve` B, started after,
continues from the current step with its own timer: question 1 closes with the answers A
recorded, then question 2, the podium. Every question is posted once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.fake_slack import FakeSlack
from tests.faults.harness import BotProcess, click, stored_answers, unlimited_client

pytestmark = pytest.mark.slow

_POST = re.compile(r"quiz:answer:(\d+):")
ENV = {"QUIZBOT_LIVE_LOBBY": "1", "QUIZBOT_ADMINS": "U0ROOT"}


@pytest.mark.postgres
async def test_a_live_round_outlives_its_process(db_url: str, tmp_path: Path) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("two processes share a PostgreSQL database")
    async with FakeSlack(team=rq.TEAM) as fake, unlimited_client() as http:

        def posted(words: str) -> list[str]:
            return [c.text for c in fake.calls_to("chat.postMessage") if words in c.text]

        a = BotProcess(db_url, fake.api_url, tmp_path / "a.log", **ENV)
        await a.start()
        body = rq.form_body(
            rq.slash_command("live 2 5", user="U0ROOT", response_url=fake.response_url("live"))
        )
        async with http.post(a.url, data=body, headers=rq.signed_headers(body)) as resp:
            assert resp.status == 200
        await fake.wait_until(lambda: bool(posted("question 1 of 2")), timeout=30)
        (q1,) = [c for c in fake.calls_to("chat.postMessage") if "question 1 of 2" in c.text]
        m = _POST.search(" ".join(q1.action_ids))
        assert m is not None
        post_id = int(m[1])
        for i, user in enumerate(("U0ANN", "U0BOB")):
            assert await click(http, a.url, fake, post_id, user, i) == 200
        await a.kill()  # mid-question: nothing of A's shutdown runs
        b = BotProcess(db_url, fake.api_url, tmp_path / "b.log", **ENV)
        await b.start()
        await fake.wait_until(lambda: bool(posted("the podium")), timeout=60)
        await fake.wait_until(lambda: bool(posted("Standings")), timeout=30)
        assert await b.terminate() == 0
    assert len(posted("question 1 of 2")) == 1 and len(posted("question 2 of 2")) == 1
    assert len(posted("Results · question 1")) == 1 and len(posted("Results · question 2")) == 1
    assert len(posted("the podium")) == 1
    assert sum((await stored_answers(db_url, post_id)).values()) == 2
    (results,) = posted("Results · question 1")
    assert "of 2 right" in results
