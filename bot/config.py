"""Settings from the environment (and an optional TOML file), validated at start.

Every variable is listed in `Settings` with its description: the README's configuration
table and docs/operations.md are checked against this model by a test.
"""

from __future__ import annotations

import os
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.errors import ConfigError


class RunnerKind(StrEnum):
    LOCAL = "local"
    CELERY = "celery"
    OFF = "off"


def _setting(env: str, default: Any, description: str, **constraints: Any) -> Any:
    """A field of `Settings` read from the variable `env` (also its name in the TOML file)."""
    return Field(
        default, validation_alias=AliasChoices(env), description=description, **constraints
    )


# Fields checked against a range with the unit in the message: (lowest, highest, unit).
_RANGES = {"clinic_max_mb": (1, 4096, "MiB"), "clinic_max_jobs": (1, 256, "snapshots at once")}


class Settings(BaseSettings):
    # An empty variable (`DISCORD_TOKEN=` in an env file) counts as unset.
    model_config = SettingsConfigDict(
        extra="ignore", populate_by_name=True, frozen=True, env_ignore_empty=True
    )

    config_file: Path | None = _setting(
        "QUIZBOT_CONFIG",
        None,
        "TOML file with any of these settings (keys: the variable names); the environment wins",
    )

    database_url: str | None = _setting(
        "QUIZBOT_DATABASE_URL",
        None,
        "SQLAlchemy URL, not a path (sqlite+aiosqlite:///./quizbot.db, "
        "postgresql://user@host/db); unset: the embedded SQLite file ./quizbot.db",
    )
    questions_path: Path | None = _setting(
        "QUIZBOT_QUESTIONS", None, "directory of question YAML files; unset: the packaged bank"
    )
    default_locale: str = _setting("QUIZBOT_LOCALE", "en", "locale of new channels: en or el")
    default_timezone: str = _setting("QUIZBOT_TIMEZONE", "UTC", "IANA time zone of new channels")
    admins: str = _setting(
        "QUIZBOT_ADMINS", "", "comma-separated platform user ids allowed to change channel settings"
    )
    ask_cooldown: int = _setting(
        "QUIZBOT_ASK_COOLDOWN",
        30,
        "seconds between two /quiz ask in one channel, on every platform and "
        "replica (0: no cooldown)",
        ge=0,
        le=86_400,
    )
    live_lobby: int = _setting(
        "QUIZBOT_LIVE_LOBBY",
        30,
        "seconds a live round's lobby waits for players before question 1",
        ge=0,
        le=600,
    )
    discord_public_key: str | None = _setting(
        "DISCORD_PUBLIC_KEY",
        None,
        "the application's public key (hex, Developer Portal > General "
        "Information): set, Discord's interactions come over HTTP at /discord/interactions "
        "(no gateway connection)",
    )
    http_port: int = _setting(
        "QUIZBOT_HTTP_PORT",
        8080,
        "port of /healthz, /metrics, Slack's /slack/events and Discord's "
        "/discord/interactions (their HTTP modes)",
    )
    runner: RunnerKind = _setting(
        "QUIZBOT_RUNNER", RunnerKind.LOCAL, "where demos run: local, celery or off"
    )
    celery_broker_url: str = _setting(
        "QUIZBOT_CELERY_BROKER_URL",
        "redis://127.0.0.1:6379/0",
        "Celery broker (and result backend) for QUIZBOT_RUNNER=celery",
    )
    demo_user: str = _setting(
        "QUIZBOT_DEMO_USER",
        "nobody",
        "a runner started as root runs each demo as this user (a name or "
        "uid:gid), never as root: demos are refused when it cannot run Python",
    )
    clinic_max_mb: int = _setting(
        "QUIZBOT_CLINIC_MAX_MB",
        100,
        "largest memory snapshot the clinic accepts, in MiB (the file is "
        "analysed by the runner, then deleted)",
    )
    clinic_max_jobs: int = _setting(
        "QUIZBOT_CLINIC_MAX_JOBS",
        4,
        "memory-clinic snapshots one bot process has queued or running at once "
        "(one per member); more are asked to try again in a few minutes",
    )
    slack_bot_token: SecretStr | None = _setting(
        "SLACK_BOT_TOKEN", None, "Slack bot token (xoxb-...)"
    )
    slack_signing_secret: SecretStr | None = _setting(
        "SLACK_SIGNING_SECRET", None, "Slack signing secret (HTTP mode)"
    )
    slack_app_token: SecretStr | None = _setting(
        "SLACK_APP_TOKEN", None, "Slack app-level token (xapp-...): enables Socket Mode"
    )
    slack_api_url: str = _setting(
        "SLACK_API_URL", "https://slack.com/api/", "Slack Web API base URL (GovSlack, tests)"
    )
    discord_token: SecretStr | None = _setting("DISCORD_TOKEN", None, "Discord bot token")
    discord_api_base: str | None = _setting(
        "DISCORD_API_BASE", None, "Discord REST base URL (a REST proxy; tests)"
    )
    discord_gateway_url: str | None = _setting(
        "DISCORD_GATEWAY_URL", None, "Discord gateway URL (a gateway proxy; tests)"
    )
    discord_dev_guild: int | None = _setting(
        "QUIZBOT_DISCORD_DEV_GUILD",
        None,
        "Discord server id to sync /quiz to while developing (instant); unset: global sync",
    )
    discord_shard_count: int | None = _setting(
        "QUIZBOT_DISCORD_SHARD_COUNT", None, "total Discord shards; set: an AutoShardedClient"
    )
    discord_shard_ids: str = _setting(
        "QUIZBOT_DISCORD_SHARD_IDS",
        "",
        "Discord shards this process runs, e.g. 0,1 or 4-7 (needs the shard count)",
    )
    discord_admin_role: int | None = _setting(
        "QUIZBOT_DISCORD_ADMIN_ROLE",
        None,
        "Discord role id whose members may use the admin commands (close, lang, "
        "schedule, report, demos)",
    )
    web_secret: SecretStr | None = _setting(
        "QUIZBOT_WEB_SECRET",
        None,
        "key that signs the dashboard's session cookies: at least 32 random "
        "characters (openssl rand -hex 32); unset: quizbot serve has no dashboard",
    )
    public_url: str | None = _setting(
        "QUIZBOT_PUBLIC_URL",
        None,
        "the bot's public base URL, e.g. https://quiz.example.com: the "
        "dashboard's address and its sign-in redirects (/auth/slack/callback, "
        "/auth/discord/callback)",
    )
    slack_client_id: str | None = _setting(
        "SLACK_CLIENT_ID",
        None,
        "Slack app's Client ID (Basic Information > App Credentials): Sign in "
        "with Slack on the dashboard; without SLACK_BOT_TOKEN, the multi-workspace mode "
        "(Add to Slack at /slack/install)",
    )
    slack_client_secret: SecretStr | None = _setting(
        "SLACK_CLIENT_SECRET", None, "Slack app's Client Secret (with SLACK_CLIENT_ID)"
    )
    discord_client_id: str | None = _setting(
        "DISCORD_CLIENT_ID",
        None,
        "Discord application's Client ID (Developer Portal > OAuth2): sign-in "
        "with Discord on the dashboard",
    )
    discord_client_secret: SecretStr | None = _setting(
        "DISCORD_CLIENT_SECRET",
        None,
        "Discord application's Client Secret (with DISCORD_CLIENT_ID)",
    )
    log_level: str = _setting("QUIZBOT_LOG_LEVEL", "INFO", "logging level")

    @field_validator("default_locale")
    @classmethod
    def _locale(cls, v: str) -> str:
        if v not in ("en", "el"):
            raise ValueError(f"unknown locale {v!r}; use en or el")
        return v

    @field_validator("default_timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        try:
            check_timezone(v)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return v

    @field_validator(*_RANGES)
    @classmethod
    def _in_range(cls, v: int, info: ValidationInfo) -> int:
        assert info.field_name is not None
        low, high, unit = _RANGES[info.field_name]
        if not low <= v <= high:
            default = cls.model_fields[info.field_name].default
            raise ValueError(f"{v} is outside {low}..{high} ({unit}); the default is {default}")
        return v

    @field_validator("web_secret")
    @classmethod
    def _web_secret(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value()) < 32:
            raise ValueError(
                f"is {len(v.get_secret_value())} characters long; use at least 32 random "
                "characters, e.g. the output of `openssl rand -hex 32`"
            )
        return v

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, v: str | None) -> str | None:
        if v is None:
            return None
        parts = urlsplit(v.strip())
        local = parts.hostname in ("127.0.0.1", "localhost", "::1")
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError(f"{v!r} is not a URL; write it as https://quiz.example.com")
        if parts.scheme == "http" and not local:
            raise ValueError(
                f"{v!r} is plain http: sign-in cookies need https (http only on 127.0.0.1)"
            )
        if parts.query or parts.fragment:
            raise ValueError(f"{v!r} has a query or fragment; give the base URL only")
        return urlunsplit(parts._replace(path=parts.path.rstrip("/")))

    @property
    def clinic_max_bytes(self) -> int:
        return self.clinic_max_mb << 20

    @property
    def admin_ids(self) -> frozenset[str]:
        return frozenset(a.strip() for a in self.admins.split(",") if a.strip())


