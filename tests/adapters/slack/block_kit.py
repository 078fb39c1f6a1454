"""Slack's Block Kit limits, checked the way Slack does (independently of the renderer):
the fake Slack answers `invalid_blocks` when this finds a problem, and the renderer tests
run every message through it."""

from __future__ import annotations

from typing import Any

LIMITS = {
    "blocks": 50,
    "section_text": 3000,
    "header_text": 150,
    "button_text": 75,
    "action_id": 255,
    "button_value": 2000,
    "actions_elements": 25,
    "section_fields": 10,
    "field_text": 2000,
    "context_elements": 10,
    "context_text": 3000,
    "block_id": 255,
    "message_text": 40_000,
    "blocks_text_total": 12_000,  # below the ~13,000 where msg_blocks_too_long was seen
}


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def block_kit_problems(blocks: list[dict[str, Any]], text: str | None = None) -> list[str]:
    """Every limit a message breaks (empty: Slack would take it)."""
    problems: list[str] = []

    def check(cond: bool, what: str) -> None:
        if not cond:
            problems.append(what)

    check(isinstance(blocks, list), "blocks is not a list")
    if not isinstance(blocks, list):
        return problems
    check(len(blocks) <= LIMITS["blocks"], f"{len(blocks)} blocks > 50")
    if text is not None:
        check(utf16_len(text) <= LIMITS["message_text"], "text > 40,000")
    total = 0
    for i, block in enumerate(blocks):
        kind = block.get("type")
        if "block_id" in block:
            check(utf16_len(block["block_id"]) <= LIMITS["block_id"], f"block {i}: block_id")
        if kind == "header":
            t = block["text"]
            check(t.get("type") == "plain_text", f"block {i}: header text not plain_text")
            n = utf16_len(t["text"])
            check(0 < n <= LIMITS["header_text"], f"block {i}: header text length {n}")
            total += n
        elif kind == "section":
            check("text" in block or "fields" in block, f"block {i}: empty section")
            if "text" in block:
                n = utf16_len(block["text"]["text"])
                check(0 < n <= LIMITS["section_text"], f"block {i}: section text length {n}")
                total += n
            fields = block.get("fields", [])
            check(len(fields) <= LIMITS["section_fields"], f"block {i}: {len(fields)} fields")
            for f in fields:
                n = utf16_len(f["text"])
                check(0 < n <= LIMITS["field_text"], f"block {i}: field text length {n}")
                total += n
        elif kind == "actions":
            elements = block.get("elements", [])
            check(
                0 < len(elements) <= LIMITS["actions_elements"],
                f"block {i}: {len(elements)} elements",
            )
            ids = [e.get("action_id") for e in elements]
            check(len(ids) == len(set(ids)), f"block {i}: duplicate action_id")
            for e in elements:
                check(e.get("type") == "button", f"block {i}: element is not a button")
                n = utf16_len(e["text"]["text"])
                check(0 < n <= LIMITS["button_text"], f"block {i}: button text length {n}")
                check(
                    0 < utf16_len(e.get("action_id", "")) <= LIMITS["action_id"],
                    f"block {i}: action_id length",
                )
                if "value" in e:
                    check(
                        utf16_len(e["value"]) <= LIMITS["button_value"],
                        f"block {i}: value length",
                    )
                if "style" in e:
                    check(e["style"] in ("primary", "danger"), f"block {i}: style")
        elif kind == "context":
            elements = block.get("elements", [])
            check(
                0 < len(elements) <= LIMITS["context_elements"],
                f"block {i}: {len(elements)} context elements",
            )
            for e in elements:
                n = utf16_len(e["text"])
                check(0 < n <= LIMITS["context_text"], f"block {i}: context text length {n}")
                total += n
        else:
            problems.append(f"block {i}: unexpected type {kind!r}")
    check(total <= LIMITS["blocks_text_total"], f"blocks hold {total} characters of text")
    return problems
