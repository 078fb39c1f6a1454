"""The `allocator-trace` demo: bounded structured inputs, and a replay that equals a
fresh simulator's (the way a generated question's answer is computed)."""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import pytest

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.demos import SIMULATED_DEVICE, DemoRequestError, RunContext, default_registry
from gpu_runner.demos._trace_replay import exact_fraction
from gpu_runner.executor import Executor
from gpu_runner.sim import CachingAllocator, OutOfMemoryError
from gpu_runner.wire import job_from_payload, job_to_payload

MiB = 1 << 20
GiB = 1 << 30
REGISTRY = default_registry()
DEMO = "allocator-trace"


def trace(ops: list[list[Any]], **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": "allocator-trace",
        "total_memory": 80 * GiB,
        "conf": "",
        "memory_fraction": None,
        "ops": ops,
        "ask": "reserved_bytes.all.current",
    }
    return {**base, **over}


def run(inputs: dict[str, Any] | str, locale: Locale = Locale.EN, *, png: bool = True) -> Any:
    """The demo in this process; `png=False` draws the plot but skips its encoding (most of
    a run), for the checks that read only the text and metrics."""
    params = REGISTRY.check(DEMO, {"inputs": inputs})
    return REGISTRY[DEMO].run(RunContext(DEMO, locale, params, encode_png=png))


def fresh_replay(inputs: dict[str, Any]) -> list[int]:
    """The question families' way: a fresh CachingAllocator, `memory_stats()[ask]`."""
    alloc = CachingAllocator(inputs["total_memory"], conf=inputs["conf"])
    if inputs["memory_fraction"] is not None:
        alloc.set_per_process_memory_fraction(float(inputs["memory_fraction"]))
    live: dict[str, Any] = {}
    values = []
    for op in inputs["ops"]:
        if op[0] == "malloc":
            with contextlib.suppress(OutOfMemoryError):
                live[op[1]] = alloc.malloc(op[2])
        elif op[0] == "free":
            if op[1] in live:
                alloc.free(live.pop(op[1]))
        else:
            alloc.empty_cache()
        values.append(alloc.memory_stats()[inputs["ask"]])
    return values


def test_the_default_trace_ooms_under_its_cap_and_empty_cache_releases_one_segment() -> None:
    out = run(json.loads(REGISTRY[DEMO].param("inputs").default_json))  # type: ignore[union-attr]
    m = out.metrics
    # 300 MiB segment, 20 MiB for 5 MiB, 2 MiB small segment; d reuses a's segment (split);
    # e needs 320 MiB more: 642 > 512 MiB cap, nothing releasable -> OOM; then b's 20 MiB
    # segment is entirely free and empty_cache returns it.
    assert [s["reserved"] for s in m["steps"]] == [
        r * MiB for r in (300, 320, 322, 322, 322, 322, 322, 302)
    ]
    assert m["ooms"] == [6]
    assert m["steps"][5]["outcome"] == "oom"
    assert (m["ask"], m["value"]) == ("reserved_bytes.all.current", 302 * MiB)
    assert m["cap_bytes"] == 512 * MiB and m["simulated"] is True
    assert "302 MiB (316,669,952 B)" in out.report
    assert out.png is not None and out.png.startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "inputs",
    [
        trace([["malloc", "a", 1], ["malloc", "b", 1001], ["free", "a"], ["empty_cache"]]),
        trace(
            [["malloc", f"t{i}", (i % 5 + 1) * 3 * MiB + 512 * i] for i in range(20)]
            + [["free", f"t{i}"] for i in range(0, 20, 2)]
            + [["malloc", "big", 40 * MiB], ["empty_cache"]],
            conf="expandable_segments:True",
            ask="reserved_bytes.all.current",
        ),
        trace(
            [
                ["malloc", "w", 3 * GiB],
                ["malloc", "x", 1024],
                ["free", "w"],
                ["malloc", "y", 2 * GiB],
                ["malloc", "z", 2 * GiB],
                ["free", "z"],
                ["empty_cache"],
            ],
            conf="max_split_size_mb:20",
            memory_fraction=0.05,
            ask="num_ooms",
        ),
        trace(
            [["malloc", "a", 1200 * MiB], ["free", "a"], ["malloc", "b", 1100 * MiB]],
            conf="roundup_power2_divisions:4,garbage_collection_threshold:0.6",
            memory_fraction=0.02,
            ask="num_alloc_retries",
        ),
    ],
    ids=["small-pool", "expandable", "max-split-oom", "roundup-gc"],
)
def test_every_step_equals_a_fresh_simulator_replay(inputs: dict[str, Any]) -> None:
    out = run(inputs)
    assert [s["value"] for s in out.metrics["steps"]] == fresh_replay(inputs)
    assert out.metrics["value"] == fresh_replay(inputs)[-1]


