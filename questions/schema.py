"""The bank file format: one YAML file per question, validated by these pydantic models.

The models check the shape of one file (types, required and unknown keys, lengths,
kebab-case, difficulty). Rules that span fields or files (the answer index against the
choices, equal choice counts across locales, file name = id, unique ids) live in
`questions.loader`, so that every problem is reported even when the shape is wrong.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints

PROMPT_MAX: Final = 300
CHOICE_MAX: Final = 120
EXPLANATION_MAX: Final = 600
MIN_CHOICES: Final = 2
MAX_CHOICES: Final = 5
ID_MAX: Final = 64  # fits a button's value (64) and the database's columns
TOPIC_MAX: Final = 40
DIFFICULTIES: Final = (1, 2, 3)
LOCALES: Final = ("en", "el")

KEBAB_PATTERN: Final = r"^[a-z0-9]+(-[a-z0-9]+)*$"
REFERENCE_PATTERN: Final = r"^https://\S+$"

# Surrounding whitespace is stripped first, so a blank string counts as empty.
KebabKey = Annotated[
    str, StringConstraints(strip_whitespace=True, pattern=KEBAB_PATTERN, max_length=ID_MAX)
]
Topic = Annotated[
    str, StringConstraints(strip_whitespace=True, pattern=KEBAB_PATTERN, max_length=TOPIC_MAX)
]
Reference = Annotated[str, StringConstraints(strip_whitespace=True, pattern=REFERENCE_PATTERN)]
Prompt = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=PROMPT_MAX)
]
ChoiceText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=CHOICE_MAX)
]
Explanation = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=EXPLANATION_MAX)
]


class LocaleTextModel(BaseModel):
    """One locale's wording: `en:` or `el:` in a bank file."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    prompt: Prompt
    choices: Annotated[list[ChoiceText], Field(min_length=MIN_CHOICES, max_length=MAX_CHOICES)]
    explanation: Explanation


class QuestionFileModel(BaseModel):
    """A whole bank file, `questions/bank/<id>.yaml`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: KebabKey
    topic: Topic
    difficulty: Annotated[int, Field(ge=DIFFICULTIES[0], le=DIFFICULTIES[-1])]
    answer: Annotated[int, Field(ge=0)]
    demo: KebabKey | None = None
    references: Annotated[list[Reference], Field(min_length=1)]
    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    en: LocaleTextModel
    el: LocaleTextModel


class TeamQuestionModel(QuestionFileModel):
    """A team question (`/quiz submit`, `quizbot questions import`): the bank's format and
    limits, written in one locale or both, with references optional (a team's own
    questions often have no public source). At least one locale is checked by
    `questions.loader`."""

    references: list[Reference] = Field(default_factory=list)
    en: LocaleTextModel | None = None  # type: ignore[assignment]
    el: LocaleTextModel | None = None  # type: ignore[assignment]


FIELDS: Final = tuple(QuestionFileModel.model_fields)
TEXT_FIELDS: Final = tuple(LocaleTextModel.model_fields)
