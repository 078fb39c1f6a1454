"""Slack Web API failures, whatever their body, turned into the core's `PlatformError`.

slack_sdk raises `SlackApiError` with the response attached; the body is JSON
(``{"ok": false, "error": "not_in_channel"}``) from Slack itself, but a proxy, a load
balancer or an outage answers with text, HTML or nothing — `SlackResponse["error"]` then
raises instead of answering. `describe` never does.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.errors import NotInChannel, PlatformError

# Posting where the bot may not: the user is told how to fix it, not "something failed".
NOT_IN_CHANNEL = frozenset({"not_in_channel", "channel_not_found", "is_archived"})
# What a Slack call raises when Slack (or the way to it) failed.
CALL_ERRORS = (SlackClientError, aiohttp.ClientError, OSError, TimeoutError)


def describe(exc: BaseException) -> tuple[int | None, str]:
    """``(HTTP status or None, short reason)`` for any failure of a Slack call."""
    if isinstance(exc, SlackApiError):
        response: Any = exc.response
        status = getattr(response, "status_code", None)
        data = getattr(response, "data", None)
        if isinstance(data, dict) and data.get("error"):
            return status, str(data["error"])
        text = data if isinstance(data, str | bytes) else ""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        first = " ".join(str(text).split())[:80]
        return status, f"HTTP {status}" + (f": {first}" if first else " with an empty body")
    if isinstance(exc, TimeoutError):
        return None, "timed out"
    return None, f"{type(exc).__name__}: {str(exc)[:120]}"


def platform_error(method: str, exc: BaseException) -> PlatformError:
    status, reason = describe(exc)
    kind = NotInChannel if reason in NOT_IN_CHANNEL else PlatformError
    return kind("Slack", method, status, reason)


__all__ = ["CALL_ERRORS", "NOT_IN_CHANNEL", "describe", "platform_error"]