def dashboard_problems(settings: Settings) -> list[str]:
    """What stops the dashboard of `quizbot serve` from working, each naming the variable
    and the fix (empty: it is fully configured, or not asked for at all)."""
    problems = []
    for name, key, secret in (
        ("SLACK", settings.slack_client_id, settings.slack_client_secret),
        ("DISCORD", settings.discord_client_id, settings.discord_client_secret),
    ):
        if (key is None) != (secret is None):
            have, need = (
                (f"{name}_CLIENT_ID", f"{name}_CLIENT_SECRET")
                if key
                else (f"{name}_CLIENT_SECRET", f"{name}_CLIENT_ID")
            )
            problems.append(f"{have} is set without {need}: set both (or neither)")
    signs_in = settings.slack_client_id is not None or settings.discord_client_id is not None
    # SLACK_CLIENT_ID without a bot token is the multi-workspace OAuth install: the
    # dashboard is then optional (its Sign in with Slack shares the client id and secret).
    slack_oauth = settings.slack_client_id is not None and settings.slack_bot_token is None
    dashboard_only = signs_in and not (slack_oauth and settings.discord_client_id is None)
    if settings.web_secret is None and dashboard_only:
        problems.append(
            "QUIZBOT_WEB_SECRET is not set: the dashboard signs its cookies with it "
            "(openssl rand -hex 32)"
        )
    if settings.web_secret is not None and settings.public_url is None:
        problems.append(
            "QUIZBOT_PUBLIC_URL is not set: the dashboard's sign-in redirects need the "
            "bot's public address, e.g. https://quiz.example.com"
        )
    if settings.web_secret is not None and not signs_in:
        problems.append(
            "QUIZBOT_WEB_SECRET is set but no sign-in is: set SLACK_CLIENT_ID and "
            "SLACK_CLIENT_SECRET and/or DISCORD_CLIENT_ID and DISCORD_CLIENT_SECRET"
        )
    if settings.discord_client_id is not None and settings.discord_token is None:
        problems.append(
            "DISCORD_CLIENT_ID needs DISCORD_TOKEN too: the sign-in lists only the servers "
            "the bot is in, asked with the bot token"
        )
    if slack_oauth and settings.slack_signing_secret is None:
        problems.append(
            "SLACK_CLIENT_ID needs SLACK_BOT_TOKEN (one workspace) or SLACK_SIGNING_SECRET "
            "(installs through OAuth in HTTP mode) too: workspace admins are asked with "
            "users.info"
        )
    return problems


