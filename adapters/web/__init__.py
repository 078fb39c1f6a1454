"""The bot's HTTP port: ``/healthz``, ``/metrics``, and routes other adapters mount
(Slack's ``/slack/events`` in HTTP mode) on the exposed `aiohttp.web.Application`."""

from adapters.web.server import HealthCheck, MetricsSource, WebServer

__all__ = ["HealthCheck", "MetricsSource", "WebServer"]
