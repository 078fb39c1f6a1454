"""A sorted set of integer keys: the allocator's ordered block sets.

torch keeps free blocks in ``std::set`` ordered by (stream, size, address); here each
(pool, stream) has one `SortedKeys` of ``size << 64 | address`` integers. The keys live
in a list of sorted buckets, so an insert moves at most one bucket's worth of pointers
however many blocks are free (the idea of ``sortedcontainers``, written out small).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator

_SPLIT_AT = 512  # a bucket longer than this is cut in two


class SortedKeys:
    """Distinct non-negative ints in ascending order with O(log n) search."""

    __slots__ = ("_lists", "_maxes")

    def __init__(self) -> None:
        self._lists: list[list[int]] = []
        self._maxes: list[int] = []

    def __len__(self) -> int:
        return sum(len(sub) for sub in self._lists)

    def __bool__(self) -> bool:
        return bool(self._maxes)

    def __iter__(self) -> Iterator[int]:
        for sub in self._lists:
            yield from sub

    def __contains__(self, key: int) -> bool:
        i = bisect_left(self._maxes, key)
        if i == len(self._maxes):
            return False
        sub = self._lists[i]
        return sub[bisect_left(sub, key)] == key

    def add(self, key: int) -> None:
        """Insert `key` (it must not be present)."""
        maxes = self._maxes
        i = bisect_left(maxes, key)
        try:
            sub = self._lists[i]
        except IndexError:  # beyond every bucket: append to the last one
            if not maxes:
                self._lists.append([key])
                maxes.append(key)
                return
            i -= 1
            sub = self._lists[i]
            sub.append(key)
            maxes[i] = key
        else:
            insort(sub, key)
        if len(sub) > _SPLIT_AT:
            half = len(sub) >> 1
            self._lists.insert(i + 1, sub[half:])
            del sub[half:]
            maxes.insert(i, sub[-1])

    def remove(self, key: int) -> None:
        """Delete `key`; `KeyError` if absent."""
        maxes = self._maxes
        i = bisect_left(maxes, key)
        try:
            sub = self._lists[i]
        except IndexError:
            raise KeyError(key) from None
        j = bisect_left(sub, key)
        if sub[j] != key:
            raise KeyError(key)
        del sub[j]
        if sub:
            maxes[i] = sub[-1]
        else:
            del self._lists[i]
            del maxes[i]

    def ceil(self, key: int) -> int:
        """The smallest key >= `key`, or -1."""
        i = bisect_left(self._maxes, key)
        try:
            sub = self._lists[i]
        except IndexError:
            return -1
        return sub[bisect_left(sub, key)]

    def last(self) -> int:
        """The largest key, or -1 when empty."""
        return self._maxes[-1] if self._maxes else -1

    def below_desc(self, key: int) -> list[int]:
        """Keys < `key`, descending (a copy: the caller may mutate the set)."""
        out: list[int] = []
        for sub in reversed(self._lists):
            if sub[0] >= key:
                continue
            out.extend(reversed(sub[: bisect_left(sub, key)]))
        return out
