"""The REST API of a started server, called as a client would: over HTTP, with a bearer token."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.server import TOKEN, ServerProcess


def call(
    server: ServerProcess, method: str, path: str, token: str = TOKEN, body: Any = None
) -> tuple[int, Any]:
    """(status, JSON body or None) of `method /api/<path>`."""
    request = urllib.request.Request(
        server.base.replace("ws://", "http://") + "api/" + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def session_over_rest(server: ServerProcess, token: str, folder: Path, message: str) -> Any:
    """A session of agent `local` made over REST in `folder`, its first message sent: the 201
    answer (uri, chat, turnId)."""
    status, made = call(
        server,
        "POST",
        "sessions/",
        token,
        {"provider": "local", "workingDirectories": [folder.as_uri()], "message": message},
    )
    assert status == 201, made
    return made
