"""Root config: the keys this host declares, their defaults, and the checks a push must pass."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MIB = 1024 * 1024

CLIENT_QUEUE_BYTES = "clientQueueBytes"
REPLAY_BYTES = "replayBytes"
DEFAULT_SHELL = "defaultShell"
#: VS Code's key: whether chats may be moved (moveChat), off until a window turns it on.
CHAT_MOVES = "chatMoves.enabled"

#: The least a byte bound may be pushed down to; 0 means no bound at all.
BYTE_BOUND_FLOOR = MIB


def schema(*, client_queue_bytes: int, replay_bytes: int) -> dict[str, Any]:
    """The ConfigSchema a client draws its controls from. Every key here changes something."""
    return {
        "type": "object",
        "properties": {
            CLIENT_QUEUE_BYTES: {
                "type": "number",
                "title": "Client queue bytes",
                "description": (
                    "How many bytes a client that is not reading may fall behind before it is "
                    "closed and left to reconnect. 0 sets no limit; otherwise at least 1 MiB."
                ),
                "default": client_queue_bytes,
            },
            REPLAY_BYTES: {
                "type": "number",
                "title": "Replay buffer bytes",
                "description": (
                    "How many bytes of recent actions are held for clients that reconnect, "
                    "beside the count of 1000. 0 sets no byte limit; otherwise at least 1 MiB."
                ),
                "default": replay_bytes,
            },
            DEFAULT_SHELL: {
                "type": "string",
                "title": "Default shell",
                "description": (
                    "The shell a terminal opens: an absolute path on the server. Empty, or one "
                    "that is not there: the server's login shell ($SHELL, else /bin/sh)."
                ),
                "default": "",
            },
            CHAT_MOVES: {
                "type": "boolean",
                "title": "Move chats",
                "description": "Whether a chat may be moved within its session or to another.",
                "default": False,
            },
        },
    }


#: What a credential's value is shown as where it is set, outside the socket's own root state.
SET = "<set>"
#: A key named like this holds a credential (a client may push keys the schema does not name).
_CREDENTIAL = re.compile(r"token|secret|passw|credential|api_?key|private_?key", re.IGNORECASE)


def is_credential(key: str, prop: Mapping[str, Any] | None = None) -> bool:
    """Whether root config's `key` holds a credential: its schema says `format: password`,
    or its name says token, secret, password, credential or API/private key."""
    return bool(prop and prop.get("format") == "password") or bool(_CREDENTIAL.search(key))


def shown(config_schema: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The effective values (each key's default where nothing set it), a credential that is
    set shown as `<set>`, never itself."""
    properties = config_schema.get("properties", {})
    effective = {**defaults(config_schema), **values}
    return {
        key: SET if is_credential(key, properties.get(key)) and value not in (None, "") else value
        for key, value in effective.items()
    }


def defaults(config_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The values a key holds where nothing set it."""
    return {key: prop["default"] for key, prop in config_schema["properties"].items()}


def check_push(config: Mapping[str, Any]) -> str | None:
    """Why the values of a root/configChanged push (its shape checked already) cannot be
    taken, or None when they can."""
    for key in (CLIENT_QUEUE_BYTES, REPLAY_BYTES):
        if key in config and (problem := check_byte_bound(key, config[key])) is not None:
            return problem
    if DEFAULT_SHELL in config and not isinstance(config[DEFAULT_SHELL], str | None):
        return f"{DEFAULT_SHELL} must be a path"
    if CHAT_MOVES in config and not isinstance(config[CHAT_MOVES], bool | None):
        return f"{CHAT_MOVES} must be true or false"
    return None


def check_byte_bound(key: str, value: Any) -> str | None:
    """Why `value` cannot be the byte bound `key`, or None: the one rule for a push and for
    the setting that gives its default (AHPD_CLIENT_QUEUE_BYTES, AHPD_REPLAY_BYTES)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{key} must be an integer number of bytes"
    if value != 0 and value < BYTE_BOUND_FLOOR:
        return f"{key} must be 0 (no limit) or at least {BYTE_BOUND_FLOOR} bytes"
    return None
