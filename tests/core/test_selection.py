"""Question selection: no repeat until the bank is exhausted, no topic twice in a row."""

from __future__ import annotations

import random

from bot.bank import QuestionBank, pick_question
from bot.domain import Locale, Question, QuestionText


def q(qid: str, topic: str) -> Question:
    text = QuestionText("prompt " + qid, ("a", "b"), "because")
    return Question(qid, topic, 1, 0, {Locale.EN: text, Locale.EL: text}, qid)


BANK = QuestionBank(
    [q("a1", "alloc"), q("a2", "alloc"), q("a3", "alloc"), q("k1", "kv"), q("c1", "ckpt")]
)


def test_no_question_repeats_until_every_question_was_asked() -> None:
    rng = random.Random(1)
    history: list[str] = []
    for _ in range(len(BANK)):
        picked = pick_question(BANK, history, rng)
        assert picked is not None
        history.insert(0, picked.id)
    assert sorted(history) == sorted(x.id for x in BANK)
    # The next round starts again from the least asked questions.
    nxt = pick_question(BANK, history, rng)
    assert nxt is not None and history.count(nxt.id) == 1


def test_same_topic_is_not_picked_twice_in_a_row_when_another_is_left() -> None:
    for seed in range(50):
        rng = random.Random(seed)
        picked = pick_question(BANK, ["a1"], rng)
        assert picked is not None and picked.topic != "alloc"


def test_same_topic_repeats_only_when_it_is_all_that_is_left_unasked() -> None:
    history = ["a1", "k1", "c1"]  # newest first; a2 and a3 remain, both "alloc"
    picked = pick_question(BANK, history, random.Random(0))
    assert picked is not None and picked.id in {"a2", "a3"}


def test_topic_filter_limits_candidates_and_unknown_topic_gives_none() -> None:
    picked = pick_question(BANK, [], random.Random(0), topic="kv")
    assert picked is not None and picked.id == "k1"
    assert pick_question(BANK, [], random.Random(0), topic="nope") is None


def test_ids_no_longer_in_the_bank_are_ignored_in_history() -> None:
    picked = pick_question(BANK, ["gone", "a1"], random.Random(3))
    assert picked is not None and picked.id != "a1"


def test_a_large_pool_keeps_both_rules_whether_sampled_or_filtered() -> None:
    """Past LARGE_POOL candidates a pick samples instead of filtering: the same rules."""
    from bot.bank import LARGE_POOL

    size = LARGE_POOL + 500
    big = QuestionBank(q(f"t{i:05d}", f"topic{i % 7}") for i in range(size))
    rng = random.Random(4)
    history: list[str] = []
    for _ in range(size):  # the whole round: sampled first, filtered once half is asked
        picked = pick_question(big, history, rng)
        assert picked is not None and picked.id not in history
        if history:
            assert picked.topic != big.get(history[0]).topic  # type: ignore[union-attr]
        history.insert(0, picked.id)
    assert len(set(history)) == size
    only = QuestionBank(q(f"s{i:05d}", "same") for i in range(size))
    picked = pick_question(only, ["s00001"], rng)  # one topic: sampling gives way to the rule
    assert picked is not None and picked.id != "s00001"