def check_timezone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"unknown time zone {name!r}: use an IANA name such as Europe/Athens or UTC"
        ) from None


def redact_url(url: str) -> str:
    """``redis://:secret@host/0`` -> ``redis://:***@host/0``: URLs in messages, never secrets."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def env_name(field: str) -> str:
    alias = Settings.model_fields[field].validation_alias
    assert isinstance(alias, AliasChoices)
    return str(alias.choices[0])


def load_settings(toml_file: Path | None = None, **overrides: Any) -> Settings:
    """Environment variables win over the TOML file (keys: the variable names); the file is
    `toml_file`, else QUIZBOT_CONFIG's."""
    data: dict[str, Any] = {}
    if toml_file is None and os.environ.get("QUIZBOT_CONFIG"):
        toml_file = Path(os.environ["QUIZBOT_CONFIG"])
    if toml_file is not None:
        try:
            data = tomllib.loads(toml_file.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read the config file {str(toml_file)!r}: {exc}") from exc
    try:
        # Init kwargs beat the environment in pydantic-settings; pass the file's values
        # only where the environment does not set them.
        data = {k: v for k, v in data.items() if k not in os.environ}
        return Settings(**data, **overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = str(err["loc"][0]) if err["loc"] else "?"
            problems.append(f"{_var(name)}: {err['msg']}")
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from None


def _var(name: str) -> str:
    for field, info in Settings.model_fields.items():
        alias = info.validation_alias
        if name == field or (isinstance(alias, AliasChoices) and name in alias.choices):
            return env_name(field)
    return name
