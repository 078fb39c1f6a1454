"""Files sent from the dashboard: question files to import (admins) and memory snapshots
for the clinic. Both take the chat's route (`bot.intake.FileRoute`: who may, which file,
how large — asked before the body is read), so the answers are the chat's answers.

A question file is imported while the page waits. A snapshot is analysed in the
background: the page is its progress line (kept in `web_clinic`, so any replica shows
it), then the result — private to the member who sent it, the file deleted after the run.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from bot.clock import Clock
from bot.dashboard.admin import questions as questions_page
from bot.dashboard.overview import base_context
from bot.i18n import translator
from bot.intake import handle
from bot.logs import ThrottledLog
from bot.messages import Message
from bot.pages import Download, PageNotFound, PageRequest, Redirect, Render, Upload
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)
KEPT = timedelta(days=1)  # a result's page, after the run


class Collected:
    """A `PrivateReply` that keeps what the route said (the import's report)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def status(self, message: Message) -> None:
        self.messages.append(message)

    async def result(self, message: Message) -> None:
        self.messages.append(message)


class ClinicPage:
    """A `PrivateReply` that writes the job's progress and result where its page reads."""

    def __init__(self, req: PageRequest, job: int) -> None:
        self.reads = req.store.dashboard
        self.clock = req.quiz.service.clock
        self.job = job

    async def status(self, message: Message) -> None:
        await self.reads.clinic_status(self.job, message.body, self.clock.now())

    async def result(self, message: Message) -> None:
        png = message.image.data if message.image is not None else None
        await self.reads.clinic_finish(self.job, message.title, message.body, png, self.clock.now())


def _upload(req: PageRequest) -> Upload:
    if req.upload is None:
        raise PageNotFound("no file")
    return req.upload


async def import_file(req: PageRequest) -> Render:
    upload = _upload(req)
    reply = Collected()
    try:
        await handle(upload.work, upload.path, reply, upload.sent, req.quiz.service.problems)
    finally:
        upload.discard()
    page = await questions_page(req)
    return Render(page.template, {**page.context, "result": reply.messages[-1:]})


class WebClinic:
    """The clinic's pages and their background runs (a service: drained at shutdown)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.tasks = TaskSupervisor("web clinic")
        self.problems = ThrottledLog(log)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[WebClinic]:
        try:
            yield self
        finally:
            await self.tasks.shutdown(10.0)

    async def page(self, req: PageRequest) -> Render | Redirect:
        reads = req.store.dashboard
        if req.method == "POST":
            upload = _upload(req)
            now = self.clock.now()
            await reads.clinic_purge(now - KEPT)
            job = await reads.clinic_start(req.member, upload.sent.name, now)
            self.tasks.spawn(self._run(req, job, upload), name=f"web clinic {job}")
            return Redirect(f"clinic/{job}")
        jobs = await reads.clinic_jobs(req.member)
        return Render("clinic.html", {**base_context(req), "jobs": jobs})

    async def _run(self, req: PageRequest, job: int, upload: Upload) -> None:
        try:
            await handle(upload.work, upload.path, ClinicPage(req, job), upload.sent, self.problems)
        finally:
            upload.discard()

    async def result(self, req: PageRequest) -> Render:
        job = await req.store.dashboard.clinic_job(req.member, req.args["job"])
        if job is None:
            raise PageNotFound(str(req.args["job"]))
        t = translator(req.locale)
        line = next(
            (
                w
                for w in job.body.replace("`", " ").split()
                if w.startswith("PYTORCH_CUDA_ALLOC_CONF=")
            ),
            "",
        )
        context: dict[str, Any] = {**base_context(req), "job": job, "line": line}
        context["waiting"] = t("Working on it: this page refreshes by itself.")
        return Render("clinic_result.html", context)

    async def plot(self, req: PageRequest) -> Download:
        job = await req.store.dashboard.clinic_job(req.member, req.args["job"])
        if job is None or job.png is None:
            raise PageNotFound(str(req.args["job"]))
        return Download(f"memory-clinic-{job.id}.png", "image/png", job.png)


__all__ = ["ClinicPage", "Collected", "WebClinic", "import_file"]
