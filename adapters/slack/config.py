"""What the Slack adapter needs from the settings, checked with messages that name the
variable and the fix."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr

from adapters.slack.chat import DEFAULT_API_URL
from bot.config import Settings
from bot.errors import ConfigError


@dataclass(frozen=True, slots=True)
class SlackConfig:
    """Single-token mode (`bot_token`: one workspace) or multi-workspace mode (no bot token;
    `client_id` and `client_secret`: workspaces install through OAuth, HTTP mode only)."""

    bot_token: str | None
    signing_secret: str | None = None
    app_token: str | None = None  # set: Socket Mode; unset: HTTP mode (/slack/events)
    api_url: str = DEFAULT_API_URL
    admin_ids: frozenset[str] = frozenset()
    client_id: str | None = None
    client_secret: str | None = None
    oauth_url: str = "https://slack.com/oauth/v2/authorize"  # Slack's page (a fake in tests)
    # The install's redirect (QUIZBOT_PUBLIC_URL + /slack/oauth_redirect); unset: the
    # app's first Redirect URL.
    redirect_uri: str | None = None

    @property
    def socket_mode(self) -> bool:
        return self.app_token is not None

    @property
    def multi_workspace(self) -> bool:
        return self.bot_token is None

    @property
    def mode(self) -> str:
        if self.multi_workspace:
            return "multi-workspace OAuth"
        return "single-token"

    @classmethod
    def from_settings(cls, settings: Settings) -> SlackConfig | None:
        """None when Slack is not configured (no SLACK_BOT_TOKEN, no SLACK_CLIENT_ID)."""
        if settings.slack_bot_token is None and settings.slack_client_id is None:
            return None
        config = cls(
            bot_token=_secret(settings.slack_bot_token),
            signing_secret=_secret(settings.slack_signing_secret),
            app_token=_secret(settings.slack_app_token),
            api_url=settings.slack_api_url,
            admin_ids=settings.admin_ids,
            client_id=(settings.slack_client_id or "").strip() or None,
            client_secret=_secret(settings.slack_client_secret),
            redirect_uri=(
                settings.public_url.rstrip("/") + "/slack/oauth_redirect"
                if settings.public_url
                else None
            ),
        )
        config.check()
        return config

    def check(self) -> None:
        if self.bot_token is None:
            self._check_oauth()
        elif not self.bot_token.startswith("xoxb-"):
            raise ConfigError(
                "SLACK_BOT_TOKEN must be the Bot User OAuth Token (xoxb-...) from the app's "
                "OAuth & Permissions page"
            )
        if self.app_token is not None and not self.app_token.startswith("xapp-"):
            raise ConfigError(
                "SLACK_APP_TOKEN must be an app-level token (xapp-...) with the "
                "connections:write scope (Basic Information > App-Level Tokens); unset it to "
                "use HTTP mode"
            )
        if self.app_token is None and not self.signing_secret:
            raise ConfigError(
                "Slack needs SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode, "
                "Basic Information > App Credentials): set one of them"
            )
        if not self.api_url.startswith(("https://", "http://")):
            raise ConfigError(
                f"SLACK_API_URL {self.api_url!r} is not a URL: use e.g. https://slack.com/api/"
            )

    def _check_oauth(self) -> None:
        if not self.client_id or not self.client_secret:
            raise ConfigError(
                "Slack needs SLACK_BOT_TOKEN (one workspace) or SLACK_CLIENT_ID and "
                "SLACK_CLIENT_SECRET (many workspaces install through OAuth; Basic "
                "Information > App Credentials)"
            )
        if self.app_token is not None:
            raise ConfigError(
                "multi-workspace mode (SLACK_CLIENT_ID without SLACK_BOT_TOKEN) runs in HTTP "
                "mode: unset SLACK_APP_TOKEN and set SLACK_SIGNING_SECRET"
            )
        if not self.signing_secret:
            raise ConfigError(
                "multi-workspace mode (SLACK_CLIENT_ID without SLACK_BOT_TOKEN) needs "
                "SLACK_SIGNING_SECRET to verify Slack's requests (Basic Information > App "
                "Credentials)"
            )


def _secret(value: SecretStr | None) -> str | None:
    text = value.get_secret_value().strip() if value is not None else ""
    return text or None


__all__ = ["SlackConfig"]
