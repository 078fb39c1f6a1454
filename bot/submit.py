"""`/quiz submit`: a member writes a question for the team pack in a form — five fields,
Discord's modal limit: the question; the choices, one per line; the correct letter; the
explanation; "topic, difficulty, link". It is checked by the bank's validator (team
rules) and waits for an admin's review (`bot.review`).

Problems come back per field (Slack shows them in the form, Discord and the console as a
message with the text to retry): structure first, in the member's language; then the
validator's own lines, which name the limit and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bot.commands import Command, Invocation, Reply
from bot.domain import LETTERS, Locale
from bot.features import Feature, FormKind, Parts
from bot.forms import FieldKind, Form, FormField, Submission, SubmitReply
from bot.i18n import N_, Translator, translator
from bot.messages import Message
from bot.quiz import QuizService
from bot.quoting import cut
from bot.review import Review
from bot.team import Origin, Workspace

FORM_KIND = "submit"
PROMPT, CHOICES, ANSWER, EXPLANATION, DETAILS = (
    "prompt",
    "choices",
    "answer",
    "explanation",
    "details",
)
MIN_CHOICES, MAX_CHOICES = 2, 5
DEFAULT_DIFFICULTY = 2
# A choice typed as "A) text", "b. text" or "- text": the marker is not part of it.
_MARKER = re.compile(r"^(?:[A-Ea-e][).:]|[-*•])\s+")
# Which form field a validator line is about, by the field it names first.
_FIELD_OF = (
    ("prompt", PROMPT),
    ("choices", CHOICES),
    ("answer", ANSWER),
    ("explanation", EXPLANATION),
)
ALREADY = {
    "pending": N_("This question was already submitted; it is waiting for review."),
    "approved": N_("This question is already in the team pack."),
    "rejected": N_("This question was submitted before and not accepted."),
}


def submit_form(locale: Locale, values: Mapping[str, str] | None = None) -> Form:
    """The form, in `locale` (the question is written in it); `values` prefill a retry."""
    t = translator(locale)
    values = values or {}

    def field(name: str, label: str, kind: FieldKind, size: int, hint: str = "") -> FormField:
        return FormField(
            name, label, kind, max_length=size, placeholder=hint, value=values.get(name, "")
        )

    fields = (
        field(PROMPT, t("Question"), FieldKind.PARAGRAPH, 600),
        field(
            CHOICES,
            t("Choices, one per line (2–5)"),
            FieldKind.PARAGRAPH,
            800,
            t("one choice per line (or a | b | c)"),
        ),
        field(ANSWER, t("Correct choice: its letter (A–E)"), FieldKind.TEXT, 3, "B"),
        field(EXPLANATION, t("Why it is right (shown at the reveal)"), FieldKind.PARAGRAPH, 1200),
        field(
            DETAILS,
            t("Topic, difficulty 1–3, link (optional)"),
            FieldKind.TEXT,
            400,
            t("our-cluster, 2, https://wiki.example.com/gpus"),
        ),
    )
    return Form(FORM_KIND, 0, locale.value, t("Submit a question"), fields, submit=t("Submit"))


def form_to_data(
    values: Mapping[str, str], locale: Locale
) -> tuple[dict[str, Any], dict[str, str]]:
    """The question as bank-file data, or what to fix per field (before the validator)."""
    t = translator(locale)
    errors: dict[str, str] = {}
    prompt = values.get(PROMPT, "").strip()
    if not prompt:
        errors[PROMPT] = t("Write the question.")
    lines = values.get(CHOICES, "").splitlines()
    if len(lines) == 1 and "|" in lines[0]:  # one line where a form is one line (console)
        lines = lines[0].split("|")
    choices = [_MARKER.sub("", line).strip() for line in lines]
    choices = [c for c in choices if c]
    if not MIN_CHOICES <= len(choices) <= MAX_CHOICES:
        errors[CHOICES] = t(
            "Write 2 to 5 choices, one per line (you wrote {count}).", count=len(choices)
        )
    letter = values.get(ANSWER, "").strip().rstrip(".)").upper()
    count = len(choices) if MIN_CHOICES <= len(choices) <= MAX_CHOICES else MAX_CHOICES
    index = LETTERS.index(letter) if len(letter) == 1 and letter in LETTERS[:count] else -1
    if index < 0:
        errors[ANSWER] = t(
            "{value!r} is not one of your choices: type its letter, A to {last}.",
            value=cut(values.get(ANSWER, "").strip(), 10),
            last=LETTERS[count - 1],
        )
    explanation = values.get(EXPLANATION, "").strip()
    if not explanation:
        errors[EXPLANATION] = t(
            "Write why the answer is right: it is shown when the question closes."
        )
    topic, difficulty, links = _details(values.get(DETAILS, ""), t, errors)
    data: dict[str, Any] = {
        "id": "team-new",
        "topic": topic,
        "difficulty": difficulty,
        "answer": index,
        "demo": None,
        "references": links,
        locale.value: {"prompt": prompt, "choices": choices, "explanation": explanation},
    }
    return data, errors


def _details(text: str, t: Translator, errors: dict[str, str]) -> tuple[str, int, list[str]]:
    parts = [p.strip() for p in text.split(",", 2)]
    topic = "-".join(parts[0].lower().split()) if parts else ""
    if not topic:
        errors[DETAILS] = t("Write a topic first, e.g. our-cluster, 2")
    difficulty = DEFAULT_DIFFICULTY
    if len(parts) > 1 and parts[1]:
        if parts[1] in ("1", "2", "3"):
            difficulty = int(parts[1])
        else:
            errors[DETAILS] = t(
                "{value!r} is not a difficulty: write 1, 2 or 3 after the topic, "
                "e.g. our-cluster, 2",
                value=cut(parts[1], 20),
            )
    links = [link for link in (parts[2].split() if len(parts) > 2 else [])]
    return topic, difficulty, links


def problems_by_field(problems: list[str]) -> dict[str, str]:
    """The validator's lines, each under the form field it is about."""
    out: dict[str, list[str]] = {}
    for line in problems:
        head = line.split(":", 1)[0]
        field = next((f for key, f in _FIELD_OF if key in head), DETAILS)
        out.setdefault(field, []).append(line)
    return {f: " · ".join(lines) for f, lines in out.items()}


