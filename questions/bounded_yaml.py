"""Reading one question file with bounded time and memory, whoever wrote it.

A question file is a few KB of plain mappings, lists and text, nested three levels deep.
Anything far outside that is refused before it is built, with one line that says why:

- a file over `MAX_FILE_BYTES` is not read at all (only its size is looked at);
- anchors and aliases (``&a`` / ``*a``) are refused: nine lines of them expand to a
  billion strings ("billion laughs"), and a question never needs them;
- nesting deeper than `MAX_DEPTH` is refused while the parser walks in, before the
  (recursive) composer would exhaust the stack;
- a key given twice in one mapping is refused (plain YAML keeps the last silently).

libyaml's parser is used when PyYAML was built with it (it is linear where the pure-Python
scanner is quadratic on some inputs); the checks are the same either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Final

import yaml

from bot.quoting import cut

MAX_FILE_BYTES: Final = 64 * 1024
MAX_DEPTH: Final = 8

# Files up to this size that libyaml finds malformed are parsed again by PyYAML's own
# parser, whose messages name the line and the problem more precisely; it is quadratic on
# some inputs, so a large malformed file keeps libyaml's message.
DETAILED_ERRORS_BYTES: Final = 16 * 1024


class RefusedYamlError(Exception):
    """The file was refused before it was built; ``str(exc)`` is the whole reason."""


_Loader = type[yaml.SafeLoader] | type[yaml.CSafeLoader]


def _unique_mapping(
    loader: yaml.SafeLoader | yaml.CSafeLoader,
    node: yaml.MappingNode,
    deep: bool,
    construct: Callable[[yaml.MappingNode, bool], dict[Hashable, Any]],
) -> dict[Hashable, Any]:
    """A mapping, refusing a key given twice (plain PyYAML keeps the last)."""
    seen: set[object] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {cut(repr(key))}; keep only one",
                key_node.start_mark,
            )
        seen.add(key)
    return construct(node, deep)


class _DetailedLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        return _unique_mapping(self, node, deep, super().construct_mapping)


_FastLoader: _Loader | None = None
if yaml.__with_libyaml__:

    class _LibyamlLoader(yaml.CSafeLoader):
        def construct_mapping(
            self, node: yaml.MappingNode, deep: bool = False
        ) -> dict[Hashable, Any]:
            return _unique_mapping(self, node, deep, super().construct_mapping)

    _FastLoader = _LibyamlLoader


def read_limited(file: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The file's text, read only if it is at most ``limit`` bytes."""
    size = os.stat(file).st_size
    if size > limit:
        raise RefusedYamlError(_too_big(size, limit))
    with open(file, "rb") as f:
        raw = f.read(limit + 1)  # the file may have grown since the stat
    if len(raw) > limit:
        raise RefusedYamlError(_too_big(len(raw), limit))
    return raw.decode("utf-8")


def _too_big(size: int, limit: int) -> str:
    return (
        f"the file is {size:,} bytes, over the {limit // 1024} KiB limit for a question "
        f"file (a question is a few KB); shorten it"
    )


def check_structure(text: str, loader: _Loader = _DetailedLoader) -> None:
    """Refuse anchors, aliases and deep nesting, from the parser's events (nothing built)."""
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        anchor = getattr(event, "anchor", None)  # set on aliases and anchored nodes
        if anchor is not None:
            anchor = cut(str(anchor), 20)
            raise RefusedYamlError(
                f"{_line(event.start_mark)}anchors and aliases (&{anchor} / *{anchor}) are "
                f"not allowed in question files; write the value out in full"
            )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise RefusedYamlError(_too_deep(event.start_mark))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _too_deep(mark: Any) -> str:  # a PyYAML or a libyaml mark
    return (
        f"{_line(mark)}nested more than {MAX_DEPTH} levels deep; a question nests three "
        f"(en: choices: - ...), flatten it"
    )


def _line(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def load_question_yaml(file: Path) -> Any:
    """Read and parse one question file within the limits above.

    Raises `RefusedYamlError` (a limit), `yaml.YAMLError` (syntax, duplicate key),
    `OSError` or `UnicodeDecodeError` (unreadable), `ValueError` (a scalar Python cannot
    hold, e.g. a 5,000-digit number or the 45th of a month).
    """
    return parse_question_yaml(read_limited(file))


def parse_question_yaml(text: str) -> Any:
    """`load_question_yaml` for text already read (an upload): the same limits."""
    size = len(text.encode("utf-8"))
    if size > MAX_FILE_BYTES:
        raise RefusedYamlError(_too_big(size, MAX_FILE_BYTES))
    if _FastLoader is not None:
        try:
            return _load(text, _FastLoader)
        except yaml.MarkedYAMLError as exc:
            if "maximum nesting depth" in str(exc.problem):
                # libyaml's scanner looks ahead and meets its own limit (1,000) first.
                raise RefusedYamlError(_too_deep(exc.problem_mark)) from None
            if len(text) > DETAILED_ERRORS_BYTES:
                raise
    return _load(text, _DetailedLoader)


def _load(text: str, loader: _Loader) -> Any:
    check_structure(text, loader)
    return yaml.load(text, Loader=loader)  # a SafeConstructor: no Python tags


__all__ = [
    "DETAILED_ERRORS_BYTES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "RefusedYamlError",
    "check_structure",
    "load_question_yaml",
    "parse_question_yaml",
    "read_limited",
]
