"""A live round at scale: 10 questions, 500 players clicking in the last 5 s of each
question, on SQLite (file, WAL) and PostgreSQL; then the crash case on two replicas.

    .venv/bin/python bench/live_round.py [--questions 10] [--seconds 20] [--players 500]
                                         [--window 5] [--late 50] [--latency 0.03] [--pg URL]

Time is the bot's fake clock, so every click's moment is exact: each question, the
players' clicks fall uniformly in the last `--window` seconds before its deadline (sent
in 100 ms slices, each slice's clicks at once, through the core's click use case), and
`--late` more players click in the 0.5 s after it, racing the step that closes it. A
recording fake platform takes `--latency` seconds per call and counts, per channel, every
post and edit with the fake time it was made.

- counted: every click before the deadline recorded, every one after refused;
- close -> results -> next question: the wall time from the pass at the deadline (what the
  production timer wakes for) to the next question's post stored, per question;
- edits per channel against the platforms' documented limits (/work/shared/docs/
  platforms.md: Slack `chat.update` Tier 3, ~50 a minute, and about one message a second
  per channel; Discord about 5 edits per 5 s per channel);
- the crash: two replicas on one database; replica A runs the round and dies holding the
  step of question `questions // 2` half done (its results post fails, then it stops);
  replica B, ticking all along, continues after the step's lease: every question is
  posted once, the round ends with one podium.

Targets: every click before the deadline counted, 0 after; close -> next posted p99 <= 1 s;
edits within the limits; crash: each question posted once, one podium.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import PG_DEFAULT, drop_pg, median, percentile, pg_database, target
from bot import basics, live
from bot.admin import NOBODY
from bot.app import assemble
from bot.clock import FakeClock
from bot.config import Settings
from bot.domain import AnswerStatus, ChannelRef, MessageRef, Platform, UserRef
from bot.features import Feature, Parts, Quiz
from bot.interactions import Click
from bot.live import LiveRounds, live_feature
from bot.live.rounds import COUNT_EVERY, STEP_LEASE
from bot.messages import ANSWER, Image, Message
from questions.loader import load_bank
from storage.engine import create_engine, upgrade
from storage.store import SqlStore

CHANNEL = ChannelRef(Platform.SLACK, "T1", "CLIVE")
START = datetime(2027, 6, 1, 9, 0, tzinfo=UTC)
SLICE = timedelta(milliseconds=100)


class RecordingPlatform:
    """A platform that takes `latency` per call and records each call's fake time."""

    def __init__(self, clock: FakeClock, latency: float, name: str = "p") -> None:
        self.clock = clock
        self.latency = latency
        self.name = name
        self.calls: list[tuple[str, str, datetime, Message]] = []  # kind, channel, at, message
        self.posted_wall: dict[str, float] = {}  # message title -> wall time stored
        self.fail_threads = 0
        self._n = 0

    async def _call(self, kind: str, channel: ChannelRef, message: Message) -> MessageRef:
        if self.latency:
            await asyncio.sleep(self.latency)
        self._n += 1
        self.calls.append((kind, channel.key, self.clock.now(), message))
        if kind == "post":
            self.posted_wall[message.title] = time.perf_counter()
        return MessageRef(channel, f"{self.name}-{self._n}")

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        return await self._call("post", channel, message)

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        if self.fail_threads:
            self.fail_threads -= 1
            raise ConnectionError("the process died here")
        return await self._call("thread", parent.channel, message)

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        return None

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        await self._call("update", ref.channel, message)

    async def upload_image(self, parent: MessageRef, image: Image, comment: str = "") -> None:
        return None

    def questions(self) -> list[str]:
        return [m.title for kind, _, _, m in self.calls if kind == "post" and "question" in m.title]


def window_max(times: list[datetime], span: timedelta) -> int:
    """The most events in any window of `span`."""
    ordered = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(ordered):
        while ordered[j] <= t - span:
            j += 1
        best = max(best, i - j + 1)
    return best


def rounds_of(quiz: Quiz) -> LiveRounds:
    found = quiz.registry.service(LiveRounds)
    assert found is not None
    return found


