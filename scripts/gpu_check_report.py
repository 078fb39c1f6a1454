"""The summary of scripts/gpu_check.sh, as Markdown on stdout; exit 0 (passed or skipped) or 1.

    python scripts/gpu_check_report.py DIR CUDA TESTS_RC DEMOS_RC SECONDS

Reads DIR/device.txt, DIR/gpu-tests.xml (pytest's JUnit XML) and each demo's
DIR/demos/<id>/{cuda,simulated}/metrics.json. The verdict comes from the tests; the demo
table puts the GPU's figures beside the simulator's, informational (timings and free
device memory differ by nature, so they are left out of the comparison).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

# Leaves that are measurements of this machine, not rule-determined figures.
NOT_RULES = (
    "_s",
    "_ms",
    "_us",
    "us_per_iter",
    "gb_per_s",
    "device",
    "free_delta",
    "other_allocations",
    "oom_message",
    "non_releasable",
    "simulated",
    "method",
    "max_abs_diff",
    "hidden_fraction",
    "matmuls",
)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, list):
        out = {}
        for i, item in enumerate(value):
            out |= flatten(item, f"{prefix}[{i}]")
        return out
    return {prefix: value}


def compare(cuda: dict[str, Any], sim: dict[str, Any]) -> tuple[int, list[str]]:
    a, b = flatten(cuda), flatten(sim)
    keys = [k for k in a.keys() & b.keys() if not any(part in k for part in NOT_RULES)]
    differ = sorted(k for k in keys if a[k] != b[k])
    return len(keys) - len(differ), differ


def tests_section(xml: Path) -> tuple[list[str], dict[str, int]]:
    if not xml.exists():
        return ["- no test report (pytest did not run)"], {"failed": 1}
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    lines = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
            node = case.find("failure")
            node = node if node is not None else case.find("error")
            message = (node.get("message") or "").splitlines()[0][:200] if node is not None else ""
            lines.append(f"- FAILED `{name}`: {message}")
        elif (skip := case.find("skipped")) is not None:
            counts["skipped"] += 1
            lines.append(f"- skipped `{name}`: {(skip.get('message') or '')[:120]}")
        else:
            counts["passed"] += 1
            lines.append(f"- passed `{name}`")
    return lines, counts


def demos_section(root: Path) -> list[str]:
    rows = ["| demo | CUDA run | simulated | figures equal | differing |", "|---|---|---|---|---|"]
    for demo in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        runs = {}
        for mode in ("cuda", "simulated"):
            path = demo / mode / "metrics.json"
            runs[mode] = json.loads(path.read_text()) if path.exists() else None
        cuda, sim = runs["cuda"], runs["simulated"]
        state = {m: (r["state"] if r else "no result") for m, r in runs.items()}
        same, differ = (0, [])
        if cuda and sim and cuda["state"] == sim["state"] == "succeeded":
            same, differ = compare(cuda["metrics"], sim["metrics"])
        shown = ", ".join(f"`{k}`" for k in differ[:6]) + (" …" if len(differ) > 6 else "")
        rows.append(
            f"| {demo.name} | {state['cuda']} | {state['simulated']} | {same} | "
            f"{len(differ)} {shown} |"
        )
    return rows


def main(argv: list[str]) -> int:
    root = Path(argv[1])
    cuda, tests_rc, demos_rc, seconds = argv[2] == "1", int(argv[3]), int(argv[4]), argv[5]
    device = (root / "device.txt").read_text().strip() if (root / "device.txt").exists() else "?"
    test_lines, counts = tests_section(root / "gpu-tests.xml")
    if not cuda:
        verdict = "SKIPPED: no CUDA here, nothing was checked on a GPU"
        ok = tests_rc in (0, 5) and counts.get("failed", 0) == 0
    else:
        ok = tests_rc == 0 and demos_rc == 0 and counts.get("failed", 0) == 0
        verdict = "PASSED" if ok else "FAILED"
        if ok and (counts.get("skipped", 0) or not counts.get("passed", 0)):
            # On a GPU a skipped GPU test is a check that did not happen.
            ok, verdict = False, "INCOMPLETE: GPU-marked tests skipped on a CUDA machine"
    today = dt.date.today().isoformat()
    out = [
        "# GPU check",
        "",
        f"- verdict: **{verdict}**",
        f"- device: {device}",
        f"- date: {today}, {seconds} s in all",
        f"- GPU-marked tests: {counts.get('passed', 0)} passed, {counts.get('failed', 0)} "
        f"failed, {counts.get('skipped', 0)} skipped (pytest exit {tests_rc})",
        "",
        "## GPU-marked tests (simulator vs CUDA)",
        "",
        *test_lines,
        "",
        "## Every demo on CUDA, beside the simulator",
        "",
        *(demos_section(root / "demos") if cuda else ["skipped: no CUDA here"]),
    ]
    if cuda and ok:
        gpu, _, rest = device.partition(" · torch ")
        version = rest.split(" · ")[0]
        out += [
            "",
            "To record this check: in `gpu_runner/sim/_provenance.py` set",
            f'`GPU_CHECK = GpuCheck("{gpu}", "{version}", "{today}")`, and in `docs/runner.md`',
            f"`GPU check record: {gpu} · torch {version} · {today}`.",
        ]
    print("\n".join(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
