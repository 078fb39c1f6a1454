"""The shipped bank's content: size, spread, and the computed answers recomputed.

Prompt near-duplicates, locale completeness per question and the seed key are checked in
test_packaged_bank.py; this file checks the bank as a whole and every `inputs:` formula.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from bot.bank import QuestionBank
from bot.domain import Locale, Question
from questions import load_bank
from tests.questions.formulas_training_systems import TRAINING_SYSTEMS_FORMULAS
from tests.questions.formulas_v2_b import FORMULAS_V2_B
from tests.questions.formulas_v3 import FORMULAS_V3

from .allocator_trace import replay

MIN_QUESTIONS = 48
MIN_TOPICS = 8
MIN_PER_TOPIC = 3
DIFFICULTIES = {1, 2, 3}
MIN_COMPUTED = 6

NEW_DEMOS = {"adam-memory-breakdown", "pinned-vs-pageable", "view-keeps-storage", "cuda-graph-pool"}

KIB = 1024
MIB = 1024**2
GIB = 1024**3
UNITS = {"KiB": KIB, "MiB": MIB, "GiB": GIB, "GB": 10**9}


@pytest.fixture(scope="module")
def bank() -> QuestionBank:
    return load_bank()


# --- formulas -------------------------------------------------------------------------------
# Caching allocator constants: c10/cuda/CUDACachingAllocator.cpp, allocator-spec.md 1.1.
MIN_BLOCK = 512
SMALL_SIZE = 1 * MIB  # requests up to this go to the small pool
SMALL_BUFFER = 2 * MIB  # small-pool segment
LARGE_BUFFER = 20 * MIB  # segment for 1 MiB < size < 10 MiB
MIN_LARGE_ALLOC = 10 * MIB
ROUND_LARGE = 2 * MIB


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def round_size(size: int, divisions: int = 0) -> int:
    """The allocator's block size for a request (`round_size`, spec section 1.2)."""
    if size < MIN_BLOCK:
        return MIN_BLOCK
    if divisions > 1 and size > MIN_BLOCK * divisions:
        if size & (size - 1) == 0:
            return size
        floor = 1 << (size.bit_length() - 1)
        step = floor >> int(math.log2(divisions))
        if step == 0:
            return 2 * floor
        rounded = size & ~(step - 1)
        return size if rounded == size else rounded + step
    return _round_up(size, MIN_BLOCK)


def segment_size(block: int) -> int:
    """The cudaMalloc size for a new segment (`get_allocation_size`, spec section 1.4)."""
    if block <= SMALL_SIZE:
        return SMALL_BUFFER
    if block < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return _round_up(block, ROUND_LARGE)


def fresh_allocation(request: int, divisions: int = 0) -> tuple[int, int]:
    """(allocated, reserved) bytes after one request in an empty allocator.

    The block is split only if the remainder is >= 512 B (small pool) or > 1 MiB (large
    pool, no expandable segments, spec section 1.6); otherwise the whole segment is the
    tensor's block and counts as allocated.
    """
    block = round_size(request, divisions)
    segment = segment_size(block)
    remaining = segment - block
    split = remaining >= MIN_BLOCK if block <= SMALL_SIZE else remaining > SMALL_SIZE
    return (block if split else segment), segment


def _fmt(value: float, inputs: Mapping[str, Any]) -> str:
    unit = inputs["unit"]
    return f"{value / UNITS[unit]:.{inputs['decimals']}f} {unit}"


def kv_cache_bytes(i: Mapping[str, Any]) -> str:
    value = (
        2
        * i["layers"]
        * i["kv_heads"]
        * i["head_dim"]
        * i["dtype_bytes"]
        * i["tokens"]
        * i["batch"]
    )
    return _fmt(value, i)


def paged_blocks(i: Mapping[str, Any]) -> str:
    blocks = math.ceil(i["tokens"] / i["block_size"])
    unused = blocks * i["block_size"] - i["tokens"]
    return f"{blocks} blocks, {unused} unused slots"


def training_state_bytes(i: Mapping[str, Any]) -> str:
    value = i["params"] * (i["weight_bytes"] + i["grad_bytes"] + i["optimizer_bytes"])
    return _fmt(value, i)


