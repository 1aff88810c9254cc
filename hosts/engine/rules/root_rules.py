"""The rules of the root channel's actions."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from ..services.root import do_change_root_config
from .rule import ActionRule, Dispatch


def _config_grant(action: dict[str, Any]) -> str:
    """A push of workspaceTrust alone needs trust:push; any other change config:change."""
    config = action.get("config")
    # A replace takes every other key away, which is a change, whatever it carries.
    if not action.get("replace") and isinstance(config, dict) and set(config) == {"workspaceTrust"}:
        return "trust:push"
    return "config:change"


def _config(d: Dispatch) -> Awaitable[str | None]:
    # Committed before it is said: the dispatch waits for it.
    return do_change_root_config(d.host, d.caller, d.action)


ROOT_RULES = (
    ActionRule("root/configChanged", grant_for=_config_grant, effect=_config, said_by_host=True),
    ActionRule("root/activeSessionsChanged", said_by_host=True),
    ActionRule("root/agentsChanged", said_by_host=True),
    # A watch channel's batches (resources/watches.py); a client's is refused as server-only.
    ActionRule("resourceWatch/changed", said_by_host=True),
)
