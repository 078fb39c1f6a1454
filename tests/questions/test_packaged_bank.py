"""The shipped bank: valid, bilingual, the seed answers, no near-duplicates."""

from __future__ import annotations

import itertools
import re
from difflib import SequenceMatcher
from importlib import metadata

import pytest

from bot.bank import QuestionBank, content_hash, question_to_dict
from bot.domain import Locale
from questions import PYTORCH_VERSION, load_bank, validate_bank
from questions.loader import BANK_DIR

# The original quiz's key (seed order, 0-based): Q1..Q8 -> D, B, C, A, B, C, A, D.
SEED_ANSWERS = {
    "fragmentation-what-is-it": 3,
    "caching-allocator-why": 1,
    "oom-despite-reserved-memory": 2,
    "expandable-segments-changing-sizes": 0,
    "paged-attention-kv-blocks": 1,
    "gradient-checkpointing-activation-memory": 2,
    "empty-cache-live-tensor": 0,
    "reserved-vs-allocated-gap": 3,
}
SEED_DEMOS = {
    "fragmentation-what-is-it": "fragmentation",
    "caching-allocator-why": "caching-allocator",
    "oom-despite-reserved-memory": "oom-inactive-split",
    "expandable-segments-changing-sizes": "expandable-segments",
    "paged-attention-kv-blocks": "paged-attention",
    "gradient-checkpointing-activation-memory": "activation-checkpointing",
    "empty-cache-live-tensor": "empty-cache-live-tensor",
    "reserved-vs-allocated-gap": "reserved-vs-allocated",
}
NEAR_DUPLICATE = 0.8
# Facts that changed between PyTorch releases, and the release a question must name with them.
VERSIONED_FACTS = {"max_non_split_rounding_mb": "2.6", "fully_shard()": "2.6"}


@pytest.fixture(scope="module")
def bank() -> QuestionBank:
    return load_bank()


def test_packaged_bank_has_no_problems() -> None:
    assert validate_bank() == []
    assert validate_bank(BANK_DIR) == []


def test_every_question_has_both_locales_with_equal_choice_counts(bank: QuestionBank) -> None:
    for q in bank:
        assert set(q.texts) == {Locale.EN, Locale.EL}, q.id
        assert len(q.texts[Locale.EN].choices) == len(q.texts[Locale.EL].choices), q.id


def test_seed_questions_have_the_original_answer_key(bank: QuestionBank) -> None:
    answers = {qid: q.answer for qid in SEED_ANSWERS if (q := bank.get(qid)) is not None}
    assert answers == SEED_ANSWERS


def test_seed_questions_link_their_demo(bank: QuestionBank) -> None:
    demos = {qid: q.demo for qid in SEED_DEMOS if (q := bank.get(qid)) is not None}
    assert demos == SEED_DEMOS


def test_seed_order_never_puts_one_topic_twice_in_a_row(bank: QuestionBank) -> None:
    topics = [q.topic for qid in SEED_ANSWERS if (q := bank.get(qid)) is not None]
    assert len(topics) == len(SEED_ANSWERS)
    assert all(a != b for a, b in itertools.pairwise(topics)), topics
    assert len(set(topics)) >= 5


def _normalised(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


@pytest.mark.slow
@pytest.mark.parametrize("locale", list(Locale))
def test_no_two_prompts_are_near_duplicates(bank: QuestionBank, locale: Locale) -> None:
    prompts = [(q.id, _normalised(q.texts[locale].prompt)) for q in bank]
    similar = []
    matcher = SequenceMatcher(None)
    for i, (b_id, b) in enumerate(prompts):
        matcher.set_seq2(b)  # its analysis is kept for every `a` compared with it
        for a_id, a in prompts[:i]:
            matcher.set_seq1(a)
            # The two quick ratios are upper bounds of ratio() (difflib): the same pairs.
            if (
                matcher.real_quick_ratio() >= NEAR_DUPLICATE
                and matcher.quick_ratio() >= NEAR_DUPLICATE
                and (ratio := matcher.ratio()) >= NEAR_DUPLICATE
            ):
                similar.append((a_id, b_id, round(ratio, 2)))
    assert similar == []


def test_greek_text_never_renders_free_as_free_of_charge(bank: QuestionBank) -> None:
    # "δωρεάν" is the machine translation of "free" in the seed; memory is "αποδεσμεύεται".
    for q in bank:
        text = q.texts[Locale.EL]
        for part in (text.prompt, text.explanation, *text.choices):
            assert "δωρεάν" not in part.casefold(), q.id


def test_greek_text_is_written_in_greek(bank: QuestionBank) -> None:
    greek = re.compile(r"[\u0370-\u03ff]")
    for q in bank:
        text = q.texts[Locale.EL]
        assert greek.search(text.prompt), q.id
        assert greek.search(text.explanation), q.id


def test_loaded_hash_is_the_hash_of_the_question_data(bank: QuestionBank) -> None:
    for q in bank:
        assert q.content_hash == content_hash(question_to_dict(q)), q.id


def test_the_questions_readme_names_the_pytorch_release_the_bank_describes() -> None:
    readme = (BANK_DIR.parent / "README.md").read_text("utf-8")
    assert f"PyTorch {PYTORCH_VERSION}" in readme


def test_the_installed_torch_is_the_release_the_bank_describes() -> None:
    try:
        installed = metadata.version("torch")
    except metadata.PackageNotFoundError:
        pytest.skip("torch is not installed")
    assert ".".join(installed.split(".")[:2]) == PYTORCH_VERSION, (
        f"torch {installed} is installed but the bank describes PyTorch {PYTORCH_VERSION}; "
        f"re-check the version-dependent questions, then update questions.PYTORCH_VERSION"
    )


@pytest.mark.parametrize("locale", list(Locale))
def test_version_dependent_facts_say_since_when(bank: QuestionBank, locale: Locale) -> None:
    unversioned = [
        (q.id, fact)
        for q in bank
        for fact, since in VERSIONED_FACTS.items()
        if fact in (text := " ".join((q.texts[locale].prompt, q.texts[locale].explanation)))
        and since not in text
    ]
    assert unversioned == []
