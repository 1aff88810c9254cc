"""Grants: `<subject>:<operation>`, the map of subjects and operations, what being told an
action or watching a channel needs, and whether a set of grants allows it (what each command
needs is in commands/, what each action needs in rules/). Pure Python; the people, tokens
and roles that hold grants are Django's (hosts/store/directory.py), reached through the
engine's Directory port.

An operation may be named by its group (`read`, `write`) or `*`, and the subject may be `*`:
`session:write` covers every write operation on sessions, `*:read` every read, `*:*` all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

READ = "read"
WRITE = "write"

#: subject -> (title, description, {operation: group})
SUBJECTS: dict[str, tuple[str, str, dict[str, str]]] = {
    "session": (
        "Sessions",
        "List and read sessions; create, dispose, rename, configure and mark them.",
        {
            "list": READ,
            "state": READ,
            "create": WRITE,
            "dispose": WRITE,
            "rename": WRITE,
            "configure": WRITE,
            "folders": WRITE,
            "attach": WRITE,
            "mark": WRITE,
            "review": WRITE,
            "changes": WRITE,
            "worktree": WRITE,
            "artifacts": WRITE,
        },
    ),
    "chat": (
        "Chats",
        "Read a chat's turns; create, fork and dispose chats; send, stop and answer.",
        {
            "turns": READ,
            "create": WRITE,
            "fork": WRITE,
            "dispose": WRITE,
            "move": WRITE,
            "send": WRITE,
            "cancel": WRITE,
            "answer": WRITE,
            "tool": WRITE,
            "draft": WRITE,
            "folders": WRITE,
            "mark": WRITE,
            "truncate": WRITE,
        },
    ),
    "others": (
        "Other people's sessions",
        "Read, work in and dispose sessions that are someone else's (one's own need none).",
        {"read": READ, "work": WRITE, "dispose": WRITE},
    ),
    "terminal": (
        "Terminals",
        "Watch terminals; open, type into, size, claim, rename, clear and close them.",
        {
            "output": READ,
            "create": WRITE,
            "dispose": WRITE,
            "input": WRITE,
            "resize": WRITE,
            "claim": WRITE,
            "rename": WRITE,
            "clear": WRITE,
        },
    ),
    "automation": (
        "Automations",
        "Read, make, change and run automations.",
        {
            "read": READ,
            "create": WRITE,
            "update": WRITE,
            "remove": WRITE,
            "run": WRITE,
            "cancel": WRITE,
        },
    ),
    "file": (
        "Files",
        "Read and write the files of the folders the host serves (AHPD_PATHS).",
        {
            "get": READ,
            "list": READ,
            "resolve": READ,
            "watch": READ,
            "put": WRITE,
            "delete": WRITE,
            "mkdir": WRITE,
            "move": WRITE,
            "copy": WRITE,
        },
    ),
    "config": (
        "Configuration",
        "Read the host's settings and change root config.",
        {"settings": READ, "change": WRITE},
    ),
    "diagnostics": ("Diagnostics", "Read the host's logs and status.", {"read": READ}),
    "trust": ("Workspace trust", "Push the window's workspace trust.", {"push": WRITE}),
    "account": ("Accounts", "Read the account an agent bills to.", {"read": READ}),
    "user": (
        "People",
        "Read and manage people and their tokens.",
        {"read": READ, "create": WRITE, "update": WRITE, "remove": WRITE, "token": WRITE},
    ),
    "team": (
        "Teams",
        "Read and manage teams.",
        {"read": READ, "create": WRITE, "update": WRITE, "remove": WRITE},
    ),
    "project": (
        "Projects",
        "Read and manage projects.",
        {"read": READ, "create": WRITE, "update": WRITE, "remove": WRITE},
    ),
    "role": (
        "Roles",
        "Read and manage roles.",
        {"read": READ, "create": WRITE, "update": WRITE, "remove": WRITE},
    ),
    "usage": ("Usage", "Read what turns cost.", {"read": READ}),
    "policy": ("Policies", "Read and set who may use what.", {"read": READ, "write": WRITE}),
    "mcp": (
        "MCP servers",
        "Read and manage the team's MCP servers (their secrets are never shown).",
        {"read": READ, "write": WRITE},
    ),
}

BUILTIN_ROLES: dict[str, list[str]] = {
    "admin": ["*:*"],
    "member": [
        "session:read",
        "session:write",
        "chat:read",
        "chat:write",
        "terminal:read",
        "terminal:write",
        "file:read",
        "file:write",
        "trust:push",
    ],
    "guest": ["session:read", "automation:read", "file:read"],
}
#: A member who also works in, and disposes, the sessions of everyone in their scope.
BUILTIN_ROLES["lead"] = [*BUILTIN_ROLES["member"], "others:*"]

#: What a role held through a team or a project membership grants within that scope: the
#: sessions there and what is done in them. Everything else a host serves (its files, its
#: settings, its people) takes a role held host-wide.
SCOPED_SUBJECTS = frozenset({"session", "chat", "others"})


class GrantError(ValueError):
    """A grant that names no subject or operation this host knows."""


def check_grant(grant: str) -> str:
    """The grant, if well formed; GrantError naming what is wrong otherwise."""
    subject, sep, operation = grant.partition(":")
    if not sep or not subject or not operation:
        raise GrantError(f"a grant is <subject>:<operation>, not {grant!r}")
    if subject != "*" and subject not in SUBJECTS:
        raise GrantError(f"unknown subject in grant {grant!r}")
    if operation in ("*", READ, WRITE):
        return grant
    if subject == "*" or operation not in SUBJECTS[subject][2]:
        raise GrantError(f"unknown operation in grant {grant!r}")
    return grant


def allows(grants: Iterable[str], needed: str) -> bool:
    """Whether any of `grants` covers the one operation `needed` (`session:create`)."""
    subject, _, operation = needed.partition(":")
    group = SUBJECTS.get(subject, ("", "", {}))[2].get(operation)
    for grant in grants:
        g_subject, _, g_operation = grant.partition(":")
        if g_subject not in ("*", subject):
            continue
        if g_operation in ("*", operation) or (group is not None and g_operation == group):
            return True
    return False


def advertised() -> dict[str, Any]:
    """The whole map, as root state's `_meta['ahpd.grants']` says it."""
    return {
        subject: {
            "title": title,
            "description": description,
            "operations": sorted(operations),
            "groups": {
                READ: sorted(op for op, group in operations.items() if group == READ),
                WRITE: sorted(op for op, group in operations.items() if group == WRITE),
            },
        }
        for subject, (title, description, operations) in SUBJECTS.items()
    }


#: What a connection must hold to be told an action at all (and to read what it moves in a
#: snapshot): root config's values are the host's settings.
TOLD: dict[str, str] = {
    "root/configChanged": "config:settings",
    "root/terminalsChanged": "terminal:output",
}

#: What subscribing to a channel of a kind needs (any one of). A chat's turns are part of what
#: its session's state is, so a guest who may read sessions reads their chats too.
SUBSCRIBE: dict[str, tuple[str, ...]] = {
    "resourceWatch": ("file:watch",),
    "session": ("session:state",),
    "chat": ("chat:turns", "session:state"),
    "changeset": ("session:state",),
    "annotations": ("session:state",),
    "terminal": ("terminal:output",),
    "automation": ("automation:read",),
    "automationRun": ("automation:read",),
    # The host's log lines, its turns' spans and its figures are nobody else's business
    # (as /metrics): the ahp-otlp channels.
    "otlp": ("diagnostics:read",),
}
