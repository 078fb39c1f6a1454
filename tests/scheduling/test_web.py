"""`/healthz` and `/metrics` over a real aiohttp server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from adapters.web import WebServer
from bot.metrics import MetricsRegistry, QuizMetrics
from bot.scheduling import Scheduler
from storage.store import SqlStore


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_healthz_is_200_when_the_scheduler_runs_and_the_database_answers(
    scheduler: Scheduler, store: SqlStore, http: aiohttp.ClientSession
) -> None:
    checks = {"scheduler": scheduler.healthy, "database": store.ping}
    async with WebServer(MetricsRegistry(), host="127.0.0.1", port=0, checks=checks) as server:
        assert server.port > 0
        async with http.get(f"{server.url}/healthz") as resp:
            assert resp.status == 200
            assert await resp.json() == {
                "status": "ok",
                "checks": {"database": "ok", "scheduler": "ok"},
                "down": [],
            }


async def test_healthz_is_503_naming_what_is_down(
    scheduler: Scheduler, store: SqlStore, http: aiohttp.ClientSession
) -> None:
    unreachable = SqlStore("postgresql+asyncpg://quiz@127.0.0.1:1/quiz")
    checks = {"scheduler": scheduler.healthy, "database": unreachable.ping}
    try:
        async with WebServer(MetricsRegistry(), host="127.0.0.1", port=0, checks=checks) as server:
            async with http.get(f"{server.url}/healthz") as resp:
                assert resp.status == 503
                body = await resp.json()
            assert body["down"] == ["database"] and body["checks"]["scheduler"] == "ok"
            await scheduler.shutdown()
            async with http.get(f"{server.url}/healthz") as resp:
                assert resp.status == 503
                assert (await resp.json())["down"] == ["database", "scheduler"]
    finally:
        await unreachable.engine.dispose()


async def test_a_hanging_check_counts_as_down(http: aiohttp.ClientSession) -> None:
    async def hangs() -> bool:
        await asyncio.Event().wait()
        return True

    server = WebServer(MetricsRegistry(), host="127.0.0.1", port=0, check_timeout=0.05)
    server.add_check("database", hangs)
    async with server, http.get(f"{server.url}/healthz") as resp:
        assert resp.status == 503
        assert (await resp.json())["down"] == ["database"]


async def test_metrics_serve_the_prometheus_text_format(http: aiohttp.ClientSession) -> None:
    registry = MetricsRegistry()
    metrics = QuizMetrics(registry)
    metrics.posts.inc(kind="scheduled")
    metrics.posts.inc(kind="scheduled")
    metrics.answers.inc(status="recorded")
    metrics.scheduler_lag.set(0.25)
    server = WebServer(registry, host="127.0.0.1", port=0)
    async with server, http.get(f"{server.url}/metrics") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await resp.text()
    assert "# TYPE quizbot_posts_total counter" in text
    assert 'quizbot_posts_total{kind="scheduled"} 2' in text
    assert 'quizbot_answers_total{status="recorded"} 1' in text
    assert "quizbot_reveals_total 0" in text
    assert "quizbot_reconciler_retries_total 0" in text
    assert "# TYPE quizbot_scheduler_lag_seconds gauge" in text
    assert "quizbot_scheduler_lag_seconds 0.25" in text
    assert text.endswith("\n")


async def test_other_adapters_mount_routes_on_the_app_before_start(
    http: aiohttp.ClientSession,
) -> None:
    server = WebServer(MetricsRegistry(), host="127.0.0.1", port=0)

    async def events(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    server.app.router.add_post("/slack/events", events)
    async with server, http.post(f"{server.url}/slack/events") as resp:
        assert resp.status == 200 and await resp.json() == {"ok": True}


async def test_a_port_in_use_names_the_setting(http: aiohttp.ClientSession) -> None:
    async with WebServer(MetricsRegistry(), host="127.0.0.1", port=0) as first:
        second = WebServer(MetricsRegistry(), host="127.0.0.1", port=first.port)
        with pytest.raises(OSError, match="QUIZBOT_HTTP_PORT"):
            await second.initialize()
