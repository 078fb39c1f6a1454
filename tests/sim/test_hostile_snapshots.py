"""Hostile snapshot pickles get one clear refusal, within 200 MB (the time is
bench/hostile_inputs.py's)."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import pytest

from gpu_runner.sim import MiB, SnapshotError, load_snapshot
from gpu_runner.sim._unpickle import (
    MAX_EXPANSION,
    RefusedPickleError,
    check_pickle,
    restricted_loads,
)
from tests.hostile import assert_bounded, measure


def _event(addr: int = 16) -> dict[str, object]:
    return {"action": "alloc", "addr": addr, "size": 512, "stream": 0, "time_us": 1, "frames": []}


def repr_bomb() -> bytes:
    """296 bytes: an 'action' that is a list of itself twice, 30 levels deep (2**30 leaves
    once walked or printed)."""
    value: object = "A" * 8
    for _ in range(30):
        value = [value, value]
    return pickle.dumps({"segments": [], "device_traces": [[{"action": value}]]}, protocol=2)


def bytearray_bomb() -> bytes:
    """30 bytes: ``bytearray(1_879_048_192)`` through GLOBAL + REDUCE."""
    return b"\x80\x02cbuiltins\nbytearray\nJ\x00\x00\x00\x70\x85R."


def memo_bomb() -> bytes:
    """9 bytes: LONG_BINPUT 2**27 sizes the C unpickler's memo array to 2 GiB."""
    return b"\x80\x02Nr" + struct.pack("<I", 1 << 27) + b"."


def dict_flood() -> bytes:
    """1 MiB of EMPTY_DICT + APPEND: about 37 bytes of objects per byte of pickle."""
    return b"\x80\x04]" + b"}a" * (MiB // 2) + b"."


def shared_events() -> bytes:
    """2 MB listing one event dict a million times (memo references)."""
    event = _event()
    return pickle.dumps({"segments": [], "device_traces": [[event] * 1_000_000]})


def shared_devices() -> bytes:
    """One list of 1,000 events, listed as the trace of 1,000 devices."""
    events = [_event(16 * i) for i in range(1000)]
    return pickle.dumps({"segments": [], "device_traces": [events] * 1000})


def shared_traces() -> bytes:
    """The red team's file, within the device limit: one list of 20,000 events as the
    trace of 60 devices (1.2 M events described by 0.6 MB)."""
    events = [_event(16 * i) for i in range(20_000)]
    return pickle.dumps({"segments": [], "device_traces": [events] * 60})


def shared_segments() -> bytes:
    """One segment listed a million times beside a real one-event trace."""
    segment = {"device": 0, "address": 0, "total_size": 2 << 20, "blocks": []}
    return pickle.dumps({"segments": [segment] * 1_000_000, "device_traces": [[_event()]]})


def huge_bytes() -> bytes:
    """BINBYTES8 announcing 2**40 bytes: the C unpickler allocates before it reads."""
    return b"\x80\x04\x8e" + struct.pack("<Q", 1 << 40) + b"xx."


ATTACKS = {
    "repr_bomb": (repr_bomb, "field 'action' must be a string, got [[[...], [...]], "),
    "bytearray": (bytearray_bomb, "refused: it refers to builtins.bytearray"),
    "memo_bomb": (memo_bomb, "refused: it stores memo entry 134,217,728 after only 0"),
    "dict_flood": (dict_flood, f"would build more than 24 MiB of objects ({MAX_EXPANSION} times"),
    "shared_events": (shared_events, "lists 1,000,000 events, more than a file of its size"),
    "shared_devices": (shared_devices, "has traces for 1,000 devices, more than a machine has"),
    "shared_traces": (shared_traces, "lists 1,200,000 events, more than a file of its size"),
    "shared_segments": (shared_segments, "lists 1,000,000 segments, more than a file of its"),
    "huge_bytes": (huge_bytes, "is corrupted or not a pickle (BrokenPickleError: it ends before"),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_hostile_snapshot_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    make, expected = ATTACKS[name]
    path = tmp_path / f"{name}.pickle"
    path.write_bytes(make())
    with pytest.raises(SnapshotError) as info:
        load_snapshot(path)
    message = str(info.value)
    assert expected in message, message
    assert "\n" not in message and len(message) < 500, message


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_hostile_snapshot_costs_under_200_mb(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.pickle"
    path.write_bytes(ATTACKS[name][0]())
    measured = measure(
        "from gpu_runner.sim import SnapshotError, load_snapshot\n",
        f"""
        try:
            load_snapshot({str(path)!r})
        except SnapshotError as exc:
            return str(exc)
        return "accepted"
        """,
    )
    assert_bounded(measured)
    assert ATTACKS[name][1] in measured.out


def test_the_size_limit_is_checked_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[_event()] * 10]}))
    with pytest.raises(SnapshotError, match=r"big\.pickle is 0\.0 MiB, over the 0 MiB limit"):
        load_snapshot(path, max_bytes=64)
    assert load_snapshot(path, max_bytes=len(path.read_bytes())).traces[0][0][1] == 16


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_plain_data_of_every_protocol_passes_the_check(protocol: int) -> None:
    data: dict[str, object] = {"a": [1, 2.5, "x" * 300, "é", None, True, (1, 2), -(2**70)]}
    if protocol >= 4:  # older protocols build bytes and sets by calling a class
        data["b"] = [b"b", {3}, frozenset({4})]
    assert restricted_loads(pickle.dumps(data, protocol=protocol)) == data


def test_the_estimate_is_an_upper_bound_of_what_a_snapshot_builds() -> None:
    import tracemalloc

    frames = [{"filename": f"f{i}.py", "line": i, "name": "g"} for i in range(50)]
    events = [{**_event(16 * i), "frames": frames[i % 50 :]} for i in range(1000)]
    data = pickle.dumps({"segments": [], "device_traces": [events]})
    estimate = check_pickle(data)
    tracemalloc.start()
    try:
        built = pickle.loads(data)
        actual = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert built and actual <= estimate


def test_a_memo_index_in_order_is_accepted_and_one_past_is_refused() -> None:
    ok = b"\x80\x02]q\x00h\x00a."  # [x] where x is the list itself, through memo 0
    assert check_pickle(ok) > 0
    with pytest.raises(RefusedPickleError, match="memo entry 2 after only 1"):
        check_pickle(b"\x80\x02]q\x00q\x02.")
