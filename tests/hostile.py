"""Measuring how a hostile input is answered: time and peak memory, in a fresh process.

The tests assert the answer and the memory bound; the time (a performance target, noisy on
a shared machine) is `bench/hostile_inputs.py`'s, over the same attacks.

Each attack runs in its own interpreter so that its peak RSS is its own (the test
process's children include fork servers and other tests' subprocesses). The imports are
outside the timed part; an address-space cap keeps a regression from exhausting the
machine (it then fails as a MemoryError instead of swapping).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from tests.child import child_json

SECONDS = 1.0  # the target: one clear line within 1 s ...
PEAK_RSS_MB = 200  # ... and 200 MB
SAFETY_CAP_MB = 3072

_WRAPPER = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({cap} << 20, {cap} << 20))
{setup}
def _attack():
{action}
_t0 = time.perf_counter()
_out = _attack()
_seconds = time.perf_counter() - _t0
_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
try:  # ru_maxrss keeps the parent's peak across fork+exec; VmHWM is this image's own
    with open("/proc/self/status") as _f:
        _rss = next(int(l.split()[1]) for l in _f if l.startswith("VmHWM:")) / 1024
except OSError:
    pass
print(json.dumps({{"seconds": _seconds, "peak_rss_mb": _rss, "out": _out}}))
"""


@dataclass(frozen=True, slots=True)
class Measured:
    seconds: float
    peak_rss_mb: float
    out: Any  # what the attack function returned (JSON)


def measure(setup: str, action: str, *, timeout: float = 50.0) -> Measured:
    """Run ``setup`` (imports, untimed), then the body ``action`` (timed; it returns a
    JSON-able value) in a fresh interpreter; return the time, peak RSS and the value."""
    code = _WRAPPER.format(
        cap=SAFETY_CAP_MB,
        setup=textwrap.dedent(setup),
        action=textwrap.indent(textwrap.dedent(action), "    "),
    )
    data = child_json(["-c", code], timeout=timeout)
    return Measured(data["seconds"], data["peak_rss_mb"], data["out"])


def assert_bounded(m: Measured) -> None:
    """Answered within the memory target (the bench holds the time to `SECONDS`)."""
    assert m.peak_rss_mb < PEAK_RSS_MB, f"peak RSS {m.peak_rss_mb:.0f} MB"
