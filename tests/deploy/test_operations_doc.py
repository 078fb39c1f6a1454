"""docs/operations.md and the README against the code: the configuration table is generated
from `Settings`, every variable, metric, alert and `quizbot …` command the guide names
exists, and the README's configuration table lists exactly the settings."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest
import yaml

from bot.cli import build_parser
from bot.metrics import QuizMetrics
from tests.deploy.common import DEPLOY, OPERATIONS, ROOT, SETTINGS_VARS, unknown_vars
from tests.deploy.render_settings import current_section, rendered_section

REGENERATE = "regenerate it: .venv/bin/python -m tests.deploy.render_settings --update"
VAR = re.compile(r"\b(?:QUIZBOT|SLACK|DISCORD)_[A-Z0-9_]*[A-Z0-9]\b")
METRIC = re.compile(r"\bquizbot_[a-z_]+[a-z]\b")


@pytest.fixture(scope="module")
def doc() -> str:
    return OPERATIONS.read_text()


def metric_names() -> set[str]:
    rendered = QuizMetrics().registry.render()
    return set(re.findall(r"^# TYPE (\S+) ", rendered, re.M))


def test_configuration_table_is_generated_from_the_settings_model(doc: str) -> None:
    section = current_section(doc)
    assert section is not None, f"docs/operations.md has no settings markers; {REGENERATE}"
    assert section == rendered_section(), f"the configuration table is out of date; {REGENERATE}"


def test_every_variable_the_guide_names_is_a_setting_and_every_setting_is_documented(
    doc: str,
) -> None:
    named = set(VAR.findall(doc))
    assert unknown_vars(named) == []
    assert sorted(SETTINGS_VARS - named) == []


def test_readme_configuration_table_lists_exactly_the_settings() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \|", section, re.M)
    assert len(rows) == len(set(rows)), "a variable is listed twice"
    assert unknown_vars(set(rows)) == [], "the README lists a variable the bot does not read"
    assert sorted(SETTINGS_VARS - set(rows)) == [], "the README misses a variable"


def test_metric_names_in_the_guide_are_the_ones_the_bot_exposes(doc: str) -> None:
    exposed = metric_names()
    assert len(exposed) >= 7
    assert set(METRIC.findall(doc)) == exposed


def test_alert_rules_use_exposed_metrics_and_match_the_guide(doc: str) -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yaml").read_text())
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    assert alerts and all({"alert", "expr"} <= set(r) for r in alerts)
    used = {m for r in alerts for m in METRIC.findall(str(r["expr"]))}
    assert used and used <= metric_names()
    section = doc.split("### What to alert on", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `(Quizbot\w+)`", section, re.M)) == {r["alert"] for r in alerts}


def _commands(doc: str) -> list[str]:
    """`quizbot …` lines of code blocks and inline code spans (placeholders with … left out)."""
    found = []
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", doc, re.M | re.S)
    for block in blocks:
        for line in block.splitlines():
            words = line.split()
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]  # VAR=value quizbot …
            if words and (words[0] == "quizbot" or words[0].endswith("/quizbot")):
                found.append(" ".join(words))
    found += re.findall(r"`(quizbot [^`]+)`", doc)
    return [c for c in found if "…" not in c]


def test_every_quizbot_command_in_the_guide_exists(doc: str) -> None:
    parser = build_parser()
    commands = _commands(doc)
    assert len(commands) >= 8
    for command in commands:
        command = re.sub(r"\$\([^)]*\)", "X", command)  # $(date +%F)
        args = shlex.split(command, comments=True)[1:]
        try:
            ns = parser.parse_args(args)
        except SystemExit:
            pytest.fail(f"docs/operations.md: `{command}` is not a valid quizbot command")
        assert isinstance(ns, argparse.Namespace) and callable(getattr(ns, "func", None)), command


def test_guide_links_to_files_that_exist(doc: str) -> None:
    for target in re.findall(r"\]\((\.\./[^)#]+|[a-z_]+\.md)\)", doc):
        assert (OPERATIONS.parent / target).exists(), target
