"""The Slack app manifest grants exactly the scopes the adapter's Web API calls need."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import yaml
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.scopes import APP_TOKEN_METHODS, BOT_EVENTS, METHOD_SCOPES, bot_scopes

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "deploy" / "slack" / "manifest.yaml"
ADAPTER = ROOT / "adapters" / "slack"
# slack_sdk helpers that are several Web API calls.
COMPOSITE = {"files_upload_v2": ["files.getUploadURLExternal", "files.completeUploadExternal"]}
# Calls Bolt makes on the adapter's client by itself.
BY_BOLT = {"auth.test"}


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return data


def web_api_methods_called() -> set[str]:
    """Every `AsyncWebClient` method the adapter's code calls, as Web API method names."""
    names: set[str] = set()
    for path in ADAPTER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                if (
                    not attr.startswith("_")
                    and attr != "api_call"
                    and hasattr(AsyncWebClient, attr)
                ):
                    names.add(attr)
    methods: set[str] = set()
    for name in names:
        methods.update(COMPOSITE.get(name, [name.replace("_", ".")]))
    return methods


def test_the_scope_table_names_every_web_api_method_the_adapter_calls() -> None:
    called = web_api_methods_called()
    assert {"chat.postMessage", "files.getUploadURLExternal", "users.info"} <= called
    assert called - APP_TOKEN_METHODS.keys() <= METHOD_SCOPES.keys(), (
        "add these to METHOD_SCOPES: " + repr(sorted(called - METHOD_SCOPES.keys()))
    )
    assert METHOD_SCOPES.keys() <= called | BY_BOLT, "METHOD_SCOPES lists methods never called"


def test_the_manifest_grants_exactly_the_scopes_the_adapter_needs() -> None:
    granted = set(manifest()["oauth_config"]["scopes"]["bot"])
    assert granted >= bot_scopes(), f"missing scopes: {sorted(bot_scopes() - granted)}"
    assert granted <= bot_scopes(), f"unneeded scopes: {sorted(granted - bot_scopes())}"


def test_the_manifest_has_the_command_interactivity_and_socket_mode() -> None:
    m = manifest()
    (command,) = m["features"]["slash_commands"]
    assert command["command"] == "/quiz"
    assert m["settings"]["interactivity"]["is_enabled"] is True
    assert m["settings"]["socket_mode_enabled"] is True
    assert m["features"]["bot_user"]["display_name"]


def test_the_manifest_subscribes_to_the_events_the_adapter_listens_to() -> None:
    m = manifest()
    assert set(m["settings"]["event_subscriptions"]["bot_events"]) == set(BOT_EVENTS)
    assert {s for s in BOT_EVENTS.values() if s} <= set(m["oauth_config"]["scopes"]["bot"])
    assert m["features"]["app_home"]["messages_tab_enabled"] is True
    assert m["features"]["app_home"]["home_tab_enabled"] is True


def test_the_setup_guide_explains_every_scope_the_manifest_grants() -> None:
    guide = (ROOT / "deploy" / "slack" / "README.md").read_text()
    table = guide.split("## Scopes and why", 1)[1]
    explained = set(re.findall(r"^\| `([a-z:.]+)` \|", table, re.M))
    assert explained == set(manifest()["oauth_config"]["scopes"]["bot"])


def test_the_http_mode_urls_are_counted_right() -> None:
    text = MANIFEST.read_text()
    marked = len(re.findall(r"https://<your-host>/slack/events\s+# HTTP mode only", text))
    words = {"two": 2, "three": 3, "four": 4, "five": 5}
    (said,) = re.findall(r"the (\w+) URLs marked below", text)
    assert words[said] == marked == 3  # the command, the events and interactivity
    guide = (ROOT / "deploy" / "slack" / "README.md").read_text()
    http = guide.split("## HTTP mode", 1)[1].split("\n## ", 1)[0]
    assert "*Event Subscriptions*" in http and "*Interactivity*" in http and "/quiz" in http