def zero_per_gpu_bytes(i: Mapping[str, Any]) -> str:
    """Model-state bytes per GPU for ZeRO stage 0-3 (arXiv 1910.02054, section 5)."""
    psi, n, k = i["params"], i["gpus"], i["k"]
    value = {
        0: (2 + 2 + k) * psi,
        1: 2 * psi + 2 * psi + k * psi / n,
        2: 2 * psi + (2 + k) * psi / n,
        3: (2 + 2 + k) * psi / n,
    }[i["stage"]]
    return _fmt(value, i)


def weight_bytes(i: Mapping[str, Any]) -> str:
    return _fmt(i["params"] * i["bits"] / 8, i)


def group_quant_bytes(i: Mapping[str, Any]) -> str:
    bits_per_weight = i["bits"] + i["scale_bits"] / i["group_size"]
    return _fmt(i["params"] * bits_per_weight / 8, i)


def allocator_segment_bytes(i: Mapping[str, Any]) -> str:
    _, reserved = fresh_allocation(i["request_bytes"])
    return _fmt(reserved, i)


def allocator_fresh_request(i: Mapping[str, Any]) -> str:
    allocated, reserved = fresh_allocation(i["request_bytes"])
    return f"allocated {_fmt(allocated, i)}, reserved {_fmt(reserved, i)}"


def roundup_power2_bytes(i: Mapping[str, Any]) -> str:
    return _fmt(round_size(i["request_bytes"], i["divisions"]), i)


def non_allocator_bytes(i: Mapping[str, Any]) -> str:
    gib = i["total_gib"] - i["free_gib"] - i["reserved_gib"]
    return _fmt(gib * GIB, i)


def allocator_trace(i: Mapping[str, Any]) -> str:
    """A trace replayed on the simulator: bytes in `unit`, or a count of cudaMalloc calls."""
    value = replay(i)
    if i["report"] == "cudamalloc-calls":
        return f"{value} cudaMalloc call{'' if value == 1 else 's'}"
    return _fmt(value, i)


FORMULAS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "kv-cache-bytes": kv_cache_bytes,
    "paged-blocks": paged_blocks,
    "training-state-bytes": training_state_bytes,
    "zero-per-gpu-bytes": zero_per_gpu_bytes,
    "weight-bytes": weight_bytes,
    "group-quant-bytes": group_quant_bytes,
    "allocator-segment-bytes": allocator_segment_bytes,
    "allocator-fresh-request": allocator_fresh_request,
    "roundup-power2-bytes": roundup_power2_bytes,
    "non-allocator-bytes": non_allocator_bytes,
    **TRAINING_SYSTEMS_FORMULAS,
    **FORMULAS_V2_B,
    **FORMULAS_V3,
    "allocator-steps": allocator_trace,
}


def expected_answer(inputs: Mapping[str, Any]) -> str:
    kind = inputs.get("kind")
    if kind not in FORMULAS:
        raise AssertionError(f"unknown inputs kind {kind!r}; add its formula to FORMULAS")
    return FORMULAS[kind](inputs)


def _mentions(choice: str, value: str) -> bool:
    # "16.6 GB" must not match inside "116.6 GB" or "1.16.6 GB".
    return re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])", choice) is not None


# --- the formulas themselves, against numbers from the sources ------------------------------


def test_formulas_reproduce_published_numbers() -> None:
    gb = {"unit": "GB", "decimals": 1}
    # ZeRO paper, Figure 1: 7.5B params, Nd = 64, K = 12.
    zero = {"params": 7_500_000_000, "gpus": 64, "k": 12, **gb}
    assert [zero_per_gpu_bytes({**zero, "stage": s}) for s in range(4)] == [
        "120.0 GB",
        "31.4 GB",
        "16.6 GB",
        "1.9 GB",
    ]
    # PagedAttention paper: OPT-13B needs 800 KB of KV cache per token.
    opt = {"layers": 40, "kv_heads": 40, "head_dim": 128, "dtype_bytes": 2, "tokens": 1}
    assert kv_cache_bytes({**opt, "batch": 1, "unit": "KiB", "decimals": 0}) == "800 KiB"
    # QLoRA: block size 64 with fp32 constants costs 32/64 = 0.5 bits per parameter.
    assert (
        group_quant_bytes(
            {
                "params": 8,
                "bits": 0,
                "group_size": 64,
                "scale_bits": 32,
                "unit": "GB",
                "decimals": 9,
            }
        )
        == f"{0.5 / 1e9:.9f} GB"
    )


