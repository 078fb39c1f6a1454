"""JSON shapes that cross process boundaries (fork server pipe, Celery result backend)."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from bot.domain import DemoJob, DemoResult, DemoState, Locale


class JobPayload(TypedDict):
    run_id: int
    demo: str
    locale: str
    params: dict[str, Any]
    simulate: bool


class ResultPayload(TypedDict, total=False):
    state: str
    device: str
    report: str
    metrics: dict[str, Any]
    png_b64: str | None
    error: str
    started_at: float | None  # epoch seconds when the demo code began (the child's clock)
    simulated: bool


def job_to_payload(job: DemoJob) -> JobPayload:
    return {
        "run_id": job.run_id,
        "demo": job.demo,
        "locale": str(job.locale),
        "params": dict(job.params),
        "simulate": job.simulate,
    }


def job_from_payload(data: Mapping[str, Any]) -> DemoJob:
    return DemoJob(
        int(data["run_id"]),
        str(data["demo"]),
        Locale(data["locale"]),
        dict(data.get("params") or {}),
        bool(data.get("simulate", False)),
    )


def result_to_payload(result: DemoResult, started_at: float | None = None) -> ResultPayload:
    return {
        "state": str(result.state),
        "device": result.device,
        "report": result.report,
        "metrics": dict(result.metrics),
        "png_b64": base64.b64encode(result.png).decode("ascii") if result.png else None,
        "error": result.error,
        "started_at": started_at,
    }


def result_from_payload(run_id: int, demo: str, data: Mapping[str, Any]) -> DemoResult:
    png = data.get("png_b64")
    return DemoResult(
        run_id=run_id,
        demo=demo,
        state=DemoState(data.get("state", DemoState.FAILED)),
        device=str(data.get("device") or ""),
        report=str(data.get("report") or ""),
        metrics=dict(data.get("metrics") or {}),
        png=base64.b64decode(png) if png else None,
        error=str(data.get("error") or ""),
    )


CLINIC = "clinic"  # the job label of memory-clinic runs


@dataclass(frozen=True, slots=True)
class ClinicRequest:
    """A memory-clinic run for the executor: the snapshot is a file on this host."""

    path: str
    name: str
    locale: Locale
    max_bytes: int
    gpu_memory: int | None = None


class ClinicTaskPayload(TypedDict):
    """A clinic run through Celery: the snapshot travels with the task (capped)."""

    name: str
    locale: str
    gpu_memory: int | None
    data_b64: str


class ClinicResultPayload(TypedDict, total=False):
    """The clinic child's result line (and the Celery task's return value)."""

    state: str  # a DemoState value
    device: str
    error: str
    reason: str  # a bot.clinic.Rejection when the file was refused
    detail: dict[str, Any]
    title: str
    text: str
    table: str
    recommendation: str | None
    png_b64: str
    summary: dict[str, Any]
    started_at: float | None


def json_safe(value: Any) -> Any:
    """Metrics as plain JSON: tuples to lists, non-finite floats and odd objects to text."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def dumps(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
