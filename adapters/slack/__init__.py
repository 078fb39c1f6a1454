"""The Slack adapter: Bolt (async) in Socket Mode or HTTP mode, Block Kit rendering, and the
core's `Chat` port over the Web API. See docs/slack.md."""

from adapters.slack.app import EVENTS_PATH, SlackAdapter
from adapters.slack.chat import SlackChat
from adapters.slack.config import SlackConfig
from adapters.slack.render import SlackMessage, render

__all__ = ["EVENTS_PATH", "SlackAdapter", "SlackChat", "SlackConfig", "SlackMessage", "render"]