def test_a_failed_malloc_is_recorded_and_its_later_free_skipped() -> None:
    out = run(
        trace(
            [
                ["malloc", "a", 600 * MiB],
                ["free", "a"],
                ["malloc", "a", 2 * GiB],
                ["free", "a"],
                ["malloc", "b", 10 * MiB],
            ],
            total_memory=1 * GiB,
            ask="num_ooms",
        )
    )
    assert [s["outcome"] for s in out.metrics["steps"]] == ["ok", "ok", "oom", "skipped", "ok"]
    assert out.metrics["value"] == 1
    # the OOM path released the cached 600 MiB segment before giving up
    assert out.metrics["steps"][2]["reserved"] == 0
    assert "skipped: its malloc failed" in out.report


def test_greek_report_uses_the_glossary_and_greek_number_format() -> None:
    out = run(trace([["malloc", "a", 1001 * MiB]], ask="reserved_bytes.all.current"), Locale.EL)
    assert "δεσμευμένη" in out.report and "προσομοίωση" in out.report
    # 1001 MiB rounds up to 2 MiB; four digits stay ungrouped, the bytes take Greek dots
    assert "1002 MiB (1.050.673.152 B)" in out.report


def test_inputs_arrive_as_an_object_or_as_json_text_in_one_canonical_form() -> None:
    inputs = trace([["malloc", "a", 5.0 * MiB], ["free", "a"]], memory_fraction=1)
    as_object = REGISTRY.check(DEMO, {"inputs": inputs})["inputs"]
    as_text = REGISTRY.check(DEMO, {"inputs": json.dumps(inputs)})["inputs"]
    assert as_object == as_text
    assert as_object["ops"] == [["malloc", "a", 5 * MiB], ["free", "a"]]
    assert isinstance(as_object["ops"][0][2], int) and as_object["memory_fraction"] == 1.0
    as_tuples = dict(inputs, ops=(("malloc", "a", 5 * MiB), ("free", "a")))
    assert REGISTRY.check(DEMO, {"inputs": as_tuples})["inputs"] == as_object


def test_a_job_with_inputs_round_trips_through_the_wire_format() -> None:
    inputs = trace([["malloc", "a", 3 * MiB], ["empty_cache"]], ask="segment.all.current")
    job = DemoJob(5, DEMO, Locale.EL, {"inputs": inputs})
    back = job_from_payload(json.loads(json.dumps(job_to_payload(job))))
    assert back == job
    assert REGISTRY.check(DEMO, back.params) == REGISTRY.check(DEMO, job.params)


