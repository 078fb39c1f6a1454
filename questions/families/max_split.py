"""Family `max-split-size`: an oversize cached block and one more request.

With ``max_split_size_mb:M`` blocks of M or more are never split; a smaller request cannot
use them, and a larger one only when less than 20 MiB (``max_non_split_rounding_mb``)
would be wasted (spec 1.5-1.6).
"""

from __future__ import annotations

from typing import Any

from questions.families.misconceptions import (
    allocated_not_reserved,
    freed_memory_returns,
    no_reuse,
    reserved_not_allocated,
)
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_SOURCE,
    CONF_DOCS,
    RESERVED,
    conclusion,
    join,
    op_text,
    setup,
    size,
    trace_prompt,
)
from questions.families.space import Space, grid
from questions.families.trace import (
    TRACE_DEMO,
    free,
    malloc,
    replay_value,
    run_trace,
    trace_inputs,
)
from questions.families.units import MIB

SPACE = Space(
    (
        grid(
            "oversize",
            m=(20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 200, 256),
            f=(1, 1.25, 1.5, 2, 3, 4),
            h=(0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0),
            ask=(RESERVED, ALLOCATED),
        ),
    )
)
WASTE_LIMIT = 20 * MIB  # max_non_split_rounding_mb's default


def _steps(m: int, big: int, r: int, ask: str, answer: int, grown: int) -> list[Text]:
    steps = [
        Text(
            "With max_split_size_mb:{m}, blocks of {M} or more are oversize and never split.",
            "Με max_split_size_mb:{m}, μπλοκ από {M} και πάνω είναι oversize και δεν "
            "διασπώνται ποτέ.",
        ).fill(m=str(m // MIB), M=size(m)),
        Text(
            "big gets its own segment of {B}; del big keeps that oversize block cached.",
            "Το big παίρνει δικό του τμήμα {B}· το del big κρατά αυτό το oversize μπλοκ στην "
            "cache.",
        ).fill(B=size(big)),
    ]
    if r < m:
        steps.append(
            Text(
                "x ({r}) is below {M}, and an oversize block never serves a smaller request: "
                "a new {g} segment.",
                "Το x ({r}) είναι κάτω από {M}, και ένα oversize μπλοκ δεν εξυπηρετεί ποτέ "
                "μικρότερο αίτημα: νέο τμήμα {g}.",
            ).fill(r=size(r), M=size(m), g=size(grown))
        )
    elif grown:
        steps.append(
            Text(
                "x ({r}) may take an oversize block only if under 20 MiB is wasted; {w} would "
                "be: a new {g} segment.",
                "Το x ({r}) παίρνει oversize μπλοκ μόνο αν σπαταλώνται κάτω από 20 MiB· εδώ "
                "{w}: νέο τμήμα {g}.",
            ).fill(r=size(r), w=size(big - r), g=size(grown))
        )
    else:
        steps.append(
            Text(
                "x ({r}) wastes under 20 MiB of the cached block, so it takes the whole {B} "
                "block, unsplit.",
                "Το x ({r}) σπαταλά κάτω από 20 MiB του μπλοκ της cache, άρα παίρνει ολόκληρο "
                "το μπλοκ {B}, χωρίς διάσπαση.",
            ).fill(r=size(r), B=size(big))
        )
    steps.append(conclusion(ask, size(answer)))
    return steps


def _candidates(ask: str, inputs: dict[str, Any], stats: dict[str, int]) -> list[Candidate]:
    ignores = Candidate(
        "max-split-size-ignored",
        replay_value(inputs, conf=""),
        Text(
            "that is the default behaviour, where the cached block would be split.",
            "είναι η προεπιλεγμένη συμπεριφορά, όπου το μπλοκ της cache θα διασπαζόταν.",
        ),
    )
    limit = int(str(inputs["conf"]).rsplit(":", 1)[1]) * MIB
    if ask == RESERVED:
        return [
            ignores,
            freed_memory_returns(inputs),
            allocated_not_reserved(stats[ALLOCATED]),
            no_reuse(inputs),
            Candidate(
                "max-split-size-caps-segments",
                stats[RESERVED] - int(inputs["ops"][0][2]) + min(int(inputs["ops"][0][2]), limit),
                Text(
                    "that reads the option as a cap on segment size; it only stops splitting.",
                    "διαβάζει την επιλογή ως όριο μεγέθους τμήματος· απλώς σταματά τη διάσπαση.",
                ),
            ),
        ]
    request = int(inputs["ops"][-1][2])
    big = int(inputs["ops"][0][2])
    return [
        Candidate(
            "oversize-block-split",
            request,
            Text(
                "that assumes the block is cut to the request; oversize blocks are never split.",
                "υποθέτει ότι το μπλοκ κόβεται στο μέγεθος του αιτήματος· τα oversize δεν "
                "διασπώνται.",
            ),
        ),
        Candidate(
            "oversize-block-always-taken",
            big,
            Text(
                "that assumes x takes the whole cached block; here it cannot.",
                "υποθέτει ότι το x παίρνει ολόκληρο το μπλοκ της cache· εδώ δεν μπορεί.",
            ),
        ),
        reserved_not_allocated(stats[RESERVED]),
        Candidate(
            "max-split-size-caps-blocks",
            limit,
            Text(
                "that reads the option as a size cap; it only stops splitting.",
                "διαβάζει την επιλογή ως όριο μεγέθους· απλώς σταματά τη διάσπαση.",
            ),
        ),
        ignores,
    ]


def build(variant: str, params: dict[str, Any]) -> Draft:
    m = int(params["m"]) * MIB
    big = -(-int(m * float(params["f"])) // (2 * MIB)) * 2 * MIB
    r = max(MIB + MIB // 2, int(big * float(params["h"])) // MIB * MIB)
    ask = str(params["ask"])
    conf = f"max_split_size_mb:{m // MIB}"
    ops = [malloc("big", big), free("big"), malloc("x", r)]
    inputs = trace_inputs(ops, ask, conf=conf)
    run = run_trace(inputs)
    answer = run.value(ask)
    return Draft(
        topic="allocator-config",
        difficulty=3,
        inputs=inputs,
        prompt=trace_prompt(setup(conf), join(op_text(op) for op in ops), ask),
        steps=tuple(_steps(m, big, r, ask, answer, run.results[-1].grown)),
        answer=answer,
        style=Style.EXACT_SIZE,
        candidates=tuple(_candidates(ask, inputs, run.stats)),
        references=(CONF_DOCS, ALLOCATOR_SOURCE),
        demo=TRACE_DEMO,
    )


FAMILY = Family(
    id="max-split-size",
    topic="allocator-config",
    kind="allocator-trace",
    difficulty=(3, 3),
    description=(
        "max_split_size_mb: a cached oversize block and one more request; is it split, "
        "taken whole, or passed over for a new segment"
    ),
    space=SPACE,
    build=build,
)
