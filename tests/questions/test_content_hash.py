"""The content hash follows the content, not the layout of the YAML file."""

from __future__ import annotations

from pathlib import Path

from bot.bank import content_hash, question_to_dict
from questions import load_bank

from .conftest import WriteQuestion, valid_question

REORDERED = """\
el:
  explanation: Το δεύτερο είναι σωστό. Τα άλλα είναι λάθος.
  choices: [Πρώτο, Δεύτερο, Τρίτο, Τέταρτο]
  prompt: Ποιο είναι σωστό;
en:
  choices: [First, Second, Third, Fourth]
  explanation: The second one is right. The others are wrong.
  prompt: Which one is right?
references: ["https://pytorch.org/docs/stable/notes/cuda.html#memory-management"]
demo: fragmentation
answer: 1
difficulty: 1
topic: fragmentation
id: sample-question
"""


def _hash(bank_dir: Path) -> str:
    q = load_bank(bank_dir).get("sample-question")
    assert q is not None
    return q.content_hash


def test_hash_changes_when_the_explanation_changes(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question(valid_question())
    before = _hash(bank_dir)
    edited = valid_question()
    edited["el"]["explanation"] = "Το δεύτερο είναι σωστό, γιατί έτσι λέει η τεκμηρίωση."
    write_question(edited)
    assert _hash(bank_dir) != before


def test_hash_ignores_key_order_in_the_file(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question())
    before = _hash(bank_dir)
    write_question(REORDERED, name="sample-question.yaml")
    assert _hash(bank_dir) == before


def test_hash_is_the_hash_of_question_to_dict(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question(valid_question(inputs={"layers": 40, "dtype_bytes": 2}))
    q = load_bank(bank_dir).get("sample-question")
    assert q is not None
    assert dict(q.inputs) == {"layers": 40, "dtype_bytes": 2}
    assert q.content_hash == content_hash(question_to_dict(q))
