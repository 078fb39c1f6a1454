"""The clinic's analysis on snapshots whose answer is known (in process, no runner)."""

from __future__ import annotations

import dataclasses
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure

from bot.domain import Locale
from gpu_runner.clinic._candidates import max_split_values, same_as_without_gc, single_candidates
from gpu_runner.clinic._input import DEFAULT_GPU_MEMORY, GpuSource, Loaded, read_snapshot
from gpu_runner.clinic._program import compile_trace
from gpu_runner.clinic._replay import replay_program
from gpu_runner.clinic._text import MAX_TEXT
from gpu_runner.clinic.analysis import ClinicOutput, analyse
from gpu_runner.sim import GiB, MiB, parse_conf, replay_events
from tests.clinic import snapshots
from tests.greek_checks import (
    check_greek_is_greek,
    greek_misses,
    greek_numbers_in_plot,
    texts,
)
from tests.sim.trace_factory import RecordingDevice

CAP = 100 * MiB


def load(tmp_path: Path, snapshot: dict[str, Any], gpu_memory: int | None = None) -> Loaded:
    path = snapshots.write(tmp_path / "train.pickle", snapshot)
    return read_snapshot(path, "train.pickle", CAP, gpu_memory)


def run(loaded: Loaded, locale: Locale = Locale.EN, workers: int = 1) -> ClinicOutput:
    return analyse(loaded, "train.pickle", locale, workers=workers)


def rows(out: ClinicOutput) -> dict[str, dict[str, Any]]:
    return {c["label"]: c for c in out.summary["configs"]}


def test_expandable_segments_remove_the_oom_of_a_fragmenting_batch(tmp_path: Path) -> None:
    loaded = load(tmp_path, snapshots.growing_batch())
    # the device size comes from the recorded OOM: reserved then + what was still free
    assert (loaded.gpu_memory, loaded.gpu_source) == (snapshots.GPU_768, GpuSource.ESTIMATED)
    out = run(loaded, workers=2)
    recorded = rows(out)["recorded"]
    # the failed request is tried again: the replay reproduces the recorded run's OOM
    assert (recorded["ooms"], recorded["alloc_retries"]) == (1, 3)
    assert out.recommendation == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    assert out.summary["finding"] == "recommend"
    assert rows(out)["expandable"]["ooms"] == 0
    assert out.title == "expandable removes the OOM of the recorded settings"
    assert (
        out.summary["saving_bytes"]
        == recorded["peak_reserved"] - rows(out)["expandable"]["peak_reserved"]
    )
    assert out.recommendation in out.text
    assert "CUDA IPC" in out.text and "CUDA graph" in out.text  # its caveats


def test_nothing_helps_when_the_tensors_alone_exceed_the_gpu(tmp_path: Path) -> None:
    out = run(load(tmp_path, snapshots.bigger_than_the_gpu(), gpu_memory=512 * MiB))
    assert out.recommendation is None
    assert out.summary["finding"] == "exceeds_gpu"
    assert out.summary["demand_peak"] == 1000 * MiB
    assert out.title.startswith("Nothing helps: the tensors alone need 1,000 MiB")
    assert "no allocator setting can fit that" in out.text
    assert "PYTORCH_CUDA_ALLOC_CONF=" not in out.text


def test_a_well_packed_trace_has_nothing_to_gain(tmp_path: Path) -> None:
    out = run(load(tmp_path, snapshots.well_packed(), gpu_memory=4 * GiB))
    assert out.recommendation is None
    assert out.summary["finding"] == "little_waste"
    assert "keep the recorded settings" in out.text


def test_the_busiest_device_is_replayed_and_the_member_is_told(tmp_path: Path) -> None:
    out = run(load(tmp_path, snapshots.two_devices()))
    assert (out.summary["device"], out.summary["devices"]) == (1, 2)
    assert "traces for 2 devices: this is device 1, the busiest" in out.text
    assert out.recommendation == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"


def test_gpu_memory_is_as_given_else_assumed_80_gib_without_a_recorded_oom(
    tmp_path: Path,
) -> None:
    assumed = load(tmp_path, snapshots.well_packed())
    assert (assumed.gpu_memory, assumed.gpu_source) == (DEFAULT_GPU_MEMORY, GpuSource.ASSUMED)
    given = load(tmp_path, snapshots.growing_batch(), gpu_memory=2 * GiB)
    assert (given.gpu_memory, given.gpu_source) == (2 * GiB, GpuSource.GIVEN)
    # with room to spare, the default allocator does not run out of memory either
    assert rows(run(given))["recorded"]["ooms"] == 0


def random_trace(seed: int, events: int = 3000) -> dict[str, Any]:
    rng = random.Random(seed)
    dev = RecordingDevice(2 * GiB)
    live: list[int] = []
    for _ in range(events):
        if len(live) > 12 or (live and rng.random() < 0.45):
            dev.free(live.pop(rng.randrange(len(live))))
        else:
            small = rng.random() < 0.5
            live.append(dev.malloc(rng.randint(1, MiB) if small else rng.randint(MiB, 90 * MiB)))
    return dev.dump()


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    "conf",
    ["", "expandable_segments:True", "max_split_size_mb:40", "roundup_power2_divisions:4"],
)
def test_the_compiled_replay_gives_the_simulators_figures(
    tmp_path: Path, seed: int, conf: str
) -> None:
    snapshot = load(tmp_path, random_trace(seed)).snapshot
    events = snapshot.traces[0]
    ours = replay_program(compile_trace(events), parse_conf(conf), 2 * GiB)
    theirs = replay_events(events, total_memory=2 * GiB, conf=conf)
    assert (ours.peak_allocated, ours.peak_reserved) == (
        theirs.peak_allocated,
        theirs.peak_reserved,
    )
    assert ours.unallocated_at_peak == theirs.unallocated_at_peak
    assert ours.fragmentation_at_peak == pytest.approx(theirs.fragmentation_at_peak)
    assert (ours.ooms, ours.alloc_retries) == (theirs.num_ooms, theirs.num_alloc_retries)
    # the timeline's maxima reach the peaks
    assert max(ours.reserved) == ours.peak_reserved
    assert max(ours.allocated) == ours.peak_allocated


