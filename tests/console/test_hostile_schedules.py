"""`quizbot play` answers absurd schedule and clock values in one line and keeps going."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.console.test_play import NO_DEMOS, run_play

LONG_CRON = "0," * 70 + "0 9 * * *"  # 149 characters: over the stored column's 128

ATTACKS = [
    (
        "/schedule set 09:30 UTC window 99999999999999999999d",
        "an answer window of 99999999999999999999d is out of range: use 1m to 7d",
    ),
    ("/schedule off 100000000000000000000000", "is not a schedule number"),
    (  # the console's markdown shows `*` as emphasis, so the echo reads '/1000...'
        '/schedule set cron "*/100000000000000000000 * * * *" UTC',
        "100000000000000000000' of the cron expression is not valid",
    ),
    (f'/schedule set cron "{LONG_CRON}" UTC', "the cron expression is 149 characters long"),
    ("/clock +99999999999999999999d", "! usage: /clock"),
]


@pytest.mark.slow
def test_absurd_schedule_values_are_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    script = "".join(f"{line}\n" for line, _ in ATTACKS) + "/schedule list\n/ask\n"
    done = run_play(tmp_path, script, "--seed", "1", env=NO_DEMOS)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    for line, expected in ATTACKS:
        reply = done.stdout.split(f"you> {line}", 1)[1].split("you> ", 1)[0]
        assert expected in reply, (line, reply)
        assert len(reply) < 600, (line, reply)
    assert "This channel has no schedules" in done.stdout  # nothing was stored
    assert "== Question ·" in done.stdout  # and the session still plays
