"""Slack settings: the mode follows the tokens, mistakes name the variable and the fix."""

from __future__ import annotations

import pytest

from adapters.slack.config import SlackConfig
from bot.config import load_settings
from bot.errors import ConfigError

SLACK_VARS = (
    "SLACK_BOT_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_APP_TOKEN",
    "SLACK_API_URL",
    "SLACK_CLIENT_ID",
    "SLACK_CLIENT_SECRET",
    "QUIZBOT_PUBLIC_URL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*SLACK_VARS, "QUIZBOT_ADMINS"):
        monkeypatch.delenv(var, raising=False)


def test_no_bot_token_means_no_slack() -> None:
    assert SlackConfig.from_settings(load_settings()) is None


def test_an_app_token_selects_socket_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1")
    monkeypatch.setenv("QUIZBOT_ADMINS", "U1, U2")
    config = SlackConfig.from_settings(load_settings())
    assert config is not None and config.socket_mode
    assert config.admin_ids == frozenset({"U1", "U2"})
    assert config.api_url == "https://slack.com/api/"


def test_a_signing_secret_alone_selects_http_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "abc")
    monkeypatch.setenv("SLACK_API_URL", "https://slack-gov.com/api/")
    config = SlackConfig.from_settings(load_settings())
    assert config is not None and not config.socket_mode and config.signing_secret == "abc"
    assert config.api_url == "https://slack-gov.com/api/"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SLACK_BOT_TOKEN": "xoxp-user-token", "SLACK_APP_TOKEN": "xapp-1"}, "SLACK_BOT_TOKEN"),
        ({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"}, "SLACK_APP_TOKEN"),
        ({"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_APP_TOKEN.*or SLACK_SIGNING_SECRET"),
        (
            {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "SLACK_API_URL": "slack"},
            "SLACK_API_URL",
        ),
    ],
)
def test_mistakes_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    refused(monkeypatch, env, message)


def refused(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str) -> None:
    """With `env` set, the Slack configuration is refused with `message`."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        SlackConfig.from_settings(load_settings())


def test_client_credentials_without_a_bot_token_select_the_multi_workspace_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLACK_CLIENT_ID", "1111.2222")
    monkeypatch.setenv("SLACK_CLIENT_SECRET", "s3cret")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "abc")
    monkeypatch.setenv("QUIZBOT_PUBLIC_URL", "https://quiz.example.com/")
    config = SlackConfig.from_settings(load_settings())
    assert config is not None and config.multi_workspace and not config.socket_mode
    assert config.mode == "multi-workspace OAuth"
    assert config.redirect_uri == "https://quiz.example.com/slack/oauth_redirect"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SLACK_CLIENT_ID": "1111.2222", "SLACK_SIGNING_SECRET": "abc"}, "SLACK_CLIENT_SECRET"),
        (
            {"SLACK_CLIENT_ID": "1", "SLACK_CLIENT_SECRET": "s", "SLACK_APP_TOKEN": "xapp-1"},
            "unset SLACK_APP_TOKEN",
        ),
        ({"SLACK_CLIENT_ID": "1", "SLACK_CLIENT_SECRET": "s"}, "needs SLACK_SIGNING_SECRET"),
    ],
)
def test_the_multi_workspace_mode_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    refused(monkeypatch, env, message)
