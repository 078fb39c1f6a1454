"""The loaded question bank: an immutable set of questions, and how one is picked."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from bot.domain import Locale, Question, QuestionText

LARGE_POOL = 1000  # more candidates than this: `pick_question` samples instead of filtering


class QuestionBank:
    def __init__(self, questions: Iterable[Question]) -> None:
        self._by_id: dict[str, Question] = {}
        for q in questions:
            if q.id in self._by_id:
                raise ValueError(f"duplicate question id {q.id!r}")
            self._by_id[q.id] = q
        # Picks walk the questions in id order (a pool of 10,000 is not sorted per pick).
        self._in_order = sorted(self._by_id.values(), key=lambda q: q.id)

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Question]:
        return iter(self._by_id.values())

    def __contains__(self, question_id: object) -> bool:
        return question_id in self._by_id

    def get(self, question_id: str) -> Question | None:
        return self._by_id.get(question_id)

    def topics(self) -> list[str]:
        return sorted({q.topic for q in self})

    def demos(self) -> list[str]:
        return sorted({q.demo for q in self if q.demo})

    def in_id_order(self) -> Sequence[Question]:
        return self._in_order


def pick_question(
    bank: QuestionBank,
    history: Sequence[str],
    rng: random.Random,
    topic: str | None = None,
) -> Question | None:
    """Pick the next question for a channel.

    `history` holds the ids asked in the channel, newest first. Rules: no question repeats
    until every candidate has been asked as often (the bank is exhausted before a repeat),
    and the topic of the last question is not used twice in a row when another topic can
    be used. With `topic`, only that topic's questions are candidates.
    """
    in_order = bank.in_id_order()
    candidates = in_order if topic is None else [q for q in in_order if q.topic == topic]
    if not candidates:
        return None
    asked = Counter(qid for qid in history if qid in bank)
    last_topic = None
    if history and (last := bank.get(history[0])) is not None:
        last_topic = last.topic
    if len(candidates) > LARGE_POOL and len(asked) < len(candidates) // 2:
        # A large pool (a team pack of thousands): draw until a question fits rather than
        # filter them all; uniform over the same questions as the filter below.
        for _ in range(64):
            q = rng.choice(candidates)
            if q.id not in asked and (topic is not None or q.topic != last_topic):
                return q
    if len(asked) < len(candidates):  # some candidate was never asked: those are the pool
        pool = [q for q in candidates if q.id not in asked]  # still in id order
    else:
        fewest = min(asked.get(q.id, 0) for q in candidates)
        pool = [q for q in candidates if asked.get(q.id, 0) == fewest]
    if topic is None and last_topic is not None:
        # No repeat wins over topic variety: the same topic comes twice in a row only
        # when it is all that is left unasked in this round.
        pool = [q for q in pool if q.topic != last_topic] or pool
    return rng.choice(pool)


def question_to_dict(q: Question) -> dict[str, Any]:
    """The question as plain data, the shape of a bank file (without `content_hash`)."""
    data: dict[str, Any] = {
        "id": q.id,
        "topic": q.topic,
        "difficulty": q.difficulty,
        "answer": q.answer,
        "demo": q.demo,
        "references": list(q.references),
    }
    if q.inputs:
        data["inputs"] = dict(q.inputs)
    for locale, text in sorted(q.texts.items()):
        data[str(locale)] = {
            "prompt": text.prompt,
            "choices": list(text.choices),
            "explanation": text.explanation,
        }
    return data


def content_hash(data: dict[str, Any]) -> str:
    """A stable hash of a question's content: posts keep it, so edits never rewrite history."""
    canonical = json.dumps(
        {k: v for k, v in data.items() if k != "content_hash"},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def question_from_dict(data: dict[str, Any]) -> Question:
    """Inverse of `question_to_dict` for already-validated data (storage snapshots)."""
    texts = {
        loc: QuestionText(
            prompt=data[loc.value]["prompt"],
            choices=tuple(data[loc.value]["choices"]),
            explanation=data[loc.value]["explanation"],
        )
        for loc in Locale
        if loc.value in data
    }
    return Question(
        id=data["id"],
        topic=data["topic"],
        difficulty=int(data["difficulty"]),
        answer=int(data["answer"]),
        texts=texts,
        content_hash=content_hash(data),
        demo=data.get("demo"),
        references=tuple(data.get("references", ())),
        inputs=dict(data.get("inputs") or {}),
    )
