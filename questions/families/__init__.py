"""Generated "predict the memory" questions (issue 16): families of scenarios, each turned
into a complete bank question by a seed. Pure Python; the allocator-trace families run
`gpu_runner.sim` (never torch). See docs/generated-questions.md.

    from questions.families import default_families, generate, next_for_channel

    families = default_families()
    q = generate(families.require("request-rounding"), seed=7)      # gen-request-rounding-7-0
    q.question            # a bot.domain.Question, valid like any bank file
    q.inputs, q.choice_values, q.unit, q.numeric, q.misconceptions
    q = next_for_channel(families, "slack:T1:C1", history)         # never repeats in a channel
"""

from questions.families.assemble import GENERATED_KEY, generated_to_dict
from questions.families.channel import (
    channel_seed,
    next_for_channel,
    parse_generated_id,
    pick_family,
)
from questions.families.model import Family, GeneratedQuestion, NumericAnswer
from questions.families.registry import (
    INDEX_MAX,
    SEED_MAX,
    FamilyRegistry,
    GenerationError,
    default_families,
    generate,
)
from questions.families.trace import KIND as TRACE_KIND
from questions.families.trace import MAX_OPS, MAX_SIZE, run_trace, trace_problems

__all__ = [
    "GENERATED_KEY",
    "INDEX_MAX",
    "MAX_OPS",
    "MAX_SIZE",
    "SEED_MAX",
    "TRACE_KIND",
    "Family",
    "FamilyRegistry",
    "GeneratedQuestion",
    "GenerationError",
    "NumericAnswer",
    "channel_seed",
    "default_families",
    "generate",
    "generated_to_dict",
    "next_for_channel",
    "parse_generated_id",
    "pick_family",
    "run_trace",
    "trace_problems",
]
