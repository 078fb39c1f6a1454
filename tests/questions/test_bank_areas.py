"""What each area of the bank (topics written together, with the formulas of their computed
answers) keeps: every formula used by a question, each topic's minimum size, and an answer
form that gives nothing away (the correct choice is rarely the uniquely longest; correct
answers are spread over the four positions)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from bot.bank import QuestionBank
from bot.domain import Locale, Question
from questions import load_bank
from tests.questions.formulas_training_systems import TRAINING_SYSTEMS_FORMULAS
from tests.questions.formulas_v2_b import FORMULAS_V2_B
from tests.questions.formulas_v3 import FORMULAS_V3

MAX_LONGEST_SHARE = 0.25
POSITION_SHARE = (0.15, 0.35)


@dataclass(frozen=True)
class Area:
    min_per_topic: Mapping[str, int]  # topic -> minimum number of questions
    formulas: Mapping[str, object]
    formulas_only: bool = False  # its computed questions use no other area's formulas


AREAS = {
    # bank v2 plan, areas 1-7 of bank-review.md (attention, parallelism, library workspaces,
    # DDP, allocator back ends, torch.compile, activation offloading)
    "training-systems": Area(
        {
            "attention-memory": 4,
            "model-parallelism": 4,
            "library-workspaces": 2,
            "ddp-nccl": 2,
            "allocator-backends": 4,
            "torch-compile": 4,
            "activation-offloading": 2,
        },
        TRAINING_SYSTEMS_FORMULAS,
        formulas_only=True,
    ),
    # shared/briefs: areas 8-13 of bank-review.md (optimizer memory, model loading, leaks,
    # KV serving, profiling, MIG/MPS)
    "v2-b": Area(
        {
            "optimizer-memory": 4,
            "model-loading": 4,
            "memory-leaks": 4,
            "kv-cache-serving": 4,
            "memory-profiling": 2,
            "gpu-partitioning": 2,
        },
        FORMULAS_V2_B,
    ),
    # issue 28, "Content v3"
    "v3": Area(
        {
            "lm-head-memory": 5,
            "autocast-memory": 4,
            "moe-memory": 5,
            "context-parallelism": 4,
            "cuda-ipc": 4,
            "fsdp2": 5,
            "fp8-training": 5,
            "chunked-prefill": 4,
        },
        FORMULAS_V3,
    ),
}


@pytest.fixture(scope="module")
def bank() -> QuestionBank:
    return load_bank()


@pytest.fixture(params=sorted(AREAS))
def area(request: pytest.FixtureRequest) -> Area:
    return AREAS[request.param]


@pytest.fixture
def questions(bank: QuestionBank, area: Area) -> list[Question]:
    return [q for q in bank if q.topic in area.min_per_topic]


def test_each_formula_is_used_by_a_question(questions: list[Question], area: Area) -> None:
    kinds = Counter(q.inputs.get("kind") for q in questions if q.inputs)
    assert set(area.formulas) <= set(kinds), kinds
    if area.formulas_only:
        assert set(kinds) <= set(area.formulas), kinds


def test_topics_keep_their_minimum_size(questions: list[Question], area: Area) -> None:
    counts = Counter(q.topic for q in questions)
    assert {t: counts[t] for t, n in area.min_per_topic.items() if counts[t] < n} == {}


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