def test_max_split_values_come_from_the_large_request_sizes(tmp_path: Path) -> None:
    program = compile_trace(load(tmp_path, random_trace(3)).snapshot.traces[0])
    values = max_split_values(program, minimum_mb=20)
    largest = max(program.large_requests)
    assert values and all(20 <= v < largest for v in values)
    assert all(v in program.large_requests or v == 20 for v in values)
    assert max_split_values(program, minimum_mb=largest) == []


def test_the_gc_candidate_is_derived_only_where_it_cannot_act(tmp_path: Path) -> None:
    for snapshot, gpu in ((snapshots.well_packed(), 4 * GiB), (snapshots.growing_batch(), None)):
        loaded = load(tmp_path, snapshot, gpu)
        program = compile_trace(loaded.snapshot.traces[0])
        gc = single_candidates("", program)[-1]
        assert gc.family == "gc"
        recorded = replay_program(program, parse_conf(""), loaded.gpu_memory)
        replayed = replay_program(program, gc.config, loaded.gpu_memory)
        derived = same_as_without_gc(gc, recorded, program, loaded.gpu_memory)
        assert derived is (gpu is not None)  # far below the cap / near it
        if derived:
            assert replayed == dataclasses.replace(recorded, conf=replayed.conf)


@pytest.mark.parametrize("locale", list(Locale))
@pytest.mark.parametrize(
    ("build", "gpu"),
    [
        (snapshots.growing_batch, None),
        (snapshots.two_devices, None),
        (snapshots.bigger_than_the_gpu, 512 * MiB),
        (snapshots.well_packed, 4 * GiB),
    ],
)
def test_the_message_fits_one_chat_message(
    tmp_path: Path, locale: Locale, build: Any, gpu: int | None
) -> None:
    out = run(load(tmp_path, build(), gpu), locale)
    assert len(out.text) <= MAX_TEXT  # a Slack section; a Discord embed takes 4096
    assert out.table in out.text


@pytest.mark.parametrize("locale", list(Locale))
def test_the_title_line_is_the_messages_title_alone_not_repeated_in_the_body(
    tmp_path: Path, locale: Locale
) -> None:
    out = run(load(tmp_path, snapshots.growing_batch()), locale)
    assert out.title and out.title not in out.text  # the chat shows the title above the body
    assert out.text.splitlines()[0].startswith(("Replayed ", "Αναπαράχθηκαν "))


@pytest.mark.parametrize(
    ("build", "gpu"),
    [
        (snapshots.growing_batch, None),
        (snapshots.two_devices, None),
        (snapshots.bigger_than_the_gpu, 512 * MiB),
        (snapshots.bigger_than_the_gpu, None),
        (snapshots.well_packed, 4 * GiB),
    ],
)
def test_the_greek_report_and_chart_carry_no_english(
    tmp_path: Path, build: Any, gpu: int | None
) -> None:
    loaded = load(tmp_path, build(), gpu)
    drawn: list[Figure] = []
    save = Figure.savefig

    def keep(fig: Figure, *args: Any, **kwargs: Any) -> None:
        drawn.append(fig)
        save(fig, *args, **kwargs)

    outs: list[ClinicOutput] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", keep)
        missed = greek_misses(lambda: outs.append(run(loaded, Locale.EL)))
    assert missed == []  # every string the report and chart looked up is translated
    (out,) = outs
    words = [t.get_text() for t in texts(drawn[0])]
    check_greek_is_greek(f"{out.title}\n{out.text}", words)
    greek_numbers_in_plot("clinic", words)


def test_greek_follows_the_glossary_and_greek_number_format(tmp_path: Path) -> None:
    out = run(load(tmp_path, snapshots.growing_batch()), Locale.EL)
    assert "δεσμευμένη (reserved)" in out.text and "κατανεμημένη (allocated)" in out.text
    assert (
        out.title
        == "Το expandable εξαλείφει την εξάντληση μνήμης (OOM) των καταγεγραμμένων ρυθμίσεων"
    )
    assert "0,74" in out.table  # decimal comma
    assert out.recommendation == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"


def png_chunks(png: bytes) -> dict[bytes, bytes]:
    chunks, pos = {}, 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        chunks[kind] = png[pos + 8 : pos + 8 + length]
        assert (
            zlib.crc32(kind + chunks[kind])
            == struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])[0]
        )
        pos += 12 + length
    return chunks


@pytest.mark.slow
def test_the_png_is_byte_stable_at_160_dpi(tmp_path: Path) -> None:
    loaded = load(tmp_path, snapshots.growing_batch())
    first, second = run(loaded), run(loaded)
    assert first.png == second.png
    chunks = png_chunks(first.png)
    width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
    assert (width, height) == (9 * 160, round(4.8 * 160))
    assert struct.unpack(">II", chunks[b"pHYs"][:8]) == (6299, 6299)  # 160 dpi in px/m
    assert b"tEXt" not in chunks or b"Software" not in chunks[b"tEXt"]
