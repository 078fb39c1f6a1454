"""A small aiohttp server, started and stopped as an async context manager.

``/healthz`` answers 200 with JSON when every check passes (by default: the scheduler is
running, the database answers), else 503 naming what is down. ``/metrics`` renders the
registry in the Prometheus text format. Other adapters add routes to `app` before start.

The port is public (Slack's and Discord's HTTP modes): every request body is read first,
within `body_deadline` seconds, and slow, cut or undecodable bodies are answered, counted
(`aborted_body`) and logged once per interval without a traceback (`bodies.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from aiohttp import web

from bot.lifecycle import Lifecycle

from .bodies import BODY_DEADLINE, LINGERING_TIME, PROTOCOL_LOG, AbortedBody, BodyGuard

log = logging.getLogger(__name__)

HealthCheck = Callable[[], Awaitable[bool]]
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # prometheus_client's


class MetricsSource(Protocol):
    def render(self) -> str:
        """The Prometheus text exposition."""
        ...


class WebServer(Lifecycle):
    """``/healthz`` and ``/metrics`` on ``host:port`` (port 0: any free port, see `port`)."""

    def __init__(
        self,
        metrics: MetricsSource,
        *,
        port: int,
        host: str = "0.0.0.0",
        checks: Mapping[str, HealthCheck] | None = None,
        check_timeout: float = 2.0,
        body_deadline: float = BODY_DEADLINE,
        aborted_body: AbortedBody | None = None,
    ) -> None:
        self.metrics = metrics
        self.host = host
        self.requested_port = port
        self.check_timeout = check_timeout
        self.checks: dict[str, HealthCheck] = dict(checks or {})
        self.body_guard = BodyGuard(body_deadline, aborted_body or (lambda reason: None))
        self.app = web.Application(middlewares=[self.body_guard.middleware])
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/metrics", self._metrics)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    def add_check(self, name: str, check: HealthCheck) -> None:
        """A named check for ``/healthz``: an async callable returning True when healthy."""
        self.checks[name] = check

    @property
    def port(self) -> int:
        """The bound port (once initialized)."""
        if self._port is None:
            raise RuntimeError("the web server is not started")
        return self._port

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    async def initialize(self) -> None:
        runner = web.AppRunner(
            self.app, access_log=None, lingering_time=LINGERING_TIME, logger=PROTOCOL_LOG
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.requested_port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise OSError(
                f"cannot listen on {self.host}:{self.requested_port} ({exc.strerror}); "
                "set QUIZBOT_HTTP_PORT to a free port"
            ) from exc
        self._runner = runner
        self._port = _bound_port(runner, self.requested_port)
        log.info("HTTP server on %s (/healthz, /metrics)", self.url)

    async def shutdown(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def check(self) -> dict[str, bool]:
        """Run every check at once, each bounded by ``check_timeout``."""
        names = list(self.checks)
        results = await asyncio.gather(*(self._run_check(self.checks[n]) for n in names))
        return dict(zip(names, results, strict=True))

    async def _run_check(self, check: HealthCheck) -> bool:
        try:
            return bool(await asyncio.wait_for(check(), self.check_timeout))
        except Exception:
            log.warning("health check failed", exc_info=True)
            return False

    async def _healthz(self, request: web.Request) -> web.Response:
        results = await self.check()
        down = sorted(name for name, ok in results.items() if not ok)
        body = {
            "status": "ok" if not down else "unavailable",
            "checks": {name: "ok" if ok else "down" for name, ok in sorted(results.items())},
            "down": down,
        }
        return web.json_response(body, status=503 if down else 200)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=self.metrics.render().encode(),
            headers={"Content-Type": PROMETHEUS_CONTENT_TYPE},
        )


def _bound_port(runner: web.AppRunner, requested: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return requested
