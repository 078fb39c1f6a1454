"""The Slack app manifest grants exactly the scopes the adapter's Web API calls need."""

from __future__ import annotations

import ast
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
    assert set(BOT_EVENTS.values()) <= set(m["oauth_config"]["scopes"]["bot"])
    assert m["features"]["app_home"]["messages_tab_enabled"] is True
