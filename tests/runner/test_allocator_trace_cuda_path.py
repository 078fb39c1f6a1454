"""The allocator-trace demo's CUDA path without a GPU: a fake `torch` whose CUDA caching
allocator is the simulator (with torch's own cap arithmetic). It checks the plumbing the
GPU run relies on: settings applied before the first malloc, the byte cap that equals
the simulator's, the runner's cap and when the figures stop being comparable.
The real comparison runs in test_gpu_allocator_trace.py on a CUDA machine."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from bot.domain import Locale
from gpu_runner.demos import DemoRequestError, RunContext, default_registry
from gpu_runner.sim import CachingAllocator, OutOfMemoryError

MiB, GiB = 1 << 20, 1 << 30
H200 = 150_754_820_096  # what torch reports as total_memory for an H200
REGISTRY = default_registry()


class FakeTensor:
    """Frees its block when the last reference goes, as a CUDA tensor does."""

    def __init__(self, cuda: FakeCuda, block: Any) -> None:
        self._cuda, self._block = cuda, block

    def __del__(self) -> None:
        self._cuda.allocator().free(self._block)


class FakeCuda:
    """`torch.cuda` over the simulator; the device is `total` bytes."""

    OutOfMemoryError = RuntimeError

    def __init__(self, total: int) -> None:
        self.total, self.conf, self.fraction = total, "", 1.0
        self._alloc: CachingAllocator | None = None

    def allocator(self) -> CachingAllocator:
        if self._alloc is None:  # the settings are read at the first allocation
            self._alloc = CachingAllocator(self.total, conf=self.conf)
            if self.fraction < 1.0:
                self._alloc.set_per_process_memory_fraction(self.fraction)
        return self._alloc

    def set_per_process_memory_fraction(self, fraction: float) -> None:
        self.fraction = fraction
        if self._alloc is not None:
            self._alloc.set_per_process_memory_fraction(fraction)

    def get_device_properties(self, _device: int) -> Any:
        return SimpleNamespace(total_memory=self.total)

    def mem_get_info(self) -> tuple[int, int]:
        return self.total - 600 * MiB, self.total  # the CUDA context takes some

    def memory_stats(self) -> dict[str, int]:
        return self.allocator().memory_stats()

    def memory_snapshot(self) -> list[Any]:
        return list(self.allocator().memory_snapshot())

    def empty_cache(self) -> None:
        self.allocator().empty_cache()

    def synchronize(self) -> None:
        pass

    def get_device_name(self) -> str:
        return "Fake H200"


def fake_torch(total: int = H200) -> Any:
    cuda = FakeCuda(total)

    def empty(nbytes: int, dtype: object, device: str) -> FakeTensor:
        assert device == "cuda"
        try:
            return FakeTensor(cuda, cuda.allocator().malloc(nbytes))
        except OutOfMemoryError as exc:
            raise RuntimeError(str(exc)) from None

    def settings(conf: str) -> None:
        assert cuda._alloc is None, "settings must come before the first allocation"
        cuda.conf = conf

    return SimpleNamespace(
        cuda=cuda,
        empty=empty,
        uint8="uint8",
        __version__="2.13.0",
        version=SimpleNamespace(cuda="13.0"),
        _C=SimpleNamespace(_accelerator_setAllocatorSettings=settings),
    )


def on_fake_gpu(inputs: dict[str, Any], gpu_cap: int = 16 * GiB, total: int = H200) -> Any:
    params = REGISTRY.check("allocator-trace", {"inputs": inputs})
    ctx = RunContext(
        "allocator-trace", Locale.EN, params, torch=fake_torch(total), cuda=True, gpu_cap=gpu_cap
    )
    return REGISTRY["allocator-trace"].run(ctx)


def trace(ops: list[list[Any]], **over: Any) -> dict[str, Any]:
    base = {
        "kind": "allocator-trace",
        "total_memory": 80 * GiB,
        "conf": "",
        "memory_fraction": None,
        "ops": ops,
        "ask": "num_ooms",
    }
    return {**base, **over}


OOM_UNDER_CAP = trace(
    [
        ["malloc", "a", 300 * MiB],
        ["malloc", "b", 300 * MiB],
        ["free", "a"],
        ["malloc", "c", 400 * MiB],
        ["malloc", "d", 5 * MiB],
    ],
    memory_fraction=0.0078125,  # 640 MiB of 80 GiB
    conf="expandable_segments:True",
)


def test_the_gpu_run_gets_the_simulator_s_cap_and_settings_and_agrees() -> None:
    out = on_fake_gpu(OOM_UNDER_CAP)
    m = out.metrics
    assert m["simulated"] is False and m["not_comparable"] == []
    assert m["gpu_room_bytes"] == 640 * MiB
    assert m["steps"] == m["simulator_steps"] and m["agree"] is True
    assert m["value"] == 1 and m["ooms"] == [4]
    assert "they agree" in out.report and out.device.startswith("Fake H200")


def test_a_trace_beyond_the_runner_cap_that_stays_small_is_still_comparable() -> None:
    m = on_fake_gpu(trace([["malloc", "a", 30 * MiB]], ask="reserved_bytes.all.current")).metrics
    assert m["gpu_room_bytes"] == 16 * GiB and m["not_comparable"] == []
    assert m["agree"] is True


def test_a_trace_that_needs_more_than_the_runner_cap_says_it_is_not_comparable() -> None:
    ops = [["malloc", f"t{i}", 3 * GiB] for i in range(8)]
    out = on_fake_gpu(trace(ops, ask="num_ooms"), gpu_cap=16 * GiB)
    m = out.metrics
    assert m["not_comparable"] == ["cap"]
    assert (m["simulator_value"], m["value"]) == (0, 3)  # 24 GiB fit 80, not 16
    assert "the figures need not match" in out.report


def test_garbage_collection_without_a_cap_in_the_trace_is_not_comparable() -> None:
    m = on_fake_gpu(trace([["malloc", "a", MiB]], conf="garbage_collection_threshold:0.5")).metrics
    assert m["not_comparable"] == ["gc"]


def test_a_trace_larger_than_the_gpu_is_refused() -> None:
    with pytest.raises(DemoRequestError, match="more than this GPU's"):
        on_fake_gpu(trace([["malloc", "a", MiB]], total_memory=200 * GiB))
