"""The demo registry: an explicit mapping from stable ids to demo descriptions.

A registry is a plain value built by a factory function (`gpu_runner.demos:default_registry`
for the real one, a test module's function for fault tests), never a class-level or
module-level singleton. The factory's import path travels to the fork server so the child
processes run exactly the demos the parent validated against.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from bot.errors import UserFacingError

if TYPE_CHECKING:
    from gpu_runner.demos._context import DemoOutput, RunContext

Number = int | float
# What a checked parameter holds: a number, or the canonical form of a `JsonParam`.
ParamValue = int | float | dict[str, Any]


class DemoRequestError(UserFacingError):
    """A demo request the runner refuses before anything runs (unknown id, bad parameter)."""


class DemoKind(StrEnum):
    ALLOCATOR = "allocator"  # CUDA allocator; falls back to the simulator without CUDA
    TORCH = "torch"  # device-independent point; CPU torch without CUDA
    MIXED = "mixed"  # arithmetic that runs anywhere, plus a torch part when present


@dataclass(frozen=True, slots=True)
class Param:
    """One bounded parameter: ``name`` of ``type`` in ``[minimum, maximum]``."""

    name: str
    type: type[int] | type[float]
    minimum: Number
    maximum: Number
    default: Number
    help: str = ""

    def __post_init__(self) -> None:
        if not self.minimum <= self.default <= self.maximum:
            raise ValueError(f"parameter {self.name}: default outside [min, max]")

    def parse(self, raw: object, demo: str) -> Number:
        """A value from the CLI (text) or from JSON; refuses what is not a number in range."""
        value: Number
        try:
            if isinstance(raw, bool):
                raise ValueError
            if isinstance(raw, str):
                value = int(raw, 10) if self.type is int else float(raw)
            elif isinstance(raw, int | float):
                if self.type is int and isinstance(raw, float) and not raw.is_integer():
                    raise ValueError
                value = self.type(raw)
            else:
                raise ValueError
        except ValueError:
            raise DemoRequestError(
                f"{demo}: parameter {self.name}={raw!r} is not {_article(self.type)}; "
                f"use a number from {self.minimum} to {self.maximum} "
                f"(default {self.default})"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise DemoRequestError(f"{demo}: parameter {self.name} must be a finite number")
        if not self.minimum <= value <= self.maximum:
            raise DemoRequestError(
                f"{demo}: parameter {self.name}={value} is out of range; "
                f"use {self.minimum}..{self.maximum} (default {self.default})"
            )
        return value

    def describe(self) -> str:
        return f"{self.name}={self.default} ({self.type.__name__} {self.minimum}..{self.maximum})"


def _article(t: type) -> str:
    return "an integer" if t is int else "a number"


JsonValidator = Callable[[object, str], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class JsonParam:
    """One structured parameter: a JSON object, as text (CLI, chat) or already decoded
    (a question's `inputs`). `validate(value, demo)` bounds it and returns its canonical
    form or raises `DemoRequestError`; that form travels as plain JSON to the child."""

    name: str
    validate: JsonValidator
    default_json: str  # the default, as JSON text (a frozen value)
    max_chars: int = 16_384  # of the JSON text, before anything is decoded
    help: str = ""

    def __post_init__(self) -> None:
        self.validate(json.loads(self.default_json), "default")

    @property
    def default(self) -> dict[str, Any]:
        return self.validate(json.loads(self.default_json), "default")

    def parse(self, raw: object, demo: str) -> dict[str, Any]:
        too_long = (
            f"{demo}: parameter {self.name} is longer than {self.max_chars:,} characters "
            "of JSON; shorten it"
        )
        try:
            if isinstance(raw, str):
                if len(raw) > self.max_chars:
                    raise DemoRequestError(too_long)
                value: object = json.loads(raw)
            elif isinstance(raw, Mapping):
                if len(json.dumps(raw)) > self.max_chars:
                    raise DemoRequestError(too_long)
                value = raw
            else:
                raise ValueError(f"got {type(raw).__name__}")
        except (ValueError, TypeError, RecursionError) as exc:
            raise DemoRequestError(
                f"{demo}: parameter {self.name} must be a JSON object ({exc}); "
                f"{self.help or 'see the demo description'}"
            ) from None
        return self.validate(value, demo)

    def describe(self) -> str:
        return f"{self.name}=<JSON object> ({self.help})" if self.help else f"{self.name}=<JSON>"


DemoFunction = Callable[["RunContext"], "DemoOutput"]


@dataclass(frozen=True, slots=True)
class Demo:
    """A registered demonstration. `run` executes only inside the executor's child."""

    id: str
    title: str  # English, for `quizbot demo list`; the report carries the localized title
    kind: DemoKind
    run: DemoFunction
    params: tuple[Param | JsonParam, ...] = ()
    alloc_conf: str = ""  # PYTORCH_CUDA_ALLOC_CONF the child starts with
    timeout: float = 60.0  # seconds; the executor's own limit applies when smaller

    def param(self, name: str) -> Param | JsonParam | None:
        return next((p for p in self.params if p.name == name), None)

    def defaults(self) -> dict[str, ParamValue]:
        return {p.name: p.default for p in self.params}


@dataclass(frozen=True, slots=True)
class Registry(Mapping[str, Demo]):
    """Demo id -> `Demo`, plus the import path of the factory that built it (`source`)."""

    demos: Mapping[str, Demo]
    source: str = ""
    _order: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, demos: list[Demo], source: str = "") -> Registry:
        by_id: dict[str, Demo] = {}
        for demo in demos:
            if demo.id in by_id:
                raise ValueError(f"demo id {demo.id!r} is registered twice")
            by_id[demo.id] = demo
        return cls(by_id, source, tuple(by_id))

    def __getitem__(self, key: str) -> Demo:
        return self.demos[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order or tuple(self.demos))

    def __len__(self) -> int:
        return len(self.demos)

    def ids(self) -> list[str]:
        return list(self)

    def check(self, demo: str, params: Mapping[str, object]) -> dict[str, ParamValue]:
        """The full parameter set for a request, or `DemoRequestError` naming the fix."""
        spec = self.demos.get(demo)
        if spec is None:
            raise DemoRequestError(f"unknown demo {demo!r}; registered demos: {', '.join(self)}")
        values = spec.defaults()
        for name, raw in params.items():
            p = spec.param(name)
            if p is None:
                known = ", ".join(q.name for q in spec.params) or "none"
                raise DemoRequestError(
                    f"{demo}: unknown parameter {name!r}; its parameters: {known}"
                )
            values[name] = p.parse(raw, demo)
        return values


def load_registry(source: str) -> Registry:
    """Build a registry from ``"package.module:factory"``."""
    module_name, sep, attr = source.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"registry source {source!r} must look like 'package.module:factory'")
    factory = getattr(importlib.import_module(module_name), attr)
    registry = factory()
    if not isinstance(registry, Registry):
        raise TypeError(f"{source} returned {type(registry).__name__}, not a Registry")
    return (
        registry if registry.source == source else Registry(registry.demos, source, registry._order)
    )
