"""Bank v3 questions: LM head, autocast, MoE, context parallelism, CUDA IPC, FSDP2, fp8 training,
chunked prefill.

Their computed answers are recomputed in test_bank_content.py (the formulas live in
formulas_v3.py); this file checks those formulas against the numbers their sources publish, and
that these topics keep their Greek numbers (the area's shared checks: test_bank_areas.py).
"""

from __future__ import annotations

import pytest

from bot.bank import QuestionBank
from bot.domain import Locale, Question
from questions import load_bank
from tests.questions.formulas_v3 import (
    autocast_weight_bytes,
    cp_gathered_kv_bytes,
    flce_chunk,
    fsdp2_unsharded_bytes,
    head_tail_chunks,
    logits_bytes,
    moe_capacity,
    moe_dispatch_bytes,
    mx_quantized_bytes,
    prefill_chunk,
    step_activation_bytes,
)
from tests.questions.test_bank_areas import AREAS

GB = {"unit": "GB", "decimals": 1}


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    bank: QuestionBank = load_bank()
    return [q for q in bank if q.topic in AREAS["v3"].min_per_topic]


# --- the formulas against their sources -----------------------------------------------------


def test_logits_bytes_count_one_value_per_token_and_vocabulary_entry() -> None:
    # Llama 3 8B: V = 128,256 (config.json); 8,192 tokens in fp32 are 4,202,692,608 bytes.
    llama3 = {"tokens": 8192, "vocab": 128256, "dtype_bytes": 4, "unit": "KiB", "decimals": 0}
    assert logits_bytes(llama3) == f"{4_202_692_608 // 1024} KiB"
    assert logits_bytes({**llama3, "dtype_bytes": 2, "unit": "GiB", "decimals": 1}) == "2.0 GiB"


def test_fused_cross_entropy_chunk_follows_the_source_comment() -> None:
    # "BT = 4096*4, V = 32000, H = 4096 ==> inc_factor = 8, chunk_size = 2048"
    assert flce_chunk(tokens=4096 * 4, hidden=4096, vocab=32000) == 2048
    # A power of two, never more than the tokens there are, and smaller with a bigger budget.
    assert flce_chunk(tokens=16384, hidden=4096, vocab=128256) == 512
    assert flce_chunk(tokens=300, hidden=4096, vocab=32000) == 64
    assert flce_chunk(tokens=16, hidden=4096, vocab=4096) == 16
    assert flce_chunk(tokens=16384, hidden=4096, vocab=128256, chunk_mem_const=4) == 2048


def test_autocast_weight_bytes_add_the_cached_casts() -> None:
    casts = {"params": 10**9, "weight_bytes": 4, **GB}
    assert autocast_weight_bytes({**casts, "cast_bytes": 2}) == "6.0 GB"
    assert autocast_weight_bytes({**casts, "cast_bytes": 0}) == "4.0 GB"


def test_moe_capacity_follows_megatron_and_switch() -> None:
    # Switch Transformer: capacity = tokens per batch / experts * capacity factor (top-1).
    assert moe_capacity(tokens=1024, topk=1, experts=8, capacity_factor=1.0) == 128
    # Megatron-Core counts every top-k assignment and rounds up.
    assert moe_capacity(tokens=8192, topk=2, experts=16, capacity_factor=1.25) == 1280
    assert moe_capacity(tokens=10, topk=2, experts=3, capacity_factor=1.0) == 7


def test_dispatch_buffer_has_one_row_per_token_and_selected_expert() -> None:
    one = {"tokens": 8192, "hidden": 7168, "dtype_bytes": 2, "unit": "MiB", "decimals": 0}
    assert moe_dispatch_bytes({**one, "topk": 1}) == "112 MiB"
    assert moe_dispatch_bytes({**one, "topk": 8}) == "896 MiB"


def test_head_tail_chunks_pair_a_head_chunk_with_its_mirror_tail() -> None:
    # The _load_balancer.py docstring: 8 tokens on 2 ranks -> rank 0 (0, 7), rank 1 (1, 6)...
    assert head_tail_chunks(seq=8, cp=2, rank=0) == [(0, 1), (6, 7)]
    assert head_tail_chunks(seq=8, cp=2, rank=1) == [(2, 3), (4, 5)]
    # Every position is held by exactly one rank.
    held = sorted(
        p for r in range(4) for a, b in head_tail_chunks(64, 4, r) for p in range(a, b + 1)
    )
    assert held == list(range(64))


def test_gathered_kv_is_the_whole_sequence_whatever_the_cp_degree() -> None:
    layer = {"seq": 131072, "batch": 1, "kv_heads": 8, "head_dim": 128, "dtype_bytes": 2}
    mib = {"unit": "MiB", "decimals": 0}
    assert {cp_gathered_kv_bytes({**layer, **mib, "cp": cp}) for cp in (2, 4, 8)} == {"512 MiB"}


def test_fsdp2_unsharded_bytes_scale_with_the_blocks_held() -> None:
    block = {"block_params": 200_000_000, "param_bytes": 2, **GB}
    assert fsdp2_unsharded_bytes({**block, "blocks_held": 1}) == "0.4 GB"
    assert fsdp2_unsharded_bytes({**block, "blocks_held": 32}) == "12.8 GB"


def test_mx_copies_cost_8_25_bits_per_value_each() -> None:
    # OCP Microscaling spec: 32-element blocks with an 8-bit E8M0 scale -> 8.25 bits/element.
    one = {"rows": 1, "cols": 32, "value_bytes": 1, "block": 32, "scale_bytes": 1}
    assert mx_quantized_bytes({**one, "copies": 1, "unit": "KiB", "decimals": 5}) == (
        f"{33 / 1024:.5f} KiB"
    )
    weight = {"rows": 4096, "cols": 4096, "value_bytes": 1, "block": 32, "scale_bytes": 1}
    mib = {"unit": "MiB", "decimals": 1}
    assert mx_quantized_bytes({**weight, **mib, "copies": 2}) == "33.0 MiB"
    assert mx_quantized_bytes({**weight, **mib, "copies": 1}) == "16.5 MiB"


def test_a_prefill_chunk_gets_what_the_running_requests_leave() -> None:
    assert prefill_chunk(budget=2048, decodes=0, prompt=8192) == 2048
    assert prefill_chunk(budget=2048, decodes=64, prompt=8192) == 1984
    assert prefill_chunk(budget=2048, decodes=64, prompt=100) == 100
    assert prefill_chunk(budget=64, decodes=64, prompt=100) == 0


def test_step_activation_bytes_scale_with_the_step_tokens() -> None:
    mlp = {"width": 2 * 14336, "dtype_bytes": 2, "unit": "MiB", "decimals": 0}
    assert step_activation_bytes({**mlp, "tokens": 8192}) == "448 MiB"
    assert step_activation_bytes({**mlp, "tokens": 131072}) == "7168 MiB"


# --- the questions --------------------------------------------------------------------------


def test_greek_numbers_are_the_english_ones_with_a_decimal_comma(
    questions: list[Question],
) -> None:
    # A computed question's choices lead with the number; Greek writes 3,9 for 3.9.
    for q in questions:
        if q.inputs:
            en, el = q.texts[Locale.EN].choices, q.texts[Locale.EL].choices
            assert [c.split()[0].replace(".", ",") for c in en] == [c.split()[0] for c in el], q.id
