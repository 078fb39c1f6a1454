"""The question bank: YAML files in `questions/bank/`, their schema, loader, lint and CLI."""

from typing import Final

from questions.loader import load_bank, validate_bank

# The PyTorch release the bank's answers describe. Where a fact changed between releases,
# the question says since when ("since 2.6"); bump this only after re-checking those.
PYTORCH_VERSION: Final = "2.13"

__all__ = ["PYTORCH_VERSION", "load_bank", "validate_bank"]
