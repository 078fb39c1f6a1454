"""Settings: validated at start, errors name the variable and the fix, secrets stay secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import RunnerKind, load_settings
from bot.errors import ConfigError


def test_defaults_are_the_embedded_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("QUIZBOT_DATABASE_URL", "QUIZBOT_RUNNER", "SLACK_BOT_TOKEN", "DISCORD_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    s = load_settings()
    assert s.database_url is None and s.runner is RunnerKind.LOCAL
    assert s.slack_bot_token is None and s.discord_token is None


def test_unknown_time_zone_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUIZBOT_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ConfigError, match=r"QUIZBOT_TIMEZONE.*Europe/Athens"):
        load_settings()


def test_bad_runner_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUIZBOT_RUNNER", "gpu")
    with pytest.raises(ConfigError, match="QUIZBOT_RUNNER"):
        load_settings()


def test_secrets_do_not_appear_in_the_settings_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-very-secret")
    monkeypatch.setenv("DISCORD_TOKEN", "discord-very-secret")
    s = load_settings()
    assert "very-secret" not in repr(s) and "very-secret" not in str(s.model_dump())
    assert s.slack_bot_token is not None
    assert s.slack_bot_token.get_secret_value() == "xoxb-very-secret"


def test_toml_file_is_read_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "quizbot.toml"
    f.write_text('QUIZBOT_LOCALE = "el"\nQUIZBOT_HTTP_PORT = 9000\n')
    monkeypatch.setenv("QUIZBOT_HTTP_PORT", "9100")
    s = load_settings(f)
    assert s.default_locale == "el" and s.http_port == 9100


def test_unreadable_toml_file_is_a_config_error(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("this is = = not toml")
    with pytest.raises(ConfigError, match=r"bad\.toml"):
        load_settings(f)


def test_redact_url_hides_only_the_password() -> None:
    from bot.config import redact_url

    assert redact_url("redis://:s3cret@redis:6379/0") == "redis://:***@redis:6379/0"
    assert redact_url("amqp://guest:pw@mq//") == "amqp://guest:***@mq//"
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_config_file_comes_from_quizbot_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "quizbot.toml"
    f.write_text('QUIZBOT_TIMEZONE = "Europe/Athens"\n')
    monkeypatch.delenv("QUIZBOT_TIMEZONE", raising=False)
    monkeypatch.setenv("QUIZBOT_CONFIG", str(f))
    assert load_settings().default_timezone == "Europe/Athens"


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "")
    monkeypatch.setenv("QUIZBOT_DISCORD_SHARD_COUNT", "")
    s = load_settings()
    assert s.discord_token is None and s.discord_shard_count is None
