"""The Slack Web API methods the adapter calls, and the scope each needs.

`tests/adapters/slack/test_manifest.py` checks that this table names every method the
adapter's code calls and that `deploy/slack/manifest.yaml` grants every scope in it.
"""

from __future__ import annotations

from typing import Final

# Bot token scopes, by Web API method ("" = no scope needed).
METHOD_SCOPES: Final[dict[str, str]] = {
    "auth.test": "",  # Bolt's authorization, once at start
    "chat.postMessage": "chat:write",
    "chat.postEphemeral": "chat:write",
    "chat.update": "chat:write",
    "conversations.open": "im:write",  # a member's data file goes to their DM with the bot
    "files.getUploadURLExternal": "files:write",  # files_upload_v2, step 1
    "files.completeUploadExternal": "files:write",  # files_upload_v2, step 3
    "users.info": "users:read",  # the admin check (is_admin / is_owner)
    "usergroups.users.list": "usergroups:read",  # a team that follows a user group
    "views.open": "",  # forms (modals): a trigger_id is the permission
    # Multi-workspace mode: an install's code, and a rotating token's refresh, exchanged
    # with the app's client id and secret.
    "oauth.v2.access": "",
    "views.publish": "",  # the App Home tab (a member's card): no scope needed
}

# Scopes the app needs beyond single methods.
EXTRA_BOT_SCOPES: Final[dict[str, str]] = {
    "commands": "the /quiz slash command",
    # Post in public channels without being invited first (questions, boards, reveals).
    "chat:write.public": "chat.postMessage in public channels the bot has not joined",
    # Files members send the bot in a direct message (question files, memory snapshots):
    # the `message.im` event, and the file's url_private with the bot token.
    "im:history": "the message.im event: files shared with the bot in a direct message",
    "files:read": "download a file shared with the bot (url_private)",
}

# Events the app subscribes to (the manifest's settings.event_subscriptions.bot_events).
# ("" = no scope needed).
BOT_EVENTS: Final[dict[str, str]] = {
    "message.im": "im:history",
    "app_home_opened": "",
    # Multi-workspace mode: a workspace's tokens are deleted at once.
    "app_uninstalled": "",
    "tokens_revoked": "",
}

# Socket Mode: `apps.connections.open` takes the app-level token (xapp-...), whose scope is
# set when the token is created, not in the manifest.
APP_TOKEN_METHODS: Final[dict[str, str]] = {"apps.connections.open": "connections:write"}


def bot_scopes() -> set[str]:
    return {s for s in METHOD_SCOPES.values() if s} | set(EXTRA_BOT_SCOPES)


__all__ = ["APP_TOKEN_METHODS", "BOT_EVENTS", "EXTRA_BOT_SCOPES", "METHOD_SCOPES", "bot_scopes"]
