"""Unpickling a snapshot within bounds: plain data only, and a cap on what it may build.

``torch.cuda.memory._dump_snapshot()`` pickles dicts, lists, tuples, strings, ints,
floats, booleans and None, sharing repeated frames through the memo. Before the C
unpickler sees a byte, `check_pickle` walks the opcodes once and refuses:

- every opcode that calls or names a callable (``GLOBAL``, ``REDUCE``, ``BUILD``,
  ``NEWOBJ``, extensions, persistent ids, out-of-band buffers): nothing in a snapshot
  needs one, and an allowed ``bytearray(3_000_000_000)`` is a 30-byte, 3 GB pickle;
- a memo index beyond the entries stored so far (the C unpickler sizes its memo array to
  the largest index: ``LONG_BINPUT 2**30`` is 9 bytes and 16 GB);
- a length that runs past the end of the file (the C unpickler allocates first);
- more estimated built bytes than the budget (`MAX_EXPANSION` times the file's size): a
  real snapshot builds about 9 bytes of Python objects per byte of pickle, a flood of
  empty dicts about 36.

What it lets through can still share one container many times over (a list of the same
list, 30 levels deep, is 2**30 items once walked); the parser never walks deeper than the
event dicts, and every value it echoes goes through `bot.quoting.quoted`.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any, Final

from bot.quoting import cut
from gpu_runner.sim._sizes import MiB

MAX_SNAPSHOT_BYTES: Final = 100 * MiB  # QUIZBOT_CLINIC_MAX_MB's default
MAX_EXPANSION: Final = 24  # estimated bytes built per byte of pickle
MIN_BUILD_BUDGET: Final = 16 * MiB  # small files: a floor, not a ratio

# Estimated bytes built per opcode (CPython 3.11, 64-bit), plus one container slot for
# every value pushed (a dict item is two pushes of about 24 bytes).
_SLOT = 24
_COSTS = {
    "EMPTY_DICT": 64,
    "DICT": 64,
    "EMPTY_LIST": 56,
    "LIST": 56,
    "TUPLE": 64,
    "TUPLE1": 48,
    "TUPLE2": 56,
    "TUPLE3": 64,
    "EMPTY_SET": 216,
    "FROZENSET": 216,
    "BININT": 32,
    "BININT2": 32,
    "LONG1": 40,
    "LONG4": 40,
    "INT": 32,
    "LONG": 40,
    "BINFLOAT": 24,
    "FLOAT": 24,
    "SHORT_BINUNICODE": 80,
    "BINUNICODE": 80,
    "BINUNICODE8": 80,
    "UNICODE": 80,
    "SHORT_BINSTRING": 80,
    "BINSTRING": 80,
    "STRING": 80,
    "SHORT_BINBYTES": 40,
    "BINBYTES": 40,
    "BINBYTES8": 40,
    "BYTEARRAY8": 64,
    "MEMOIZE": 16,
    "PUT": 16,
    "BINPUT": 16,
    "LONG_BINPUT": 16,
}
_PUSHES = frozenset(
    {
        *("EMPTY_DICT", "DICT", "EMPTY_LIST", "LIST", "EMPTY_TUPLE", "TUPLE"),
        *("TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_SET", "FROZENSET", "NONE", "NEWTRUE"),
        *("NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "LONG4", "INT", "LONG"),
        *("BINFLOAT", "FLOAT", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"),
        *("SHORT_BINSTRING", "BINSTRING", "STRING", "SHORT_BINBYTES", "BINBYTES"),
        *("BINBYTES8", "BYTEARRAY8", "GET", "BINGET", "LONG_BINGET", "DUP"),
    }
)
_REFUSED = frozenset(
    {
        *("GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "BUILD", "NEWOBJ"),
        *("NEWOBJ_EX", "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID", "NEXT_BUFFER"),
        "READONLY_BUFFER",
    }
)

# Opcode kinds: a fixed argument of N >= 0 bytes, or one of these.
_UNKNOWN, _REFUSE, _LINE, _COUNT1, _COUNT4, _COUNT8, _STOP = -1, -2, -3, -4, -5, -6, -7
_MEMOIZE, _PUT_LINE, _PUT1, _PUT4 = -8, -9, -10, -11
_SPECIAL = {"STOP": _STOP, "MEMOIZE": _MEMOIZE, "PUT": _PUT_LINE, "BINPUT": _PUT1}
_SPECIAL["LONG_BINPUT"] = _PUT4
_COUNTED = {-2: _COUNT1, -3: _COUNT4, -4: _COUNT4, -5: _COUNT8}


def _tables() -> tuple[list[int], list[int], list[str]]:
    kinds, costs, names = [_UNKNOWN] * 256, [0] * 256, [""] * 256
    for op in pickletools.opcodes:
        code = op.code.encode("latin-1")[0]
        names[code] = op.name
        costs[code] = _COSTS.get(op.name, 0) + (_SLOT if op.name in _PUSHES else 0)
        n = op.arg.n if op.arg is not None else 0
        if op.name in _REFUSED:
            kinds[code] = _REFUSE
        elif op.name in _SPECIAL:
            kinds[code] = _SPECIAL[op.name]
        elif n == pickletools.UP_TO_NEWLINE:
            kinds[code] = _LINE
        elif n < 0:
            kinds[code] = _COUNTED[n]
        else:
            kinds[code] = n
    return kinds, costs, names


_KINDS, _OP_COSTS, _NAMES = _tables()


class RefusedPickleError(pickle.UnpicklingError):
    """The pickle holds more than plain data, or would build more than its budget."""


class BrokenPickleError(pickle.UnpicklingError):
    """The bytes are not a whole pickle (truncated, garbage, an unknown opcode)."""


def build_budget(size: int) -> int:
    """The most estimated bytes a pickle of ``size`` bytes may build."""
    return max(MIN_BUILD_BUDGET, MAX_EXPANSION * size)


def check_pickle(data: bytes, budget: int | None = None) -> int:
    """Walk the opcodes of ``data`` without building anything; return the estimated bytes
    the pickle builds. Raises `RefusedPickleError` or `BrokenPickleError`."""
    limit = build_budget(len(data)) if budget is None else budget
    kinds, costs = _KINDS, _OP_COSTS
    end = len(data)
    pos = memo = built = 0
    while pos < end:
        op = data[pos]
        pos += 1
        kind = kinds[op]
        if kind >= 0:
            pos += kind
        elif kind == _MEMOIZE:
            memo += 1
        elif kind == _COUNT1:
            if pos >= end:
                break
            size = data[pos]
            pos += 1 + size
            built += size
            if pos > end:
                break
        elif kind in (_COUNT4, _COUNT8):
            width = 4 if kind == _COUNT4 else 8
            size = int.from_bytes(data[pos : pos + width], "little")
            pos += width + size
            if pos > end:  # the C unpickler would allocate ``size`` bytes first
                break
            built += size
        elif kind == _LINE:
            newline = data.find(b"\n", pos)
            if newline < 0:
                break
            built += newline - pos
            pos = newline + 1
        elif kind == _STOP:
            if built + costs[op] > limit:
                raise _over_budget(built, limit)
            return built
        elif kind in (_PUT1, _PUT4, _PUT_LINE):
            pos, memo = _put(data, pos, kind, memo)
        elif kind == _REFUSE:
            raise RefusedPickleError(_refusal(data, pos - 1))
        else:
            raise BrokenPickleError(f"byte {op:#04x} at offset {pos - 1} is not a pickle opcode")
        built += costs[op]
        if built > limit:
            raise _over_budget(built, limit)
    raise BrokenPickleError("it ends before its STOP opcode: the file is truncated")


def _refusal(data: bytes, offset: int) -> str:
    """Why the opcode at ``offset`` is refused, naming the callable when it is named."""
    name = _NAMES[data[offset]]
    if name in ("GLOBAL", "INST", "STACK_GLOBAL") and offset <= _NAMING_SCAN_BYTES:
        target = _global_name(data, offset)
        if target:
            return f"it refers to {target}, which is not plain data"
    return f"it uses the {name} opcode, which calls or names code; a snapshot is plain data"


# Naming the global of STACK_GLOBAL takes a slow walk from the start (pickletools).
_NAMING_SCAN_BYTES = 1 * MiB


def _global_name(data: bytes, offset: int) -> str:
    memo: list[object] = []
    pushed: list[object] = []  # the last values pushed: STACK_GLOBAL takes two strings
    for op, arg, pos in pickletools.genops(data):
        if pos == offset:
            if op.name != "STACK_GLOBAL":
                return cut(str(arg).replace(" ", "."), 120)
            if len(pushed) == 2 and all(isinstance(p, str) for p in pushed):
                return cut(f"{pushed[0]}.{pushed[1]}", 120)
            return ""
        if op.name == "MEMOIZE" and pushed:
            memo.append(pushed[-1])
        elif op.name in ("BINGET", "LONG_BINGET") and isinstance(arg, int) and arg < len(memo):
            pushed = [*pushed[-1:], memo[arg]]
        elif isinstance(arg, str) and op.name.endswith("UNICODE"):
            pushed = [*pushed[-1:], arg]
        elif op.name in _PUSHES:
            pushed = [*pushed[-1:], None]
    return ""


def _put(data: bytes, pos: int, kind: int, memo: int) -> tuple[int, int]:
    if kind == _PUT1:
        index, pos = data[pos], pos + 1
    elif kind == _PUT4:
        index, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
    else:
        newline = data.find(b"\n", pos)
        text = data[pos:newline] if newline >= 0 else b""
        if not text.isdigit() or len(text) > 12:
            raise BrokenPickleError(f"a PUT at offset {pos - 1} has no memo index")
        index, pos = int(text), newline + 1
    if index > memo:
        # The pickler numbers memo entries 0, 1, 2, ...; the C unpickler would size its
        # memo array to this index (8 bytes per slot) before storing anything.
        raise RefusedPickleError(
            f"it stores memo entry {index:,} after only {memo:,} entries (the memo array "
            f"would be sized to match); pickle.dump never writes that"
        )
    return pos, max(memo, index + 1)


def _over_budget(built: int, limit: int) -> RefusedPickleError:
    return RefusedPickleError(
        f"it would build more than {limit // MiB:,} MiB of objects ({MAX_EXPANSION} times "
        f"its size; a real snapshot builds about 9 times its size)"
    )


class _PlainDataUnpickler(pickle.Unpickler):
    """The C unpickler with no classes at all: the scan already refused their opcodes."""

    def find_class(self, module: str, name: str) -> Any:
        raise RefusedPickleError(f"it refers to {module}.{name}, which is not plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise RefusedPickleError("it uses persistent ids, which are not plain data")


def restricted_loads(data: bytes, budget: int | None = None) -> Any:
    """Unpickle plain data only (dicts, lists, tuples, str, bytes, numbers, sets), within
    the build budget (default `build_budget(len(data))`)."""
    check_pickle(data, budget)
    return _PlainDataUnpickler(io.BytesIO(data)).load()


__all__ = [
    "MAX_EXPANSION",
    "MAX_SNAPSHOT_BYTES",
    "MIN_BUILD_BUDGET",
    "BrokenPickleError",
    "RefusedPickleError",
    "build_budget",
    "check_pickle",
    "restricted_loads",
]
