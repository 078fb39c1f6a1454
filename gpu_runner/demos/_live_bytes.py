"""Live bytes of the storages torch creates, on any device (CPU and meta included).

A `TorchDispatchMode` sees every op: it counts the bytes of each new storage an op
returns and subtracts them when the storage dies (`weakref.finalize`). On the CPU, where
there is no caching allocator to ask, this measures what a step allocates — the bytes torch
chose, not the ones the demo's code assumed. Storages made before the mode (weights,
inputs) are passed in `ignore`.
"""

from __future__ import annotations

import importlib
import weakref
from typing import Any


def live_bytes_tracker(torch: Any, ignore: set[int] | None = None) -> Any:
    """A dispatch mode with `.live` (bytes alive now) and `.peak` (the most alive at once)."""
    # Imported by name so type checking does not depend on torch being installed.
    dispatch: Any = importlib.import_module("torch.utils._python_dispatch")
    tree_flatten = importlib.import_module("torch.utils._pytree").tree_flatten
    skip = ignore or set()

    class LiveBytes(dispatch.TorchDispatchMode):  # type: ignore[misc]
        """Bytes of the storages created under the mode that are still alive, and the peak."""

        def __init__(self) -> None:
            super().__init__()
            self.live = 0
            self.peak = 0
            self._sizes: dict[int, int] = {}

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor):
                    continue
                storage = t.untyped_storage()
                key = id(storage)
                if key in self._sizes or key in skip:
                    continue  # a view of a storage already counted, or a weight / input
                self._sizes[key] = n = int(storage.nbytes())
                self.live += n
                self.peak = max(self.peak, self.live)
                weakref.finalize(storage, self._dead, key)
            return out

        def _dead(self, key: int) -> None:
            self.live -= self._sizes.pop(key)

        def reset_peak(self) -> None:
            self.peak = self.live

    return LiveBytes()
