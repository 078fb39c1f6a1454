"""Hostile inputs on every file and value door: time and peak RSS of the answer.

    .venv/bin/python bench/hostile_inputs.py

Each attack runs in a fresh interpreter (imports untimed; peak RSS is the process's own
VmHWM, imports included): question files (billion laughs, 10 MB, 30,000-deep, a
5,000-digit number, a bad date), snapshot pickles (repr bomb, bytearray call, memo index,
dict flood, shared events and devices, a huge length), team-pack imports (half a million
rows, a 7 MB field, deep and long JSON), the clinic's red-team files, `db restore` of foreign
files and a directory, and absurd schedule words. The attacks are the tests' own
(`tests/*/test_hostile_*.py`, `tests/clinic/test_input.py`, `tests/storage/test_restore.py`),
which assert the answer and the memory; the time is measured here only.

Target (issue 14): every bad input answered by one clear line within 1 s and 200 MB.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import target
from tests.hostile import PEAK_RSS_MB, SECONDS, Measured, measure

SNAPSHOT = """
try:
    load_snapshot({path!r})
except SnapshotError as exc:
    return str(exc)
return "accepted"
"""
RESTORE = """
try:
    restore({url!r}, Path({path!r}))
except StorageError as exc:
    return str(exc)
return "accepted"
"""
SCHEDULE = """
try:
    parse_schedule_request({words}, translator(Locale.EN), "UTC", datetime.now(UTC))
except UserFacingError as exc:
    return str(exc)
return "accepted"
"""


def question_attacks(tmp: Path) -> Iterator[tuple[str, Measured]]:
    import yaml

    from tests.questions.conftest import valid_question
    from tests.questions.test_hostile_files import ATTACKS

    for name, (text, _) in ATTACKS.items():
        bank = tmp / f"bank-{name}"
        bank.mkdir()
        (bank / "sample-question.yaml").write_text(yaml.safe_dump(valid_question()))
        (bank / name).write_text(text)
        yield (
            f"yaml_{Path(name).stem}",
            measure(
                "from pathlib import Path\nfrom questions import validate_bank\n",
                f"return '\\n'.join(validate_bank(Path({str(bank)!r})))",
            ),
        )


def snapshot_attacks(tmp: Path) -> Iterator[tuple[str, Measured]]:
    from tests.sim.test_hostile_snapshots import ATTACKS

    for name, (make, _) in ATTACKS.items():
        path = tmp / f"{name}.pickle"
        path.write_bytes(make())
        yield (
            f"pickle_{name}",
            measure(
                "from gpu_runner.sim import SnapshotError, load_snapshot\n",
                SNAPSHOT.format(path=str(path)),
            ),
        )


def import_attacks(tmp: Path) -> Iterator[tuple[str, Measured]]:
    from tests.questions.test_hostile_imports import ATTACKS, measure_import

    for name, (make, _) in ATTACKS.items():
        path = tmp / f"import-{name}"
        path.write_text(make())
        yield f"import_{name.replace('.', '_')}", measure_import(path)


def clinic_attacks(tmp: Path) -> Iterator[tuple[str, Measured]]:
    from tests.clinic import snapshots
    from tests.clinic.test_input import RED_TEAM_DEVICES, measure_read

    for devices in RED_TEAM_DEVICES:
        path = tmp / f"clinic-{devices}.pickle"
        path.write_bytes(snapshots.repeated_by_reference(devices=devices, alloc_last=devices < 64))
        yield f"clinic_red_team_{devices}_devices", measure_read(path)


def restore_attacks(tmp: Path) -> Iterator[tuple[str, Measured]]:
    from tests.storage.test_restore import NOT_QUIZBOT, migrated

    live = migrated(tmp / "live.db")
    for kind, (make, _) in NOT_QUIZBOT.items():
        candidate = make(tmp / f"restore-{kind}.db")
        yield (
            f"restore_{kind}",
            measure(
                "from pathlib import Path\nfrom bot.errors import StorageError\n"
                "from storage.backup import restore\n"
                "import storage.restore_check as c\nc.known_revisions()\n",
                RESTORE.format(url=f"sqlite:///{live}", path=str(candidate)),
            ),
        )


def schedule_attacks() -> Iterator[tuple[str, Measured]]:
    setup = (
        "from datetime import UTC, datetime\nfrom bot.domain import Locale\n"
        "from bot.errors import UserFacingError\nfrom bot.i18n import translator\n"
        "from bot.scheduling import parse_schedule_request\n"
    )
    cases = {  # the words, as Python source (built in the child)
        "window_1e20_days": '["09:30", "UTC", "window", "99999999999999999999d"]',
        "window_100k_digits": '["09:30", "UTC", "window", "9" * 100_000 + "d"]',
        "cron_step_1e20": '["cron", "*/100000000000000000000 * * * *", "UTC"]',
        "cron_1MB": '["cron", "0," * 500_000 + "0 9 * * *", "UTC"]',
        "zone_700KB": '["09:30", "Europe/" * 100_000]',
        "off_1e23": None,
    }
    for name, words in cases.items():
        if words is None:  # `/quiz schedule off 10**23`: the id is checked before storage
            action = "return repr(parse_schedule_id('1' + '0' * 23))"
            yield (
                f"schedule_{name}",
                measure("from bot.scheduling.spec import parse_schedule_id\n", action),
            )
            continue
        yield f"schedule_{name}", measure(setup, SCHEDULE.format(words=words))


def main() -> int:
    results: list[tuple[str, Measured]] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for attacks in (
            question_attacks(tmp),
            snapshot_attacks(tmp),
            import_attacks(tmp),
            clinic_attacks(tmp),
            restore_attacks(tmp),
            schedule_attacks(),
        ):
            for name, m in attacks:
                first = str(m.out).splitlines()[0] if m.out else ""
                print(f"{name:<32} {m.seconds:7.3f} s {m.peak_rss_mb:6.0f} MB  {first[:110]}")
                results.append((name, m))
    for name, m in results:
        refused = m.out not in ("accepted", repr(10**23))
        ok = m.seconds < SECONDS and m.peak_rss_mb < PEAK_RSS_MB and refused
        target(
            f"hostile_{name}",
            f"{m.seconds:.3f} s, {m.peak_rss_mb:.0f} MB",
            f"refused in < {SECONDS:g} s and < {PEAK_RSS_MB} MB",
            ok,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