OK = trace([["malloc", "a", MiB]])


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({**OK, "kind": "kv-cache"}, "inputs.kind is 'kv-cache'"),
        ({**OK, "extra": 1}, "unknown key(s) 'extra'"),
        ({k: v for k, v in OK.items() if k != "ask"}, "missing key(s) 'ask'"),
        ({**OK, "total_memory": 2 << 40}, "total_memory=2199023255552 is out of range"),
        ({**OK, "total_memory": "80GiB"}, "total_memory='80GiB' is not a whole number"),
        ({**OK, "conf": "expandable_segments:Maybe"}, "inputs.conf='expandable_segments:Maybe'"),
        ({**OK, "conf": "backend:cudaMallocAsync"}, "not simulated"),
        ({**OK, "memory_fraction": 0}, "memory_fraction=0 is out of range"),
        ({**OK, "memory_fraction": float("nan")}, "memory_fraction=nan is out of range"),
        ({**OK, "ops": []}, "inputs.ops has 0 entries"),
        ({**OK, "ops": [["empty_cache"]] * 65}, "inputs.ops has 65 entries"),
        ({**OK, "ops": [["malloc", "a", 65 * GiB]]}, "each malloc takes 0 to 68719476736"),
        ({**OK, "ops": [["malloc", "a", -1]]}, "asks for -1 bytes"),
        ({**OK, "ops": [["malloc", "a", True]]}, "size=True is not a whole number"),
        ({**OK, "ops": [["free", "a"]]}, "inputs.ops[0] frees 'a', which is not allocated"),
        ({**OK, "ops": [["malloc", "a", 1], ["malloc", "a", 1]]}, "allocates 'a' again"),
        ({**OK, "ops": [["memset", "a"]]}, "is not an operation"),
        ({**OK, "ops": [["free", "a", 3]]}, "free takes 1 argument(s)"),
        ({**OK, "ops": [["malloc", "", 1]]}, "the tensor name '' must be"),
        ({**OK, "ask": "reserved"}, "inputs.ask='reserved' is not a torch.cuda.memory_stats() key"),
        ([1, 2], "inputs must be a JSON object"),
        ("{oops", "parameter inputs must be a JSON object"),
        # Too deep for json on 3.11/3.12 (RecursionError); parsed on 3.13, then not an object.
        ("[" * 5000 + "]" * 5000, "inputs must be a JSON object"),
        ("x" * 20_000, "longer than 16,384 characters"),
        (7, "parameter inputs must be a JSON object (got int)"),
    ],
)
def test_inputs_out_of_bounds_get_one_clear_message(inputs: object, message: str) -> None:
    with pytest.raises(DemoRequestError) as err:
        REGISTRY.check(DEMO, {"inputs": inputs})
    assert message in str(err.value)
    assert str(err.value).startswith("allocator-trace: ")


def test_numeric_parameters_still_refuse_a_json_object() -> None:
    with pytest.raises(DemoRequestError, match=r"blocks=.* is not an integer"):
        REGISTRY.check("fragmentation", {"blocks": {"a": 1}})


def test_the_checked_value_is_a_copy_the_demo_cannot_change_for_the_next_run() -> None:
    first = REGISTRY.check(DEMO, {})["inputs"]
    first["ops"].clear()
    assert REGISTRY.check(DEMO, {})["inputs"]["ops"]


@pytest.mark.parametrize(
    ("limit", "total"),
    [(512 * MiB, 150_754_820_096), (4 * GiB, 85_520_809_984), (1, 3), (7, 7), (12345, 10**12)],
)
def test_exact_fraction_gives_torch_the_simulator_s_byte_cap(limit: int, total: int) -> None:
    f = exact_fraction(limit, total)
    assert int(f * float(total)) == limit and 0 < f <= 1.0


def test_trace_runs_in_the_executor_child_with_inputs_as_object_and_text(
    executor: Executor,
) -> None:
    inputs = trace(
        [["malloc", "a", 300 * MiB], ["malloc", "b", 5 * MiB], ["free", "a"], ["empty_cache"]],
        ask="segment.all.current",
    )
    for i, sent in enumerate((inputs, json.dumps(inputs))):
        result = executor.run(DemoJob(40 + i, DEMO, Locale.EN, {"inputs": sent}, simulate=True))
        assert result.state is DemoState.SUCCEEDED, result.error
        assert (result.metrics["ask"], result.metrics["value"]) == ("segment.all.current", 1)
        assert result.device == SIMULATED_DEVICE


def test_the_executor_refuses_bad_inputs_before_anything_runs(executor: Executor) -> None:
    bad = copy.deepcopy(OK)
    bad["ops"] = [["free", "x"]]
    with pytest.raises(DemoRequestError, match="frees 'x'"):
        executor.submit(DemoJob(50, DEMO, Locale.EN, {"inputs": bad}))


@pytest.mark.slow
def test_the_gpu_comparison_traces_are_valid_and_exercise_ooms_and_retries() -> None:
    from tests.runner.test_gpu_allocator_trace import TRACES

    outcomes = [run(t, png=False).metrics for t in TRACES]
    assert any(m["ooms"] for m in outcomes)
    assert any(fresh_replay(dict(t, ask="num_alloc_retries"))[-1] > 0 for t in TRACES)
    assert {t["conf"] for t in TRACES} >= {"", "expandable_segments:True"}
