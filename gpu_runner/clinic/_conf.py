"""``PYTORCH_CUDA_ALLOC_CONF`` strings as ordered key/value items, and their short labels."""

from __future__ import annotations

from collections.abc import Mapping

from gpu_runner.sim import AllocatorConfig, parse_conf

Items = dict[str, str]

EXPANDABLE = "expandable_segments"
MAX_SPLIT = "max_split_size_mb"
ROUNDUP = "roundup_power2_divisions"
GC = "garbage_collection_threshold"
FRACTION = "per_process_memory_fraction"


def conf_items(text: str) -> Items:
    """``"a:1,b:[1:2,>:4]"`` -> ``{"a": "1", "b": "[1:2,>:4]"}`` (commas in brackets kept)."""
    items: Items = {}
    depth = 0
    start = 0
    text = "".join(text.split())
    for i, ch in enumerate(text + ","):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            part = text[start:i]
            start = i + 1
            if part:
                key, _, value = part.partition(":")
                items[key] = value
    return items


def conf_text(items: Mapping[str, str]) -> str:
    return ",".join(f"{key}:{value}" for key, value in items.items())


def merged(base: Mapping[str, str], changes: Mapping[str, str]) -> Items:
    """`base` with `changes` applied (changed keys keep their place, new ones go last)."""
    out = dict(base)
    out.update(changes)
    return out


def parsed(items: Mapping[str, str]) -> AllocatorConfig:
    return parse_conf(conf_text(items))


def label(changes: Mapping[str, str]) -> str:
    """A short table label: ``expandable + max_split 256``."""
    parts = []
    for key, value in changes.items():
        if key == EXPANDABLE:
            parts.append("expandable" if value == "True" else "not expandable")
        elif key == MAX_SPLIT:
            parts.append(f"max_split {value}")
        elif key == ROUNDUP:
            parts.append(f"roundup {value}")
        elif key == GC:
            fraction = changes.get(FRACTION)
            parts.append(f"gc {value}" + (f"/{fraction}" if fraction else ""))
        elif key != FRACTION:
            parts.append(f"{key} {value}")
    return " + ".join(parts) or "defaults"
