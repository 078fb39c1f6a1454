"""``PYTORCH_CUDA_ALLOC_CONF`` parsing with torch's own rules and messages (spec 1.14).

The parser follows ``c10/core/AllocatorConfig.cpp`` and ``c10/cuda/CUDAAllocatorConfig.cpp``
of torch 2.13: the same tokenizer (``,``, ``:``, ``[`` and ``]`` are tokens, whitespace
is dropped), the same bounds and the same error text. Where torch would only say
``stoull`` (a number that is not one) the message here names the key and the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_runner.sim._errors import AllocatorConfigError
from gpu_runner.sim._sizes import LARGE_BUFFER, MIN_LARGE_ALLOC, ROUNDUP_INTERVALS, SIZE_MAX, MiB

# Keys torch accepts whose behaviour the simulator does not model (spec 1.17); they are
# validated like torch does and otherwise ignored.
_BOOL_KEYS_IGNORED = frozenset(
    {
        "release_lock_on_cudamalloc",
        "pinned_use_cuda_host_register",
        "pinned_use_background_threads",
        "graph_capture_record_stream_reuse",
        "pinned_free_catch_all",
        "throw_on_cudamalloc_oom",
    }
)
_SIZE_KEYS_IGNORED = frozenset(
    {
        "pinned_num_register_threads",
        "pinned_max_round_threshold_mb",
        "pinned_max_cached_size_mb",
        "pinned_reserve_segment_size_mb",
    }
)


@dataclass(frozen=True, slots=True)
class AllocatorConfig:
    """The allocator settings that change the simulated rules. Sizes are in bytes."""

    expandable_segments: bool = False
    max_split_size: int = SIZE_MAX  # SIZE_MAX: every block may be split (torch's default)
    max_non_split_rounding: int = LARGE_BUFFER
    roundup_power2_divisions: tuple[int, ...] = (0,) * ROUNDUP_INTERVALS
    garbage_collection_threshold: float = 0.0
    large_segment_size: int = LARGE_BUFFER
    per_process_memory_fraction: float = 1.0
    text: str = field(default="", compare=False)

    @property
    def max_split_size_stat(self) -> int:
        """What ``memory_stats()["max_split_size"]`` shows: -1 when unset."""
        return -1 if self.max_split_size == SIZE_MAX else self.max_split_size


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    buf: list[str] = []
    for ch in text:
        if ch in ",:[]":
            if buf:
                tokens.append("".join(buf))
                buf.clear()
            tokens.append(ch)
        elif not ch.isspace():
            buf.append(ch)
    if buf:
        tokens.append("".join(buf))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)

    def token(self, i: int, what: str) -> str:
        if i >= len(self.tokens):
            raise AllocatorConfigError(f"Error, expecting {what} value")
        return self.tokens[i]

    def expect(self, i: int, tok: str, after: str) -> None:
        if i >= len(self.tokens) or self.tokens[i] != tok:
            raise AllocatorConfigError(
                f"Error parsing CachingAllocator settings, expected {tok!r} after {after!r} "
                f"in {self.text!r}"
            )

    def size_t(self, i: int, key: str) -> int:
        tok = self.token(i, key)
        if not tok.isdigit():
            raise AllocatorConfigError(
                f"Error parsing CachingAllocator settings: {key} needs a non-negative "
                f"integer, got {tok!r}"
            )
        return int(tok)

    def double(self, i: int, key: str) -> float:
        tok = self.token(i, key)
        try:
            return float(tok)
        except ValueError:
            raise AllocatorConfigError(
                f"Error parsing CachingAllocator settings: {key} needs a number, got {tok!r}"
            ) from None

    def boolean(self, i: int, key: str) -> bool:
        tok = self.token(i, key)
        if tok == "True":
            return True
        if tok == "False":
            return False
        raise AllocatorConfigError(
            f"Expected 'True' or 'False' at index {i} in ConfigTokenizer but got '{tok}'"
        )


def _parse_divisions(p: _Parser, i: int) -> tuple[tuple[int, ...], int]:
    """Parse the value of roundup_power2_divisions starting at token `i`."""
    key = "roundup_power2_divisions"
    table = [0] * ROUNDUP_INTERVALS
    if p.token(i, key) != "[":
        value = p.size_t(i, key)
        if value == 0 or value & (value - 1):
            raise AllocatorConfigError("For roundups, the divisions has to be power of 2 ")
        return (value,) * ROUNDUP_INTERVALS, i
    first = True
    last_index = 0
    while True:
        i += 1
        boundary = p.token(i, key)
        if boundary == "]":
            break
        p.expect(i + 1, ":", boundary)
        value = p.size_t(i + 2, key)
        i += 2
        if value != 0 and value & (value - 1):
            raise AllocatorConfigError(
                "For roundups, the divisions has to be power of 2 or 0 to disable roundup "
            )
        if boundary == ">":
            for k in range(last_index + 1, ROUNDUP_INTERVALS):
                table[k] = value
        else:
            mb = p.size_t(i - 2, key)
            if mb == 0 or mb & (mb - 1):
                raise AllocatorConfigError("For roundups, the intervals have to be power of 2 ")
            index = min(mb.bit_length() - 1, ROUNDUP_INTERVALS - 1)
            if first:
                for k in range(index):
                    table[k] = value
                first = False
            table[index] = value
            last_index = index
        nxt = p.token(i + 1, key)
        if nxt == "]":
            i += 1
            break
        p.expect(i + 1, ",", str(value))
        i += 1
    return tuple(table), i


def parse_conf(text: str = "") -> AllocatorConfig:
    """Parse a ``PYTORCH_CUDA_ALLOC_CONF`` value; raise `AllocatorConfigError` like torch."""
    p = _Parser(text)
    tokens = p.tokens
    large_segment = LARGE_BUFFER
    # torch reads large_segment_size_mb first: the other bounds depend on it.
    for i, tok in enumerate(tokens):
        if tok == "large_segment_size_mb" and (i == 0 or tokens[i - 1] == ","):
            p.expect(i + 1, ":", tok)
            mb = p.size_t(i + 2, tok)
            if mb <= MIN_LARGE_ALLOC // MiB:
                raise AllocatorConfigError(
                    "CachingAllocator option large_segment_size_mb must be > "
                    f"{MIN_LARGE_ALLOC // MiB} MB"
                )
            large_segment = mb * MiB
    expandable = False
    max_split = SIZE_MAX
    rounding = large_segment
    divisions: tuple[int, ...] = (0,) * ROUNDUP_INTERVALS
    gc_threshold = 0.0
    fraction = 1.0
    i = 0
    while i < len(tokens):
        key = tokens[i]
        p.expect(i + 1, ":", key)
        i += 2
        if key in ("max_split_size_mb", "max_non_split_rounding_mb"):
            mb = p.size_t(i, key)
            if mb < large_segment // MiB:
                raise AllocatorConfigError(
                    f"CachingAllocator option {key} too small, must be >= {large_segment // MiB}"
                )
            if key == "max_split_size_mb":
                max_split = min(mb, SIZE_MAX // MiB) * MiB
            else:
                rounding = min(mb, SIZE_MAX // MiB) * MiB
        elif key == "garbage_collection_threshold":
            gc_threshold = p.double(i, key)
            if not 0.0 < gc_threshold < 1.0:
                raise AllocatorConfigError(
                    "garbage_collect_threshold is invalid, set it in (0.0, 1.0)"
                )
        elif key == "roundup_power2_divisions":
            divisions, i = _parse_divisions(p, i)
        elif key == "expandable_segments":
            expandable = p.boolean(i, key)
        elif key == "large_segment_size_mb":
            p.size_t(i, key)  # read in the first pass
        elif key == "per_process_memory_fraction":
            fraction = p.double(i, key)
            if not 0.0 <= fraction <= 1.0:
                raise AllocatorConfigError(
                    "per_process_memory_fraction is invalid, set it in [0.0, 1.0]"
                )
        elif key == "backend":
            _check_backend(p.token(i, key))
        elif key in _BOOL_KEYS_IGNORED:
            p.boolean(i, key)
        elif key in _SIZE_KEYS_IGNORED:
            p.size_t(i, key)
        else:
            raise AllocatorConfigError(f"Unrecognized key '{key}' in Accelerator allocator config.")
        if i + 1 < len(tokens):
            p.expect(i + 1, ",", tokens[i])
        i += 2
    return AllocatorConfig(
        expandable_segments=expandable,
        max_split_size=max_split,
        max_non_split_rounding=rounding,
        roundup_power2_divisions=divisions,
        garbage_collection_threshold=gc_threshold,
        large_segment_size=large_segment,
        per_process_memory_fraction=fraction,
        text=text,
    )


def _check_backend(backend: str) -> None:
    if backend not in ("native", "cudaMallocAsync"):
        raise AllocatorConfigError(
            "Unknown allocator backend, options are native and cudaMallocAsync"
        )
    if backend != "native":
        raise AllocatorConfigError(
            "backend:cudaMallocAsync is valid for torch but not simulated: the simulator "
            "models the native caching allocator only; drop the option or set backend:native"
        )
