"""The demo's lines in the thread: the status line, then the result it becomes."""

from __future__ import annotations

from bot.domain import DemoResult, DemoState, Locale
from bot.i18n import translator
from bot.messages import Message


def status_message(demo: str, locale: Locale, device: str | None) -> Message:
    """ "queued…", then "running on NVIDIA H200…" or "simulating…"."""
    t = translator(locale)
    if device is None:
        body = t("⏳ Demo `{demo}`: queued…", demo=demo)
    elif "simulated" in device:
        body = t("⚙️ Demo `{demo}`: simulating (no GPU)…", demo=demo)
    else:
        body = t("⚙️ Demo `{demo}`: running on {device}…", demo=demo, device=device)
    return Message(body=body)


def result_message(demo: str, locale: Locale, result: DemoResult) -> Message:
    t = translator(locale)
    if result.state is DemoState.SUCCEEDED:
        body = result.report
        gpu = result.metrics.get("gpu_value")
        if gpu is not None and result.metrics.get("agree") is not None:
            verdict = (
                t("✅ On the real allocator: {value} — the question's answer holds.", value=gpu)
                if result.metrics.get("agree")
                else t(
                    "⚠️ On the real allocator: {value} — not the question's answer ({expected}).",
                    value=gpu,
                    expected=result.metrics.get("simulator_value"),
                )
            )
            body = f"{verdict}\n{body}"
        return Message(title=t("Demo · {demo}", demo=demo), body=body, footer=result.device)
    if result.state is DemoState.TIMED_OUT:
        body = t("⏱️ Demo `{demo}` timed out: {error}", demo=demo, error=result.error)
    else:
        body = t(
            "⚠️ Demo `{demo}` failed: {error}", demo=demo, error=result.error or t("no reason given")
        )
    return Message(body=body, footer=result.device)


__all__ = ["result_message", "status_message"]