async def start_round(quiz: Quiz, clock: FakeClock, questions: int, seconds: int) -> int:
    rounds = rounds_of(quiz)
    admin = UserRef(Platform.SLACK, "T1", "UADMIN", "admin")
    r = await rounds.start(
        CHANNEL,
        admin,
        questions=questions,
        seconds=seconds,
        topic=None,
        counted=False,
        locale=quiz.service.default_locale,
    )
    clock.set(r.next_at)
    return r.id


async def click(quiz: Quiz, post_id: int, user: UserRef, choice: int) -> AnswerStatus | None:
    c = Click(ANSWER, post_id, str(choice), user, CHANNEL, admin=NOBODY)
    message = await quiz.interactions.click(c)
    if "Locked in" in message.body:
        return AnswerStatus.RECORDED
    if "late" in message.body:
        return AnswerStatus.CLOSED
    return None


def counting(parts: Parts) -> Feature:
    """The live feature as `serve` runs it, the "N answered" edits included (its timer
    aside: the benchmark ticks on its fake clock)."""
    rounds = LiveRounds(parts.service, parts.store.live, parts.clock, count_every=COUNT_EVERY)
    return live_feature(rounds)


async def play(url: str, args: argparse.Namespace) -> dict[str, float]:
    bank = load_bank()
    clock = FakeClock(START)
    platform = RecordingPlatform(clock, args.latency)
    rng = random.Random(26)
    players = [UserRef(Platform.SLACK, "T1", f"U{i:04d}", f"p{i}") for i in range(args.players)]
    late_players = [UserRef(Platform.SLACK, "T1", f"L{i:04d}", f"l{i}") for i in range(args.late)]
    before_sent = before_counted = after_sent = after_counted = 0
    latencies: list[float] = []
    settings = Settings(ask_cooldown=0)
    async with (
        SqlStore(url, clock=clock) as store,
        assemble(
            store,
            {Platform.SLACK: platform},
            bank,
            clock,
            settings,
            features=[basics.feature, counting],
            generated=False,
            wakeups=False,
            count_update_interval=0.0,
        ) as quiz,
    ):
        rounds = rounds_of(quiz)
        round_id = await start_round(quiz, clock, args.questions, args.seconds)
        await rounds.tick()  # the lobby's time: question 1
        for k in range(args.questions):
            q = await store.live.question(round_id, k)
            assert q is not None and q.post.closes_at is not None
            deadline = q.post.closes_at
            opens = deadline - timedelta(seconds=args.window)
            slices: dict[int, list[UserRef]] = defaultdict(list)
            n_slices = int(args.window / SLICE.total_seconds())
            for user in players:
                slices[rng.randrange(n_slices)].append(user)
            for s in range(n_slices):
                clock.set(opens + s * SLICE + timedelta(milliseconds=rng.randrange(100)))
                got = await asyncio.gather(
                    *(click(quiz, q.post.id, u, rng.randrange(4)) for u in slices[s])
                )
                before_sent += len(got)
                before_counted += sum(g is AnswerStatus.RECORDED for g in got)
            # The deadline: the pass that closes it, and the late clicks racing it.
            clock.set(deadline)
            title = f"question {k + 2} of"
            started = time.perf_counter()

            async def late(
                post_id: int = q.post.id, at: datetime = deadline
            ) -> list[AnswerStatus | None]:
                clock.set(at + timedelta(milliseconds=250))
                return await asyncio.gather(*(click(quiz, post_id, u, 0) for u in late_players))

            _, got_late = await asyncio.gather(rounds.tick(), late())
            after_sent += len(got_late)
            after_counted += sum(g is AnswerStatus.RECORDED for g in got_late)
            if k + 1 < args.questions:
                posted = next((w for t, w in platform.posted_wall.items() if title in t), None)
                assert posted is not None, f"question {k + 2} was not posted"
                latencies.append(posted - started)
            clock.set(deadline + timedelta(seconds=1))
            await rounds.tick()
        await rounds.tasks.drain()
        stored = await store.live.answers(round_id)
    edits = [at for kind, _, at, _ in platform.calls if kind == "update"]
    messages = [at for kind, _, at, _ in platform.calls]
    return {
        "before_sent": before_sent,
        "before_counted": before_counted,
        "before_stored": len(stored),
        "after_sent": after_sent,
        "after_counted": after_counted,
        "lat_p50": median(latencies),
        "lat_p99": percentile(latencies, 99),
        "lat_max": max(latencies, default=float("nan")),
        "edits": len(edits),
        "edits_per_min": window_max(edits, timedelta(minutes=1)),
        "edits_per_5s": window_max(edits, timedelta(seconds=5)),
        "calls_per_min": window_max(messages, timedelta(minutes=1)),
        "calls_per_s": window_max(messages, timedelta(seconds=1)),
        "questions_posted": len(platform.questions()),
        "podiums": sum("podium" in m.title for _, _, _, m in platform.calls),
    }


