"""Helpers to write bank files into a temporary directory."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

VALID: dict[str, Any] = {
    "id": "sample-question",
    "topic": "fragmentation",
    "difficulty": 1,
    "answer": 1,
    "demo": "fragmentation",
    "references": ["https://pytorch.org/docs/stable/notes/cuda.html#memory-management"],
    "en": {
        "prompt": "Which one is right?",
        "choices": ["First", "Second", "Third", "Fourth"],
        "explanation": "The second one is right. The others are wrong.",
    },
    "el": {
        "prompt": "Ποιο είναι σωστό;",
        "choices": ["Πρώτο", "Δεύτερο", "Τρίτο", "Τέταρτο"],
        "explanation": "Το δεύτερο είναι σωστό. Τα άλλα είναι λάθος.",
    },
}

WriteQuestion = Callable[..., Path]


def valid_question(**overrides: Any) -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    data.update(overrides)
    return data


@pytest.fixture
def bank_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bank"
    path.mkdir()
    return path


@pytest.fixture
def write_question(bank_dir: Path) -> WriteQuestion:
    """Write `data` (a dict, dumped as YAML, or raw text) to `bank_dir/<name>`."""

    def write(data: dict[str, Any] | str, name: str | None = None) -> Path:
        if name is None:
            assert isinstance(data, dict)
            name = f"{data['id']}.yaml"
        text = data if isinstance(data, str) else yaml.safe_dump(data, allow_unicode=True)
        path = bank_dir / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
