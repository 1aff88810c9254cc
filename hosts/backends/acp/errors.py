"""How the agent failing is told: its JSON-RPC errors as sentences, and its going away."""

from __future__ import annotations

from collections.abc import Mapping

from acp import RequestError


class AgentGone(Exception):
    """The agent process exited (or its pipes closed) while the host was talking to it."""


def describe(error: RequestError) -> str:
    """An agent's JSON-RPC error as a sentence, with its details when it gave some."""
    message = str(error)
    data = error.data
    if isinstance(data, Mapping):
        details = data.get("details") or data.get("message")
        if isinstance(details, str) and details and details != message:
            message = f"{message}: {details}"
    elif isinstance(data, str) and data:
        message = f"{message}: {data}"
    return message