async def crash(url: str, args: argparse.Namespace) -> dict[str, float]:
    """A runs the round and dies at question `questions // 2`, mid-step; B finishes it."""
    logging.getLogger("bot.live.rounds").setLevel(logging.CRITICAL)  # A's death, expected
    bank = load_bank()
    clock = FakeClock(START)
    a_chat = RecordingPlatform(clock, 0.0, "a")
    b_chat = RecordingPlatform(clock, 0.0, "b")
    settings = Settings(ask_cooldown=0)
    players = [UserRef(Platform.SLACK, "T1", f"U{i:04d}", f"p{i}") for i in range(50)]
    dies_at = args.questions // 2
    continued_after = float("nan")

    def quiz_on(store: SqlStore, chat: RecordingPlatform) -> AbstractAsyncContextManager[Quiz]:
        return assemble(
            store,
            {Platform.SLACK: chat},
            bank,
            clock,
            settings,
            features=[basics.feature, live.feature],
            generated=False,
            wakeups=False,
        )

    async with AsyncExitStack() as outer:
        sb = await outer.enter_async_context(SqlStore(url, clock=clock))
        b = await outer.enter_async_context(quiz_on(sb, b_chat))
        async with AsyncExitStack() as inner:
            sa = await inner.enter_async_context(SqlStore(url, clock=clock))
            a = await inner.enter_async_context(quiz_on(sa, a_chat))
            round_id = await start_round(a, clock, args.questions, args.seconds)
            await rounds_of(a).tick()
            for k in range(dies_at + 1):
                q = await sa.live.question(round_id, k)
                assert q is not None and q.post.closes_at is not None
                await asyncio.gather(*(click(a, q.post.id, u, k % 4) for u in players))
                clock.set(q.post.closes_at)
                if k == dies_at:
                    a_chat.fail_threads = 1  # A dies here: the close done, its results not
                    await rounds_of(a).tick()
                else:  # both replicas tick; either may do the step
                    await asyncio.gather(rounds_of(a).tick(), rounds_of(b).tick())
        # A is gone. B keeps ticking each second; it continues once the lease passed.
        died = clock.now()
        for _ in range(int(STEP_LEASE.total_seconds()) + args.questions * (args.seconds + 2)):
            clock.advance(timedelta(seconds=1))
            done = await rounds_of(b).tick()
            if done and continued_after != continued_after:  # the first step B did
                continued_after = (clock.now() - died).total_seconds()
            if await sb.live.active(CHANNEL) is None and any(
                "podium" in m.title for _, _, _, m in b_chat.calls
            ):
                break
    titles = a_chat.questions() + b_chat.questions()
    results = [
        m.title
        for ch in (a_chat, b_chat)
        for kind, _, _, m in ch.calls
        if kind == "thread" and m.title.startswith("Results")
    ]
    return {
        "questions": len(titles),
        "distinct": len({t.split(" · ")[1] for t in titles}),
        "results": len(results),
        "results_distinct": len(set(results)),
        "podiums": sum("podium" in m.title for ch in (a_chat, b_chat) for _, _, _, m in ch.calls),
        "continued_after": continued_after,
        "by_a": len(a_chat.questions()),
        "by_b": len(b_chat.questions()),
    }


async def fresh_sqlite(tmp: str, name: str) -> str:
    url = f"sqlite+aiosqlite:///{tmp}/{name}.db"
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    return url