def test_allocator_rules_reproduce_the_spec_examples() -> None:
    # shared/docs/allocator-spec.md 1.4 and demo Q8's table.
    assert fresh_allocation(1) == (512, 2 * MIB)
    assert fresh_allocation(1000) == (1024, 2 * MIB)
    assert fresh_allocation(MIB + 1) == (MIB + 512, 20 * MIB)
    assert fresh_allocation(5 * MIB) == (5 * MIB, 20 * MIB)
    assert fresh_allocation(10 * MIB) == (10 * MIB, 10 * MIB)
    assert fresh_allocation(100 * MIB + 1) == (100 * MIB + 512, 102 * MIB)
    # roundup_power2_divisions: the docs' 1200 -> 1280 example holds for sizes > 512 * d.
    assert round_size(1200 * MIB, 4) == 1280 * MIB
    assert round_size(1200, 4) == 1536  # 1200 <= 512 * 4: plain 512-byte rounding
    assert round_size(514 * MIB, 2) == 768 * MIB  # issue #161139's example


def test_unknown_inputs_kind_fails() -> None:
    with pytest.raises(AssertionError, match="unknown inputs kind"):
        expected_answer({"kind": "no-such-formula"})
    with pytest.raises(AssertionError, match="unknown inputs kind"):
        expected_answer({"layers": 32})


# --- the bank -------------------------------------------------------------------------------


def _computed(bank: QuestionBank) -> list[Question]:
    return [q for q in bank if q.inputs]


def test_bank_size_topics_and_difficulties(bank: QuestionBank) -> None:
    assert len(bank) >= MIN_QUESTIONS
    assert len(bank.topics()) >= MIN_TOPICS
    assert {q.difficulty for q in bank} == DIFFICULTIES


def test_every_difficulty_is_well_represented(bank: QuestionBank) -> None:
    counts = Counter(q.difficulty for q in bank)
    assert min(counts.values()) >= len(bank) // 4, counts


def test_every_topic_has_enough_questions(bank: QuestionBank) -> None:
    counts = Counter(q.topic for q in bank)
    thin = {topic: n for topic, n in counts.items() if n < MIN_PER_TOPIC}
    assert thin == {}


def test_both_locales_are_complete(bank: QuestionBank) -> None:
    for q in bank:
        en, el = q.texts[Locale.EN], q.texts[Locale.EL]
        assert len(en.choices) == len(el.choices) == 4, q.id
        assert 0 <= q.answer < len(en.choices), q.id
        assert all(text.strip() for text in (el.prompt, el.explanation, *el.choices)), q.id


def test_answer_positions_vary(bank: QuestionBank) -> None:
    positions = Counter(q.answer for q in bank)
    assert set(positions) == {0, 1, 2, 3}, positions
    for topic in bank.topics():
        answers = {q.answer for q in bank if q.topic == topic}
        assert len(answers) > 1, f"every {topic} question has answer {answers}"


def test_enough_questions_are_computed(bank: QuestionBank) -> None:
    assert len(_computed(bank)) >= MIN_COMPUTED


def test_computed_answers_match_their_inputs(bank: QuestionBank) -> None:
    for q in _computed(bank):
        value = expected_answer(q.inputs)
        choices = q.texts[Locale.EN].choices
        assert _mentions(choices[q.answer], value), (q.id, value, choices[q.answer])
        wrong = [c for i, c in enumerate(choices) if i != q.answer and _mentions(c, value)]
        assert wrong == [], (q.id, value, wrong)


def test_each_new_demo_is_linked_at_least_twice(bank: QuestionBank) -> None:
    linked = Counter(q.demo for q in bank if q.demo)
    assert {demo: linked[demo] for demo in NEW_DEMOS if linked[demo] < 2} == {}
