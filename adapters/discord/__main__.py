"""``python -m adapters.discord invite [--client-id ID]``: print the invite URL."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from adapters.discord.invite import client_id_from_token, invite_url
from bot.errors import ConfigError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adapters.discord")
    sub = parser.add_subparsers(dest="command", required=True)
    invite = sub.add_parser("invite", help="print the URL that adds the bot to a server")
    invite.add_argument("--client-id", help="the application id (default: read from DISCORD_TOKEN)")
    args = parser.parse_args(argv)
    try:
        client_id = args.client_id or client_id_from_token(os.environ.get("DISCORD_TOKEN", ""))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(invite_url(client_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