# The platforms' documented limits on one channel: (target label, measured key, limit, source).
RATE_LIMITS = (
    ("edits_per_minute", "edits_per_min", 50, "Slack chat.update, Tier 3"),
    ("edits_per_5s", "edits_per_5s", 5, "Discord, per channel"),
    ("messages_per_minute", "calls_per_min", 60, "Slack, about 1 a second per channel"),
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--players", type=int, default=500)
    parser.add_argument("--window", type=float, default=5.0)
    parser.add_argument("--late", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.03)
    parser.add_argument("--pg", default=os.environ.get("QUIZBOT_TEST_POSTGRES_URL", PG_DEFAULT))
    args = parser.parse_args()

    results: dict[str, dict[str, float]] = {}
    crashes: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = asyncio.run(play(asyncio.run(fresh_sqlite(tmp, "round")), args))
        crashes["sqlite"] = asyncio.run(crash(asyncio.run(fresh_sqlite(tmp, "crash")), args))
    for label, runs, work in (("live", results, play), ("livecrash", crashes, crash)):
        pg = asyncio.run(pg_database(args.pg, label))
        if pg is not None:
            try:
                runs["postgresql"] = asyncio.run(work(pg, args))
            finally:
                asyncio.run(drop_pg(args.pg, pg))

    expected = args.questions * args.players
    late = args.questions * args.late
    for name, r in results.items():
        print(
            f"{name}: {args.questions} questions x {args.players} players in the last "
            f"{args.window:g} s: {int(r['before_counted'])}/{int(r['before_sent'])} clicks before "
            f"the deadline counted ({int(r['before_stored'])} stored), "
            f"{int(r['after_counted'])}/{int(r['after_sent'])} after it; close -> next posted "
            f"p50 {r['lat_p50'] * 1000:.0f} ms, p99 {r['lat_p99'] * 1000:.0f} ms, max "
            f"{r['lat_max'] * 1000:.0f} ms (platform {args.latency * 1000:.0f} ms a call); "
            f"{int(r['edits'])} edits, at most {int(r['edits_per_min'])} a minute and "
            f"{int(r['edits_per_5s'])} in 5 s; posts and edits at most "
            f"{int(r['calls_per_min'])} a minute, {int(r['calls_per_s'])} in 1 s"
        )
    for name, c in crashes.items():
        print(
            f"{name} crash: A posted {int(c['by_a'])} questions and died mid-step; B posted "
            f"{int(c['by_b'])}, continuing {c['continued_after']:.0f} s (fake) after; "
            f"{int(c['questions'])} question posts for {int(c['distinct'])} questions, "
            f"{int(c['results'])} results posts, {int(c['podiums'])} podium"
        )
    for name, r in results.items():
        ok = (
            r["before_counted"] == expected
            and r["before_stored"] == expected
            and r["after_counted"] == 0
        )
        target(
            f"live_{name}_clicks_counted",
            f"{int(r['before_counted'])}/{expected} before, {int(r['after_counted'])}/{late} after",
            f"{expected}/{expected} before, 0 after",
            ok,
        )
        target(
            f"live_{name}_close_to_next_p99",
            f"{r['lat_p99']:.3f} s",
            "<= 1 s",
            r["lat_p99"] <= 1.0,
        )
        for label, key, limit, why in RATE_LIMITS:
            target(f"live_{name}_{label}", f"{int(r[key])}", f"<= {limit} ({why})", r[key] <= limit)
    for name, c in crashes.items():
        ok = (
            c["questions"] == args.questions
            and c["distinct"] == args.questions
            and c["results_distinct"] == c["results"] == args.questions
            and c["podiums"] == 1
        )
        target(
            f"live_{name}_crash_each_question_once",
            f"{int(c['questions'])} posts of {int(c['distinct'])} questions, "
            f"{int(c['results'])} results, {int(c['podiums'])} podium",
            f"{args.questions} of {args.questions}, {args.questions} results, 1 podium",
            ok,
        )
    for db in ("postgresql",):
        if db not in results:
            target(f"live_{db}_measured", "not reachable", "measured", False)


if __name__ == "__main__":
    main()