def feature(parts: Parts) -> Feature:
    service, team, checker = parts.service, parts.store.team, parts.checker
    assert checker is not None, "team questions need the bank's validator (Parts.checker)"
    review = Review(service, team)

    async def submit(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        fallback = Message(body=t("Open /quiz submit where forms can be shown (Slack, Discord)."))
        return [Reply(fallback, form=submit_form(inv.locale))]

    async def submitted(sub: Submission, locale: Locale) -> SubmitReply:
        written_in = Locale.parse(sub.value) or locale
        t = translator(locale)
        data, errors = form_to_data(sub.values, written_in)
        if not errors:
            problems, question = checker.check(data)
            errors = problems_by_field(problems)
        if errors or question is None:
            return SubmitReply(errors=errors, form=submit_form(written_in, sub.values))
        workspace = Workspace.of(sub.channel)
        added = await team.add(
            workspace,
            [question],
            origin=Origin.CHAT,
            approved=False,
            now=service.clock.now(),
            author=sub.user,
            channel=sub.channel,
        )
        if not added:
            known = await team.find(workspace, question.content_hash)
            state = known.state.value if known is not None else "pending"
            return SubmitReply(Message(body=t(ALREADY[state])))
        await review.announce(added[0])
        return SubmitReply(
            Message(
                title=t("Thanks!"),
                body=t(
                    "Your question waits for review by an admin; you will be told here when "
                    "it is decided."
                ),
            )
        )

    return Feature(
        "submit",
        commands=[
            Command(
                "submit",
                submit,
                "submit",
                N_("write a question for the team pack"),
                options=(),
            )
        ],
        forms=[FormKind(FORM_KIND, submitted)],
    )


__all__ = ["FORM_KIND", "feature", "form_to_data", "problems_by_field", "submit_form"]
