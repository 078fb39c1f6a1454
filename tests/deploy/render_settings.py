"""Render the configuration reference of docs/operations.md from `bot.config.Settings`.

    .venv/bin/python -m tests.deploy.render_settings            # print the table
    .venv/bin/python -m tests.deploy.render_settings --update   # rewrite it in the doc

The table sits between the markers below; `test_operations_doc.py` checks it is current.
"""

from __future__ import annotations

import enum
import sys
import types
import typing
from pathlib import Path

from pydantic import SecretStr

from bot.config import Settings, env_name

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "operations.md"
BEGIN = "<!-- settings:begin -->"
END = "<!-- settings:end -->"


def _kind(annotation: object) -> str:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        (annotation,) = [a for a in args if a is not type(None)]
    if annotation is SecretStr:
        return "secret"
    if annotation is int:
        return "integer"
    if annotation is Path:
        return "path"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(f"`{m.value}`" for m in annotation)
    return "text"


def _default(value: object) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, enum.Enum):
        value = value.value
    return f"`{value}`"


def render_table() -> str:
    """The Markdown table: one row per `Settings` field, in the model's order."""
    lines = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for field, info in Settings.model_fields.items():
        meaning = (info.description or "").replace("|", "\\|")
        lines.append(
            f"| `{env_name(field)}` | {_kind(info.annotation)} | {_default(info.default)} "
            f"| {meaning} |"
        )
    return "\n".join(lines)


def rendered_section() -> str:
    return f"{BEGIN}\n{render_table()}\n{END}"


def current_section(text: str) -> str | None:
    """The doc's text from BEGIN to END inclusive; None when a marker is missing."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return None
    return text[start : end + len(END)]


def update(doc: Path = DOC) -> bool:
    """Rewrite the table in `doc`; True when it changed."""
    text = doc.read_text()
    section = current_section(text)
    if section is None:
        raise SystemExit(f"{doc}: add the markers {BEGIN} and {END} where the table goes")
    new = text.replace(section, rendered_section())
    if new != text:
        doc.write_text(new)
    return new != text


if __name__ == "__main__":
    if "--update" in sys.argv[1:]:
        print(f"{DOC}: {'updated' if update() else 'already current'}")
    else:
        print(render_table())
