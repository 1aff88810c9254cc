"""What a first run is told: how to sign in (the connection token is root's, so whoever holds
it has full power; a person's own token has their grants alone), the VS Code settings that
connect, and, while no one holds the admin role host-wide, how to add the first admin."""

from __future__ import annotations

import json
import os
import sys

from hosts.models import Membership
from hosts.store import ADMIN_ROLE


def manage_py() -> str:
    """How to run this checkout's manage.py from where this process was started: with the
    interpreter running it now (`.venv/bin/python` under `make run`), so a line printed can
    be pasted as it is."""
    python = os.path.relpath(sys.executable)
    if python.startswith(".."):
        python = sys.executable
    return f"{python} manage.py"


def admin_held() -> bool:
    """Whether someone holds the admin role host-wide (no team or project)."""
    return Membership.objects.filter(
        role__name=ADMIN_ROLE, team__isnull=True, project__isnull=True
    ).exists()


def first_admin_lines() -> list[str]:
    """The steps to the first admin person, or none once there is one."""
    if admin_held():
        return []
    manage = manage_py()
    return [
        f"ahpd: add the first admin person: {manage} ahpd user add <id> --role admin",
        f"ahpd: give them a password for the admin site (/admin/): {manage} changepassword <id>",
        f"ahpd: and a token of their own to connect with: {manage} ahpd user token <id>",
    ]


def signing_in_lines(address: str, token: str | None) -> list[str]:
    """What `serve` says once it listens, after its URL: whose the connection token is, the
    VS Code settings that connect with it (both keys: Stable has remote agent hosts off until
    `chat.remoteAgentHostsEnabled` is set), and how a person gets a token of their own."""
    entry = {"address": address, "name": "ahpd"}
    if token:
        entry["connectionToken"] = token
        whose = (
            "ahpd: that token is root's, the deployment's connection token: full power over "
            "this host, every person's sessions included; keep it to yourself"
        )
    else:
        whose = (
            "ahpd: no connection token (AHPD_WITHOUT_CONNECTION_TOKEN=1): whoever reaches "
            "this address signs in as root, with full power over this host"
        )
    settings = (
        f'"chat.remoteAgentHostsEnabled": true, "chat.remoteAgentHosts": [{json.dumps(entry)}]'
    )
    return [
        whose,
        f"ahpd: VS Code, signed in as root: {settings}",
        "ahpd: a person's own token instead, with their grants alone: "
        f"{manage_py()} ahpd user token <id>",
    ]
