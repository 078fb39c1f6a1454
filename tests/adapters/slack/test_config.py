"""Slack settings: the mode follows the tokens, mistakes name the variable and the fix."""

from __future__ import annotations

import pytest

from adapters.slack.config import SlackConfig
from bot.config import load_settings
from bot.errors import ConfigError

SLACK_VARS = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL")


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
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError, match=message):
        SlackConfig.from_settings(load_settings())
