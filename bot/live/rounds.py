"""`LiveRounds`: a live round's steps, each done once across replicas and crashes.

A round is a row whose `step` moves 0 (lobby) → 1 (question 1 open) → 2 (question 1
closed) → 3 … → the end. Whoever does a step first takes its lease in the database
(`LiveRepository.claim`: a conditional update), does the step's work — each part of it
safe to redo: question k's post is claimed with its row (`claim_question` returns the
existing one), a close is a conditional update, results and the podium are marked once
posted — and then advances the step (`WHERE step = …`). A process that dies holding a
lease leaves the step to whoever ticks after the lease passed (another replica, or itself
restarted), which continues from there; a step that was never claimed is simply done by
the next tick. `tick(now)` runs on the scheduler's pass (tests and the console's clock
call it) and, in production, on this service's own timer, which wakes at the next due
step of any round (a second at most between looks, for rounds other replicas started).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.domain import ChannelRef, Locale, Post, PostDraft, PostState, Question, UserRef
from bot.errors import UserFacingError
from bot.i18n import translator
from bot.lifecycle import Lifecycle
from bot.live.messages import (
    lobby_message,
    lobby_over,
    podium_message,
    question_face,
    results_message,
    standings_message,
)
from bot.live.ports import ACTIVE, EndNote, LiveRepository, LiveRound, RoundState, standings
from bot.logs import ThrottledLog
from bot.quiz import QuizService
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)

LOBBY = timedelta(seconds=30)
# How long a step's owner has to finish it before another instance may redo it: longer than
# a platform call with its retries, short enough that a crash costs a round little.
STEP_LEASE = timedelta(seconds=15)
POLL = 1.0  # seconds between looks for steps other replicas left (production timer)
# The "N answered" line of an open live question is edited at most this often (clock
# time), so the edits stay far below Slack's and Discord's per-channel limits.
COUNT_EVERY = timedelta(seconds=5)


class LiveRounds(Lifecycle):
    def __init__(
        self,
        service: QuizService,
        repo: LiveRepository,
        clock: Clock,
        *,
        lobby: timedelta = LOBBY,
        lease: timedelta = STEP_LEASE,
        timer: bool = False,
        poll: float = POLL,
        count_every: timedelta | None = None,
    ) -> None:
        self.service = service
        self.repo = repo
        self.clock = clock
        self.lobby = lobby
        self.lease = lease
        self.timer = timer
        self.poll = poll
        self.problems = ThrottledLog(log)
        # Count edits: with the production timer unless given (tests that tick have none).
        self.count_every = count_every if count_every is not None or not timer else COUNT_EVERY
        self.tasks = TaskSupervisor("live")
        self._edited: dict[int, datetime] = {}  # post id -> when its count was last edited
        self._editing: set[int] = set()
        self._locks: dict[int, asyncio.Lock] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._running = False

    # -- lifecycle: the production timer ---------------------------------------------------

    async def initialize(self) -> None:
        self._running = True
        if self.timer:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="live-rounds")

    async def shutdown(self) -> None:
        self._running = False
        await self.tasks.cancel()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def wake(self) -> None:
        """Look again now (a round was started, hurried or stopped)."""
        self._wake.set()

    async def _loop(self) -> None:
        while self._running:
            try:
                await self.tick()
                due = await self.repo.next_due(self._platforms)
            except Exception as exc:
                self.problems.problem("live tick", "a live round's step failed: %s", exc, exc=exc)
                due = None
            wait = self.poll
            ahead = (due - self.clock.now()).total_seconds() if due is not None else None
            if ahead is not None and ahead > 0:  # past due: leased elsewhere, look again later
                wait = min(wait, ahead)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=wait)

    @property
    def _platforms(self) -> Collection[str]:
        return set(self.service.chats)

    # -- the steps -------------------------------------------------------------------------

    async def next_event(self, now: datetime) -> datetime | None:
        return await self.repo.next_due(self._platforms)

    async def tick(self, now: datetime | None = None) -> int:
        """Do every due step of every round (several in a row for one round: close k, its
        results, question k+1). Returns how many steps this instance did."""
        now = now or self.clock.now()
        due = await self.repo.due(now, now - self.lease, self._platforms)
        # The channels' rounds side by side: one slow platform call delays only its own.
        done = await asyncio.gather(*(self._run(r) for r in due), return_exceptions=True)
        for result in done:
            if isinstance(result, BaseException):
                self.problems.problem("live tick", "a live round could not step: %s", result)
        return sum(n for n in done if isinstance(n, int))

    async def _run(self, r: LiveRound | None) -> int:
        done = 0
        while r is not None and r.state in (*ACTIVE, RoundState.ENDING):
            now = self.clock.now()
            if r.next_at > now or not await self.repo.claim(r.id, r.step, now, now - self.lease):
                break
            current = r
            keeper = asyncio.get_running_loop().create_task(self._keep(r.id, r.step, now))
            try:
                r = await self._step(current, now)
            except Exception as exc:
                # The lease stays taken: this step is redone once it passes.
                self.problems.problem(
                    f"live step: {type(exc).__name__}",
                    "live round %s: step %s failed; it is tried again after its lease",
                    current.id,
                    current.step,
                    exc=exc,
                )
                break
            finally:
                keeper.cancel()
                await asyncio.gather(keeper, return_exceptions=True)
            done += 1
        return done

    async def _keep(self, round_id: int, step: int, held: datetime) -> None:
        """Renew a step's lease while its work runs (a platform call may wait out a 429
        for longer than the lease): no other instance redoes a step still in hand."""
        every = self.lease.total_seconds() / 3
        while True:
            await asyncio.sleep(every)
            now = self.clock.now()
            if not await self.repo.renew(round_id, step, held, now):
                return
            held = now

    async def _step(self, r: LiveRound, now: datetime) -> LiveRound | None:
        if r.state is RoundState.ENDING:
            await self._podium(r)
            return None
        if r.state is RoundState.LOBBY:
            return await self._open(r, 0, RoundState.RUNNING)
        k = r.current
        if r.step % 2 == 1:  # question k is open: close it, post its results
            await self._close(r, k, now)
            return await self._advanced(r, self.clock.now())
        if r.stop_requested or k + 1 >= r.questions:
            return await self._finish(r, EndNote.STOPPED if r.stop_requested else EndNote.COMPLETE)
        return await self._open(r, k + 1)

    async def _advanced(
        self, r: LiveRound, next_at: datetime, state: RoundState | None = None
    ) -> LiveRound | None:
        if not await self.repo.advance(r.id, r.step, next_at, state):
            return None
        return await self.repo.get(r.id)

    async def _open(
        self, r: LiveRound, k: int, state: RoundState | None = None
    ) -> LiveRound | None:
        """Post question k (once: a claimed post of an earlier attempt is sent, a sent one
        is left) and advance to it."""
        if r.stop_requested and r.state is RoundState.LOBBY:
            return None
        q = await self.repo.question(r.id, k)
        if q is None:
            question = await self._pick(r)
            if question is None:
                return await self._finish(r, EndNote.STOPPED)
            now = self.clock.now()
            draft = PostDraft.of(
                r.channel, question, r.locale, now, now + timedelta(seconds=r.seconds)
            )
            q = await self.repo.claim_question(r.id, k, draft, counted=r.counted)
        if q.post.state is PostState.CLAIMED:
            question = await self.service.store.questions.get(q.post.question_hash)
            if question is None:
                raise RuntimeError(f"live question {q.post.id} has no stored version")
            opened = self.clock.now()
            closes = opened + timedelta(seconds=r.seconds)
            face = question_face(r, k, replace(q.post, closes_at=closes), question)
            ref = await self.service.chat(r.channel).post_message(r.channel, face)
            q = await self.repo.mark_opened(r.id, k, ref, opened, closes)
            self.service.metrics.posts.inc(kind=str(q.post.kind))
        if k == 0:
            await self._lobby_started(r)
        assert q.post.closes_at is not None
        return await self._advanced(r, q.post.closes_at, state)

    async def _pick(self, r: LiveRound) -> Question | None:
        settings = await self.service.store.settings.get(r.channel)
        history = [p.question_id for p in await self.service.store.posts.history(r.channel)]
        question = await self.service.pick(r.channel, history, settings, r.topic)
        if question is not None:
            await self.service.store.questions.save(question)
        return question

    async def _lobby_started(self, r: LiveRound) -> None:
        if r.lobby_message is None:
            return
        players = len(await self.repo.players(r.id))
        try:
            t = translator(r.locale)
            await self.service.chat(r.channel).update_message(
                r.lobby_message, lobby_over(r, t, players, cancelled=False)
            )
        except Exception as exc:  # the lobby's face only: the round goes on
            self.problems.problem("live lobby edit", "could not edit a live lobby", exc=exc)

    async def _close(self, r: LiveRound, k: int, now: datetime) -> None:
        """Close question k (a conditional update: counted rounds fold into the daily
        boards once), edit its face, post its results in its thread — once."""
        q = await self.repo.question(r.id, k)
        if q is None:
            return
        await self.service.store.posts.close(q.post.id, now)
        if q.results_at is not None:
            return
        question = await self.service.store.questions.get(q.post.question_hash)
        post = await self.service.store.posts.get(q.post.id)
        if question is None or post is None or post.message is None:
            return
        answers = await self.repo.answers(r.id)
        table = standings(answers, await self.repo.players(r.id))
        chat = self.service.chat(r.channel)
        try:
            async with self._lock(post.id):
                await chat.update_message(post.message, question_face(r, k, post, question))
        except Exception as exc:  # its face only: the results still go out
            self.problems.problem("live face edit", "could not edit a live question", exc=exc)
        self._edited.pop(post.id, None)
        self._locks.pop(post.id, None)
        await chat.reply_in_thread(post.message, results_message(r, k, question, answers, table))
        await self.repo.mark_results(r.id, k, self.clock.now())

    async def _finish(self, r: LiveRound, note: EndNote) -> LiveRound | None:
        """End the round: the standings fold into the live board and the channel is free
        (one transaction); the podium is the next step."""
        answers = await self.repo.answers(r.id)
        table = standings(answers, await self.repo.players(r.id))
        if not await self.repo.finish(r.id, r.step, self.clock.now(), note, table):
            return None
        return await self.repo.get(r.id)

    async def _podium(self, r: LiveRound) -> None:
        answers = await self.repo.answers(r.id)
        table = standings(answers, await self.repo.players(r.id))
        chat = self.service.chat(r.channel)
        stopped = r.end_note is EndNote.STOPPED
        ref = await chat.post_message(r.channel, podium_message(r, answers, table, stopped=stopped))
        await self.repo.mark_podium(r.id, self.clock.now())
        try:
            await chat.reply_in_thread(ref, standings_message(r, table))
        except Exception as exc:
            self.problems.problem("live standings", "could not post live standings", exc=exc)

    # -- the "N answered" line -----------------------------------------------------------------

    def _lock(self, post_id: int) -> asyncio.Lock:
        return self._locks.setdefault(post_id, asyncio.Lock())

    def answered(self, post: Post) -> None:
        """An answer was recorded on a live question: edit its count, at most once per
        `count_every` of the clock's time (the close shows the final count)."""
        if self.count_every is None or post.message is None or post.id in self._editing:
            return
        now = self.clock.now()
        last = self._edited.get(post.id)
        if last is not None and now - last < self.count_every:
            return
        self._edited[post.id] = now
        self._editing.add(post.id)
        self.tasks.spawn(self._count_edit(post.id), name=f"live-count-{post.id}")

    async def _count_edit(self, post_id: int) -> None:
        try:
            q = await self.repo.by_post(post_id)
            r = await self.repo.get(q.round_id) if q is not None else None
            if q is None or r is None or q.post.message is None:
                return
            question = await self.service.store.questions.get(q.post.question_hash)
            if question is None:
                return
            chat = self.service.chat(r.channel)
            async with self._lock(post_id):
                fresh = await self.service.store.posts.get(post_id)
                if fresh is None or fresh.state is not PostState.OPEN or fresh.message is None:
                    return
                await chat.update_message(fresh.message, question_face(r, q.k, fresh, question))
                # Another replica may have closed it meanwhile: the closed face wins.
                after = await self.service.store.posts.get(post_id)
                if after is not None and after.closed_at is not None:
                    await chat.update_message(fresh.message, question_face(r, q.k, after, question))
        except Exception as exc:
            self.problems.problem("live count edit", "could not edit a live count", exc=exc)
        finally:
            self._editing.discard(post_id)

    # -- what commands and buttons do --------------------------------------------------------

    async def start(
        self,
        channel: ChannelRef,
        user: UserRef,
        *,
        questions: int,
        seconds: int,
        topic: str | None,
        counted: bool,
        locale: Locale,
    ) -> LiveRound:
        t = translator(locale)
        now = self.clock.now()
        r = await self.repo.start(
            channel,
            questions=questions,
            seconds=seconds,
            topic=topic,
            counted=counted,
            locale=locale,
            started_by=user.user,
            now=now,
            starts_at=now + self.lobby,
        )
        if r is None:
            raise UserFacingError(
                t(
                    "A live round is already under way in this channel: /quiz live shows it, "
                    "and an admin ends it with /quiz live stop."
                )
            )
        try:
            ref = await self.service.chat(channel).post_message(channel, lobby_message(r, t))
        except Exception:
            await self.repo.cancel(r.id, now)
            raise
        await self.repo.set_lobby_message(r.id, ref)
        self.wake()
        return replace(r, lobby_message=ref)

    async def start_now(self, r: LiveRound) -> None:
        await self.repo.hurry(r.id, self.clock.now(), stop=False)
        self.wake()
        await self.tick()

    async def stop(self, r: LiveRound) -> bool:
        """End the round: cancelled in its lobby; else the open question closes with its
        results, then the podium and the standings. False when it had ended already."""
        now = self.clock.now()
        if r.state is RoundState.LOBBY and await self.repo.cancel(r.id, now):
            if r.lobby_message is not None:
                t = translator(r.locale)
                players = len(await self.repo.players(r.id))
                try:
                    await self.service.chat(r.channel).update_message(
                        r.lobby_message, lobby_over(r, t, players, cancelled=True)
                    )
                except Exception as exc:
                    self.problems.problem("live lobby edit", "could not edit a live lobby", exc=exc)
            return True
        fresh = await self.repo.hurry(r.id, now, stop=True)
        if fresh is None or fresh.state not in ACTIVE:
            return False
        self.wake()
        await self.tick()
        return True

    async def busy(self, channels: Collection[ChannelRef]) -> set[ChannelRef]:
        return await self.repo.busy(channels)


__all__ = ["LOBBY", "STEP_LEASE", "LiveRounds"]
