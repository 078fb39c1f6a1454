"""Bank v2 questions on optimizer memory, model loading, leaks, KV serving, profiling, MIG/MPS.

Their computed answers are recomputed in test_bank_content.py (the formulas live in
formulas_v2_b.py); this file checks those formulas against the numbers their sources publish,
and that these topics keep their minimum size and an answer form that gives nothing away.
"""

from __future__ import annotations

from collections import Counter

import pytest

from bot.bank import QuestionBank
from bot.domain import Locale, Question
from questions import load_bank
from tests.questions.formulas_v2_b import (
    FORMULAS_V2_B,
    load_peak_bytes,
    mig_max_instances,
    mla_kv_bytes,
    optimizer_state_bytes,
    optimizer_step_peak_bytes,
    prefix_cached_blocks,
)

# topic -> minimum number of questions (shared/briefs: areas 8-13 of bank-review.md).
MIN_PER_TOPIC = {
    "optimizer-memory": 4,
    "model-loading": 4,
    "memory-leaks": 4,
    "kv-cache-serving": 4,
    "memory-profiling": 2,
    "gpu-partitioning": 2,
}
MAX_LONGEST_SHARE = 0.25
POSITION_SHARE = (0.15, 0.35)
GB = {"unit": "GB", "decimals": 1}


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    bank: QuestionBank = load_bank()
    return [q for q in bank if q.topic in MIN_PER_TOPIC]


def test_step_peak_reproduces_the_optimizer_in_backward_tutorial() -> None:
    # ViT-L: ~1.2 GB of fp32 parameters; Adam with foreach peaks at ~6 GB in step().
    vit_l = {"params": 300_000_000, "param_bytes": 4, "grad_bytes": 4, "states": 2}
    peak = optimizer_step_peak_bytes({**vit_l, "state_bytes": 4, "temp_copies": 1, **GB})
    assert peak == "6.0 GB"
    # foreach=False: the temporaries shrink to one parameter's worth (~0 at this scale).
    no_foreach = optimizer_step_peak_bytes({**vit_l, "state_bytes": 4, "temp_copies": 0, **GB})
    assert no_foreach == "4.8 GB"


def test_eight_bit_states_save_the_advertised_75_percent() -> None:
    fp32 = optimizer_state_bytes({"params": 10**9, "states": 2, "state_bytes": 4, **GB})
    int8 = optimizer_state_bytes({"params": 10**9, "states": 2, "state_bytes": 1, **GB})
    assert (fp32, int8) == ("8.0 GB", "2.0 GB")


def test_plain_load_holds_twice_the_weights() -> None:
    # The loading tutorial: the built model and the loaded state dict coexist.
    one = load_peak_bytes({"params": 10**9, "dtype_bytes": 2, "copies": 1, **GB})
    two = load_peak_bytes({"params": 10**9, "dtype_bytes": 2, "copies": 2, **GB})
    assert (one, two) == ("2.0 GB", "4.0 GB")


def test_mla_cache_matches_deepseek_v2_gqa_equivalence() -> None:
    # DeepSeek-V2, Table 1: MLA caches (d_c + d_h^R) = 4.5 d_h elements per token and layer,
    # like GQA with 2.25 groups (2 x 2.25 x d_h); with d_h = 128 that is 576 elements.
    per_layer = mla_kv_bytes(
        {"layers": 1, "kv_lora_rank": 512, "rope_dim": 64, "dtype_bytes": 1, "tokens": 1}
        | {"unit": "KiB", "decimals": 3}
    )
    assert per_layer == f"{2 * 2.25 * 128 / 1024:.3f} KiB"


def test_prefix_blocks_reproduce_the_vllm_design_example() -> None:
    # docs/design/prefix_caching.md: block size 4, 10 shared prompt tokens -> 2 blocks (8 tokens).
    assert prefix_cached_blocks({"shared_tokens": 10, "block_size": 4}) == "2 blocks (8 tokens)"
    assert prefix_cached_blocks({"shared_tokens": 3, "block_size": 4}) == "0 blocks (0 tokens)"


def test_mig_profiles_are_bounded_by_compute_and_memory_slices() -> None:
    a100 = {"compute_slices": 7, "memory_slices": 8}
    # MIG user guide, A100: 1g.10gb x7, 2g.20gb x3, 3g.40gb (3 compute, 4 memory slices) x2.
    profiles = [(1, 1, "7"), (2, 2, "3"), (3, 4, "2"), (7, 8, "1")]
    for compute, memory, count in profiles:
        inputs = {**a100, "profile_compute_slices": compute, "profile_memory_slices": memory}
        assert mig_max_instances(inputs) == count, (compute, memory)


def test_each_v2_b_formula_is_used_by_a_question(questions: list[Question]) -> None:
    kinds = Counter(q.inputs.get("kind") for q in questions if q.inputs)
    assert set(FORMULAS_V2_B) <= set(kinds), kinds


def test_topics_keep_their_minimum_size(questions: list[Question]) -> None:
    counts = Counter(q.topic for q in questions)
    assert {t: counts[t] for t, n in MIN_PER_TOPIC.items() if counts[t] < n} == {}


@pytest.mark.parametrize("locale", list(Locale))
def test_correct_choice_is_rarely_the_uniquely_longest(
    questions: list[Question], locale: Locale
) -> None:
    def uniquely_longest(q: Question) -> bool:
        lengths = [len(c) for c in q.texts[locale].choices]
        return all(lengths[q.answer] > n for i, n in enumerate(lengths) if i != q.answer)

    longest = [q.id for q in questions if uniquely_longest(q)]
    assert len(longest) <= MAX_LONGEST_SHARE * len(questions), longest


def test_answer_positions_are_spread(questions: list[Question]) -> None:
    positions = Counter(q.answer for q in questions)
    low, high = POSITION_SHARE
    shares = {p: positions[p] / len(questions) for p in range(4)}
    assert all(low <= s <= high for s in shares.values()), shares
