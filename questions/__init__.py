"""The question bank: YAML files in `questions/bank/`, their schema, loader and CLI."""

from questions.loader import load_bank, validate_bank

__all__ = ["load_bank", "validate_bank"]
