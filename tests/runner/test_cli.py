"""`quizbot demo list|run` and `quizbot runner worker` argument wiring."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bot.cli import build_parser
from bot.domain import Locale
from gpu_runner.demos import default_registry
from gpu_runner.demos._labels import simulated_device


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def test_demo_list_shows_every_id_with_its_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse("demo", "list")
    assert args.func(args) == 0
    out = capsys.readouterr().out
    for demo in default_registry().ids():
        assert demo in out
    assert "blocks=16 (int 4..32)" in out


def test_demo_run_writes_report_metrics_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(
        "demo",
        "run",
        "fragmentation",
        "--simulate",
        "--locale",
        "el",
        "--param",
        "blocks=8",
        "--out",
        str(tmp_path),
    )
    assert args.func(args) == 0
    assert "Κατακερματισμός" in (tmp_path / "report.md").read_text()
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["state"] == "succeeded"
    assert metrics["metrics"]["fragmentation_index"] == 0.75
    assert (tmp_path / "plot.png").read_bytes().startswith(b"\x89PNG")
    assert simulated_device(Locale.EL) in capsys.readouterr().out  # the report's language


def test_demo_run_refuses_a_bad_parameter_without_starting_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parse("demo", "run", "fragmentation", "--param", "blocks=99")
    assert args.func(args) == 2
    assert "blocks=99 is out of range" in capsys.readouterr().err


def test_runner_worker_takes_a_concurrency() -> None:
    args = parse("runner", "worker", "--concurrency", "2")
    assert args.concurrency == 2 and callable(args.func)


def test_demo_run_takes_json_inputs_and_refuses_bad_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = {
        "kind": "allocator-trace",
        "total_memory": 1 << 30,
        "conf": "expandable_segments:True",
        "memory_fraction": None,
        "ops": [["malloc", "a", 5 << 20], ["empty_cache"]],
        "ask": "reserved_bytes.all.current",
    }
    args = parse(
        "demo",
        "run",
        "allocator-trace",
        "--simulate",
        "--param",
        f"inputs={json.dumps(inputs)}",
        "--out",
        str(tmp_path),
    )
    assert args.func(args) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())["metrics"]
    assert (metrics["ask"], metrics["value"]) == ("reserved_bytes.all.current", 20 << 20)
    bad = parse("demo", "run", "allocator-trace", "--param", "inputs={not json")
    assert bad.func(bad) == 2
    assert "parameter inputs must be a JSON object" in capsys.readouterr().err
