"""The form of a generated question gives nothing away, and its scenario is a real one.

Every family is measured on `SAMPLE` questions: the answer's rank among the four values is
uniform and no form-only rule (`questions.families.guessers`) finds the answer in more than
35 % of them, each within a one-sided 99 % sampling margin of the sample. `bench/generate.py
--form` measures the same on 1,000 questions per family against the bare limits.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pytest

from bot.domain import Locale
from questions.families import GeneratedQuestion, default_families, generate
from questions.families.guessers import (
    GUESSERS,
    HIT_MAX,
    RANK_SHARE,
    Form,
    allowed_excess,
    hit_rates,
    rank_shares,
)
from questions.families.models import LARGEST_GPU_BYTES

# Statistics of the content: the newest-Python pass leaves them out.
pytestmark = pytest.mark.slow

FAMILIES = default_families()
SAMPLE = 300
SEED = 424242  # not the bench's seeds


@pytest.fixture(scope="module")
def samples() -> dict[str, list[GeneratedQuestion]]:
    return {f.id: [generate(f, SEED, i) for i in range(SAMPLE)] for f in FAMILIES}


@pytest.mark.parametrize("family_id", FAMILIES.ids())
def test_the_answers_rank_among_the_values_is_uniform(
    samples: dict[str, list[GeneratedQuestion]], family_id: str
) -> None:
    low, high = RANK_SHARE
    margin = 2.33 * math.sqrt(0.25 * 0.75 / SAMPLE)
    shares = rank_shares(samples[family_id])
    assert all(low - margin <= s <= high + margin for s in shares), (family_id, shares)


@pytest.mark.parametrize("family_id", FAMILIES.ids())
def test_no_form_only_rule_finds_the_answer(
    samples: dict[str, list[GeneratedQuestion]], family_id: str
) -> None:
    rates = hit_rates(samples[family_id])
    limit = HIT_MAX + allowed_excess(SAMPLE)
    found = {name: round(rate, 3) for name, rate in rates.items() if rate > limit}
    assert found == {}, (family_id, found)


@pytest.mark.parametrize("family_id", FAMILIES.ids())
def test_no_answer_is_a_constant_of_what_the_prompt_shows(
    samples: dict[str, list[GeneratedQuestion]], family_id: str
) -> None:
    """Questions asking the same statistic under the same setting do not share one answer
    (as `segment.all.current` under expandable segments once always was 0)."""
    groups: dict[tuple[str, str], set[float]] = defaultdict(set)
    for g in samples[family_id]:
        inputs = g.inputs
        key = (str(inputs.get("ask", inputs["kind"])), str(inputs.get("conf", "")))
        groups[key].add(g.choice_values[g.question.answer])
    counts = Counter(
        (str(g.inputs.get("ask", g.inputs["kind"])), str(g.inputs.get("conf", "")))
        for g in samples[family_id]
    )
    for key, answers in groups.items():
        if counts[key] >= 10:
            assert len(answers) >= 3, (family_id, key, answers)
    answers = Counter(g.choice_values[g.question.answer] for g in samples[family_id])
    assert answers.most_common(1)[0][1] <= 0.2 * SAMPLE, (family_id, answers.most_common(3))


def test_the_guessers_find_a_planted_tell() -> None:
    """A guesser must be able to fail a family: each catches a question built for it."""
    plain = Form((1.0, 3.0, 7.0, 20.0), (1.0, 3.0, 7.0, 20.0), ("a",) * 4, ("a",) * 4, "", "", 0)

    def bet(name: str, form: Form) -> float:
        return GUESSERS[name](form)[form.answer]

    doubled = Form((5.0, 10.0, 3.0, 7.0), (5.0, 10.0, 3.0, 7.0), ("",) * 4, ("",) * 4, "", "", 0)
    assert bet("double-offered", doubled) == 1.0
    assert bet("smallest", plain) == 1.0 and bet("largest", plain) == 0.0
    longest = Form(
        (1.0, 2.0, 3.0, 4.0), (1.0, 2.0, 3.0, 4.0), ("long one", "a", "b", "c"), ("x",) * 4,
        "", "", 0,
    )  # fmt: skip
    assert bet("longest-en", longest) == 1.0
    in_prompt = Form(
        (5.0, 9.0, 13.0, 20.0), (5.0, 9.0, 13.0, 20.0), ("5 MiB", "9 MiB", "13 MiB", "20 MiB"),
        ("",) * 4, "x = 9 MiB", "", 1,
    )  # fmt: skip
    assert bet("in-prompt", in_prompt) == 1.0
    assert bet("not-in-prompt", in_prompt) == 0.0
    # no rule: a uniform bet
    assert bet("odd-unit-out", plain) == 0.25


# -- realistic scenarios -----------------------------------------------------------------

GB = 10**9
FORMULA_FLOOR = {  # the smallest figure worth a question, per family (bytes; counts: 1)
    "kv-cache-size": 256 * 2**20,
    "training-state-per-gpu": 2**30,
    "activation-checkpointing": 2**29,
    "lm-head-logits": 128 * 2**20,
    "autocast-weight-cache": 2**20,
    "moe-expert-parallel": 1,
    "kv-chunked-prefill": 1,
}


@pytest.mark.parametrize(
    "family_id", [f.id for f in FAMILIES if f.kind == "formula"], ids=lambda f: f
)
def test_formula_figures_fit_a_real_gpu(family_id: str) -> None:
    """Every formula scenario's answer lies between a floor worth asking about and the
    largest GPU of those the families assume (192 GB), over the whole space."""
    family = FAMILIES.require(family_id)
    assert family.space.size <= 6000, family_id  # enumerable: checked whole
    for scenario in range(family.space.size):
        draft = family.build(*family.space.decode(scenario))
        assert FORMULA_FLOOR[family_id] <= draft.answer <= LARGEST_GPU_BYTES, (
            family_id,
            scenario,
            draft.inputs,
        )


def test_formula_models_are_published_ones(samples: dict[str, list[GeneratedQuestion]]) -> None:
    from questions.families.activations import MODELS as GPT
    from questions.families.models import DECODERS
    from questions.families.moe import MODELS as MOES

    names = {d.name for d in DECODERS} | {m[0] for m in GPT} | {m.name for m in MOES}
    for family in FAMILIES:
        if family.kind != "formula":
            continue
        for g in samples[family.id]:
            assert g.inputs["model"] in names, (family.id, g.inputs["model"])
            assert g.inputs["model"] in g.question.text(Locale.EN).prompt, g.id


def test_kv_caches_use_the_dtypes_servers_use(samples: dict[str, list[GeneratedQuestion]]) -> None:
    dtypes = Counter(g.inputs["dtype"] for g in samples["kv-cache-size"])
    assert set(dtypes) <= {"bf16", "fp16", "fp8"}, dtypes


def test_kv_sequences_stay_within_each_models_context(
    samples: dict[str, list[GeneratedQuestion]],
) -> None:
    from questions.families.models import decoder

    for g in samples["kv-cache-size"]:
        assert g.inputs["tokens"] <= decoder(g.inputs["model"]).context, g.id


def test_trace_scenarios_fit_the_simulated_16_gib_device(
    samples: dict[str, list[GeneratedQuestion]],
) -> None:
    for family in FAMILIES:
        if family.kind != "allocator-trace":
            continue
        for g in samples[family.id]:
            peak = max(
                sum(int(op[2]) for op in g.inputs["ops"][: i + 1] if op[0] == "malloc")
                for i in range(len(g.inputs["ops"]))
            )
            assert peak <= g.inputs["total_memory"], g.id
            conf = str(g.inputs["conf"])
            if "max_split_size_mb" in conf:
                value = int(conf.split("max_split_size_mb:")[1].split(",")[0])
                assert value > 20, g.id  # torch 2.5's parser wants > 20, later >= 20
