"""The questions on attention, parallelism, library workspaces, DDP, allocator back ends,
torch.compile and activation offloading: their formulas against the sources and their Greek
numbers (the area's shared checks: test_bank_areas.py).

test_bank_content.py recomputes every computed answer with the formulas tested here.
"""

from __future__ import annotations

import pytest

from bot.bank import QuestionBank
from bot.domain import Locale, Question
from questions import load_bank
from tests.questions.formulas_training_systems import (
    UNIT_BYTES,
    attention_scores_bytes,
    cublas_workspace_size,
    megatron_layer_activation,
    micro_batches_in_flight,
)
from tests.questions.test_bank_areas import AREAS

MIB = UNIT_BYTES["MiB"]


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    bank: QuestionBank = load_bank()
    return [q for q in bank if q.topic in AREAS["training-systems"].min_per_topic]


# --- the formulas against their sources -----------------------------------------------------


def test_megatron_formula_matches_the_papers_table() -> None:
    # Korthikanti et al. 2022, Table 2, for GPT-3 175B sizes (s=2048, h=12288, a=96, t=8).
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    core = 5 * a * s / h
    assert megatron_layer_activation(s, b, h, a) == sbh * (34 + core)
    assert megatron_layer_activation(s, b, h, a, t) == sbh * (10 + 24 / t + core / t)
    assert megatron_layer_activation(s, b, h, a, t, sequence_parallel=True) == pytest.approx(
        sbh * (34 / t + core / t)
    )
    assert megatron_layer_activation(
        s, b, h, a, t, sequence_parallel=True, selective_recompute=True
    ) == pytest.approx(sbh * 34 / t)
    # Sequence parallelism changes nothing without tensor parallelism.
    assert megatron_layer_activation(s, b, h, a, 1, sequence_parallel=True) == (
        megatron_layer_activation(s, b, h, a)
    )


def test_pipeline_schedules_hold_the_published_number_of_micro_batches() -> None:
    # Narayanan et al. 2021: GPipe stashes all m micro-batches, 1F1B at most p on stage 1.
    assert micro_batches_in_flight("gpipe", stages=8, microbatches=32, stage=1) == 32
    assert micro_batches_in_flight("1f1b", stages=8, microbatches=32, stage=1) == 8
    assert micro_batches_in_flight("1f1b", stages=8, microbatches=32, stage=8) == 1
    assert micro_batches_in_flight("1f1b", stages=8, microbatches=4, stage=1) == 4
    with pytest.raises(AssertionError, match="unknown pipeline schedule"):
        micro_batches_in_flight("interleaved", stages=8, microbatches=32, stage=1)


def test_cublas_workspace_size_follows_pytorchs_cuda_notes() -> None:
    # ":4096:2:16:8" is 2 * 4096 + 8 * 16 KiB: the 8,519,680-byte block memory snapshots show.
    assert cublas_workspace_size(":4096:2:16:8") == 8_519_680
    assert cublas_workspace_size(":4096:8") == 32 * MIB
    assert cublas_workspace_size(":0:0") == 0
    with pytest.raises(AssertionError, match="no :SIZE:COUNT pair"):
        cublas_workspace_size("4096")


def test_attention_scores_grow_with_the_square_of_the_sequence() -> None:
    base = {"batch": 1, "heads": 1, "dtype_bytes": 2, "unit": "MiB", "decimals": 0}
    assert attention_scores_bytes({**base, "seq": 1024}) == "2 MiB"
    assert attention_scores_bytes({**base, "seq": 2048}) == "8 MiB"


# --- the questions --------------------------------------------------------------------------


def test_greek_numeric_answers_match_the_english_ones(questions: list[Question]) -> None:
    # Numbers are the same in both locales, written with a decimal comma in Greek.
    for q in questions:
        if q.inputs:
            en, el = q.texts[Locale.EN].choices, q.texts[Locale.EL].choices
            assert [c.replace(".", ",") for c in en] == list(el), q.id
