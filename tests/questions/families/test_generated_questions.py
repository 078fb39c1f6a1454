"""Every family, many seeds: valid bank questions whose answers recompute from `inputs`."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator

import pytest

from bot.bank import question_to_dict
from bot.domain import Locale
from questions.families import (
    GENERATED_KEY,
    MAX_OPS,
    MAX_SIZE,
    SEED_MAX,
    Family,
    GeneratedQuestion,
    default_families,
    generate,
    trace_problems,
)
from questions.loader import validate_question
from questions.schema import KEBAB_PATTERN

from .explained import explanation_in_full
from .recompute import expected_value, in_unit

FAMILIES = default_families()
SEEDS = (*range(40), 2**40 + 3, SEED_MAX)
TRACE_KEYS = {"kind", "total_memory", "conf", "memory_fraction", "ops", "ask"}
# The assembler's safety net, for a scenario whose own misconceptions coincide: two of them
# combined ("a-with-b"). Named misconceptions only: no scaled or filler values exist.
SAFETY_NET = "-with-"
GREEK = re.compile("[α-ωά-ώ]", re.IGNORECASE)


def questions(family: Family) -> Iterator[GeneratedQuestion]:
    for seed in SEEDS:
        yield generate(family, seed, seed % 3)


@pytest.fixture(scope="module", params=FAMILIES.ids())
def generated(request: pytest.FixtureRequest) -> list[GeneratedQuestion]:
    return list(questions(FAMILIES.require(request.param)))


def test_there_are_seventeen_families_ten_of_them_allocator_traces() -> None:
    kinds = Counter(f.kind for f in FAMILIES)
    assert len(FAMILIES) >= 17
    assert kinds["allocator-trace"] >= 10
    assert set(kinds) == {"allocator-trace", "formula"}


def test_every_question_passes_the_bank_validator(generated: list[GeneratedQuestion]) -> None:
    for g in generated:
        assert validate_question(question_to_dict(g.question)) == [], g.id


def test_the_marked_answer_recomputes_from_the_inputs(generated: list[GeneratedQuestion]) -> None:
    for g in generated:
        value = in_unit(expected_value(g.inputs), g.unit)
        marked = g.choice_values[g.question.answer]
        assert math.isclose(marked, value, rel_tol=1e-6), (g.id, marked, value)
        if g.inputs["kind"] == "allocator-trace":
            assert marked == value, g.id  # exact by construction
        wrong = [v for i, v in enumerate(g.choice_values) if i != g.question.answer]
        assert all(not math.isclose(v, value, rel_tol=1e-9) for v in wrong), (g.id, wrong)


def test_four_distinct_choices_in_both_locales(generated: list[GeneratedQuestion]) -> None:
    for g in generated:
        assert len(set(g.choice_values)) == 4, g.id
        for locale in Locale:
            assert len(set(g.question.text(locale).choices)) == 4, (g.id, locale)


def test_the_same_seed_gives_the_same_question(generated: list[GeneratedQuestion]) -> None:
    for g in generated[:10]:
        again = generate(FAMILIES.require(g.family), g.seed, g.index)
        assert again == g
        assert again.question.content_hash == g.question.content_hash


def test_ids_name_the_family_seed_and_index(generated: list[GeneratedQuestion]) -> None:
    for g in generated:
        assert g.id == f"gen-{g.family}-{g.seed}-{g.index}"
        assert re.fullmatch(KEBAB_PATTERN, g.id)


def test_greek_text_is_greek_with_greek_separators(generated: list[GeneratedQuestion]) -> None:
    for g in generated:
        el = g.question.text(Locale.EL)
        assert GREEK.search(el.prompt) and GREEK.search(el.explanation), g.id
        # ";" is the Greek question mark: only the prompt's last character may be one
        assert el.prompt.endswith(";") and ";" not in el.prompt[:-1], (g.id, el.prompt)
        assert ";" not in el.explanation, (g.id, el.explanation)
        for en_choice, el_choice in zip(
            g.question.text(Locale.EN).choices, el.choices, strict=True
        ):
            if re.search(r"\d\.\d", en_choice):  # English decimals are Greek decimal commas
                assert re.search(r"\d,\d", el_choice), (g.id, el_choice)


def test_explanation_is_every_step_then_every_note_in_full(
    generated: list[GeneratedQuestion],
) -> None:
    """Nothing is cut or dropped, in either locale: the steps as written, then one note per
    distractor ("Not <choice>: <why>"), whole (the families keep them short enough)."""
    family = FAMILIES.require(generated[0].family)
    for g in generated:
        draft = family.build(*family.space.decode(g.scenario))
        for locale in Locale:
            full = explanation_in_full(draft, g, locale)
            assert g.question.text(locale).explanation == full, (g.id, locale)


def test_a_trace_explanation_ends_on_the_answer_as_its_choice_shows_it(
    generated: list[GeneratedQuestion],
) -> None:
    """ "So memory_reserved() = 14,548,480 B." where the choices are in bytes, not the same
    figure in another unit (14,207.5 KiB) for the player to convert."""
    if FAMILIES.require(generated[0].family).kind != "allocator-trace":
        return
    for g in generated:
        for locale in Locale:
            text = g.question.text(locale)
            assert f" = {text.choices[g.question.answer]}." in text.explanation, (g.id, locale)


def test_english_sentences_start_with_a_capital_and_take_the_right_article(
    generated: list[GeneratedQuestion],
) -> None:
    """("…× 256,000. one fp32 chunk…" was a step's clause run on as a sentence.) Names of
    tensors and APIs may start a sentence in lower case; English words may not."""
    lower_word = re.compile(r"\. (?:one|the|an|in|bf16|fp32|and|it|its|this|that|so|each)\b")
    # "a 8,833 KiB block": "an" before a number read with a vowel sound (8, 11, 18, 80...)
    a_before_vowel_number = re.compile(r"\ba (?:8|11|18)[\d,.]*\b")
    for g in generated:
        text = g.question.text(Locale.EN)
        for part in (text.prompt, text.explanation, *text.choices):
            assert not lower_word.search(part), (g.id, part)
            assert not a_before_vowel_number.search(part), (g.id, part)


def test_each_distractor_names_its_misconception(generated: list[GeneratedQuestion]) -> None:
    net = 0
    for g in generated:
        assert g.misconceptions[g.question.answer] is None
        names = [m for i, m in enumerate(g.misconceptions) if i != g.question.answer]
        assert all(m is not None and re.fullmatch(KEBAB_PATTERN, m) for m in names), g.id
        assert not any(m in {"factor-of-two", "factor-of-four", "miscount"} for m in names)
        net += sum(SAFETY_NET in (m or "") for m in names)
    # the safety net is rare: a family supplies enough misconceptions of its own
    assert net <= 0.02 * 3 * len(generated), net


def test_inputs_are_canonical_and_within_the_replay_bounds(
    generated: list[GeneratedQuestion],
) -> None:
    for g in generated:
        stored = dict(g.question.inputs)
        meta = stored.pop(GENERATED_KEY)
        assert stored == dict(g.inputs)
        assert meta["family"] == g.family and meta["unit"] == g.unit
        assert meta["choice_values"] == list(g.choice_values)
        json.dumps(g.question.inputs)  # plain JSON data
        if g.inputs["kind"] != "allocator-trace":
            continue
        assert set(g.inputs) == TRACE_KEYS, g.id
        assert trace_problems(g.inputs) == [], g.id
        assert len(g.inputs["ops"]) <= MAX_OPS
        assert all(op[2] <= MAX_SIZE for op in g.inputs["ops"] if op[0] == "malloc")
        assert g.question.demo == "allocator-trace"


def test_typed_answers_have_a_tolerance_that_excludes_every_distractor(
    generated: list[GeneratedQuestion],
) -> None:
    offered = 0
    for g in generated:
        numeric = g.numeric
        if numeric is None:
            continue
        offered += 1
        assert numeric.unit == g.unit
        assert numeric.tolerance == (0 if g.unit == "count" else 1)
        assert numeric.accepts(g.choice_values[g.question.answer])
        assert numeric.accepts(numeric.value + numeric.tolerance)
        assert not numeric.accepts(numeric.value + numeric.tolerance + 0.01)
        for i, value in enumerate(g.choice_values):
            assert i == g.question.answer or not numeric.accepts(value), (g.id, value)
    assert offered >= 0.8 * len(generated)


def test_the_correct_choice_is_not_systematically_the_longest(
    generated: list[GeneratedQuestion],
) -> None:
    strictly_longest = 0
    for g in generated:
        lengths = [len(c) for c in g.question.text(Locale.EN).choices]
        answer = lengths.pop(g.question.answer)
        strictly_longest += answer > max(lengths)
    # a quarter is what a random position gives when lengths differ; ties give no hint
    assert strictly_longest <= 0.35 * len(generated), strictly_longest


@pytest.mark.slow
def test_answer_positions_are_spread_over_a_to_d() -> None:
    positions = Counter(
        generate(family, seed).question.answer for family in FAMILIES for seed in range(60)
    )
    total = sum(positions.values())
    assert set(positions) == {0, 1, 2, 3}
    assert all(0.18 * total <= n <= 0.32 * total for n in positions.values()), positions


@pytest.mark.parametrize("family_id", FAMILIES.ids())
def test_one_seed_never_draws_the_same_scenario_twice(family_id: str) -> None:
    family = FAMILIES.require(family_id)
    draws = [generate(family, 99, i) for i in range(150)]
    assert len({json.dumps(g.inputs, sort_keys=True) for g in draws}) == len(draws)
    assert len({g.question.text(Locale.EN).prompt for g in draws}) == len(draws)


def test_a_channel_meets_600_scenarios_of_each_family_before_any_repeats() -> None:
    """Draws take the variants in turn and walk each without repeating, so a family's
    first (variants × smallest variant) draws are distinct: 600 covers the 10,000 of
    bench/generate.py over 17 families (a long-lived channel's generated questions)."""
    for family in FAMILIES:
        grids = family.space.grids
        assert len(grids) * min(g.size for g in grids) >= 600, family.id
