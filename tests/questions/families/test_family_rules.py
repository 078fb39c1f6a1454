"""Facts single families rest on: their scenario lists hold what their comments promise."""

from __future__ import annotations

import pytest

from bot.domain import Locale
from questions.families import default_families
from questions.families.gc_threshold import SPACE as GC_SPACE
from questions.families.gc_threshold import TEMPLATES, outcome
from questions.families.narrate import RESERVED
from questions.families.oom_growing import GROWING, growing_inputs, growing_ops, growing_sizes
from questions.families.sizes import MIB
from questions.families.trace import replay_value, run_trace

FAMILIES = default_families()


@pytest.mark.parametrize("cap", [256, 1024])
def test_every_growing_shape_releases_the_cache_at_least_twice(cap: int) -> None:
    for shape in GROWING:
        sizes = growing_sizes({"shape": shape}, cap * MIB)
        run = run_trace(growing_inputs(growing_ops(sizes), "num_alloc_retries", cap * MIB))
        assert run.stats["num_alloc_retries"] >= 2, (shape, cap)
        assert run.stats["num_ooms"] == 0, (shape, cap)


def test_every_gc_case_collects_some_cached_blocks_not_all() -> None:
    for name, cap, t, units in GC_SPACE.grids[0].dims[0][1]:
        sizes = {i + 1: u * cap * MIB // 64 for i, u in enumerate(units)}
        g = outcome(sizes, TEMPLATES[name], cap * MIB, t)
        assert 0 < len(g.freed) < len(g.ages), (name, cap, t, units)
        assert g.reserved > g.threshold, (name, cap, t, units)


def test_the_gc_familys_account_is_the_simulators() -> None:
    """`build` compares its own account of the collection with the replay and raises on a
    difference; a spread of scenarios must all build."""
    family = FAMILIES.require("gc-threshold")
    for scenario in range(0, family.space.size, 17):
        family.build(*family.space.decode(scenario))


def test_max_split_and_non_split_accounts_are_the_simulators() -> None:
    for family_id in ("max-split-size", "max-non-split-rounding"):
        family = FAMILIES.require(family_id)
        for scenario in range(0, family.space.size, 7):
            family.build(*family.space.decode(scenario))


# Parameter counts as the models' Hugging Face pages state them (safetensors metadata).
PUBLISHED_PARAMETERS = {
    "Llama-3.2-1B": 1_235_814_400,
    "Llama-3.2-3B": 3_212_749_824,
    "Llama-2-7B": 6_738_415_616,
    "Llama-3.1-8B": 8_030_261_248,
    "Mistral-7B-v0.3": 7_248_023_552,
    "Qwen2.5-7B": 7_615_616_512,
    "Llama-2-13B": 13_015_864_320,
    "Mistral-Nemo-12B": 12_247_782_400,
    "Qwen2.5-14B": 14_770_033_664,
    "Qwen2.5-32B": 32_763_876_352,
    "Yi-34B": 34_388_917_248,
    "Llama-2-70B": 68_976_648_192,
    "Llama-3.1-70B": 70_553_706_496,
    "Qwen2.5-72B": 72_706_203_648,
}


def test_autocast_shapes_count_each_models_published_parameters() -> None:
    """The shapes behind `autocast-weight-cache` (layers, heads, MLP width, tied head,
    q/k/v biases, norms) add up to each model's published parameter count exactly."""
    from questions.families.autocast_cache import SHAPES, total_params

    assert set(SHAPES) == set(PUBLISHED_PARAMETERS)
    for name, published in PUBLISHED_PARAMETERS.items():
        assert total_params(name) == published, name


def test_request_rounding_says_fills_exactly_only_when_it_does() -> None:
    """A large request whose unsplit rest is under 1 MiB is not "exactly" its segment: the
    step names the rest (43,515,905 B: a 42,496.5 KiB block in a 42 MiB segment)."""
    family = FAMILIES.require("request-rounding")
    draft = family.build("large", {"m": 166, "r": 1, "ask": "allocated_bytes.all.current"})
    steps = " ".join(s.render(Locale.EN) for s in draft.steps)
    assert "fills the segment exactly" not in steps
    assert "would be left (not over 1 MiB)" in steps
    split = family.build("large", {"m": 168, "r": 1, "ask": "allocated_bytes.all.current"})
    assert "is split off" in " ".join(s.render(Locale.EN) for s in split.steps)


FIT_ONLY = {
    "holes-never-reused",
    "holes-never-reused-unrounded",
    "new-segment-in-20mib-steps",
    "used-hole-removed-whole",
    "only-the-cut-holes-rest",
    "x-segment-sized",
}
GROWN_ONLY = {
    "new-segment-unrounded",
    "new-segment-of-20mib-steps",
    "new-segment-counted-whole",
    "free-bytes-add-up",
    "cached-segment-never-cut",
}


def test_fragmentation_notes_give_the_reason_the_trace_shows() -> None:
    """A note that says "a new segment is rounded up" where x fits in a hole, or "x fits in
    a hole" where it needs a segment, states a false reason; so would "rounded to 20 MiB;
    from 10 MiB on they round to 2 MiB" for an x under 10 MiB. And where x fits, no
    reserved-bytes distractor is twice the answer (big's segment never cut would be)."""
    family = FAMILIES.require("fragmentation-fit")
    for scenario in range(0, family.space.size, 7):
        draft = family.build(*family.space.decode(scenario))
        ops = draft.inputs["ops"]
        grown = replay_value(draft.inputs, ask=RESERVED) > replay_value(
            draft.inputs, ops=ops[:-1], ask=RESERVED
        )
        names = {c.misconception for c in draft.candidates}
        assert not names & (FIT_ONLY if grown else GROWN_ONLY), (scenario, grown, names)
        if int(ops[-1][2]) < 10 * MIB:
            assert "new-segment-of-20mib-steps" not in names, scenario
        if not grown and draft.inputs["ask"] == RESERVED:
            assert all(c.value != 2 * draft.answer for c in draft.candidates), scenario


PAGE_NOTES = {
    "page-run-per-tensor",
    "live-bytes-in-pages",
    "freed-pages-not-reused",
    "first-tensors-only",
    "pages-for-every-request",
    "pages-of-2mib",
}
SEGMENT_NOTES = {
    "fixed-segment-per-tensor",
    "segments-rounded-to-20mib",
    "first-tensors-segments-only",
}


def test_expandable_notes_speak_of_the_mode_the_trace_runs_in() -> None:
    """ "Tensors share the pages of one range" is no reason in a native run, nor "10 MiB
    and up get their own size" with expandable segments."""
    family = FAMILIES.require("expandable-segments")
    for scenario in range(0, family.space.size, 5):
        draft = family.build(*family.space.decode(scenario))
        if draft.inputs["ask"] != RESERVED:
            continue
        names = {c.misconception for c in draft.candidates}
        wrong = SEGMENT_NOTES if draft.inputs["conf"] else PAGE_NOTES
        assert not names & wrong, (scenario, draft.inputs["conf"], names & wrong)


NEW_SEGMENT_REASONS = ("a new segment is rounded", "round to 2 MiB", "segment is rounded to 2")


@pytest.mark.parametrize("family_id", ["max-split-size", "max-non-split-rounding"])
def test_no_note_explains_a_segment_x_never_gets(family_id: str) -> None:
    """Where x takes big's cached block whole, a note about how x's new segment is rounded
    gives a false reason (x gets none); under 10 MiB a new segment is 20 MiB, not x
    rounded to 2 MiB."""
    family = FAMILIES.require(family_id)
    for scenario in range(0, family.space.size, 3):
        draft = family.build(*family.space.decode(scenario))
        inputs = draft.inputs
        big, x = int(inputs["ops"][0][2]), int(inputs["ops"][2][2])
        before = replay_value(inputs, ops=inputs["ops"][:2], ask=RESERVED)
        taken = replay_value(inputs, ask=RESERVED) == before == big
        # the candidates a question can show (one equal to the answer never is)
        notes = [c.why.render(Locale.EN) for c in draft.candidates if c.value != draft.answer]
        if taken:
            assert not [n for n in notes if any(r in n for r in NEW_SEGMENT_REASONS)], scenario
        if -(-x // 512) * 512 < 10 * MIB:  # x's block
            assert not [n for n in notes if "round to 2 MiB" in n], scenario


def test_training_state_prompts_state_each_models_published_size() -> None:
    """Llama-3.1-8B has 8.03 billion parameters (the answer uses them): the prompt must
    not say 8 (8.03 is not exact in binary, so a float test of its decimals failed)."""
    family = FAMILIES.require("training-state-per-gpu")
    seen = set()
    for scenario in range(0, family.space.size, 11):
        draft = family.build(*family.space.decode(scenario))
        prompt = draft.prompt.render(Locale.EN)
        if draft.inputs["model"] == "Llama-3.1-8B":
            assert "(8.03 billion parameters)" in prompt, prompt
            seen.add(draft.inputs["model"])
    assert seen


def test_the_strict_age_misconception_still_runs_pass_after_pass() -> None:
    """ "Only blocks older than the average" changes the comparison, not the passes: the
    second pass (mean of the blocks left) goes on until the target is met."""
    from questions.families.gc_threshold import collect

    sizes = {1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0}
    ages = {1: 5, 2: 2, 3: 1, 4: 1}  # mean 2.25, then 1.33 without block 1
    assert collect(sizes, ages, 150, strict=True) == (1, 2)
    assert collect(sizes, {1: 3, 2: 2, 3: 1}, 50) == (1, 2)  # at least the mean (2)
    assert collect(sizes, {1: 3, 2: 2, 3: 1}, 50, strict=True) == (1,)
