"""Which operations each principal may use on an automation (update, remove, run), and the
catalogue as each watcher is shown it: every entry carries the operations its watcher's grants
allow, live, in snapshots and in replay alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import access
from ..principal import Principal

#: What the catalogue holds on every entry; each principal is shown those of them their
#: grants allow on it (`seen_entry`), and is refused the rest in the reference's words.
OPERATIONS = ("update", "remove", "run")


@dataclass(slots=True)
class Owned:
    """An automation as access.py reads it: whose it is; automations are the host's scope."""

    uri: str
    owner: str
    scope: str = ""


def operations_for(principal: Principal, uri: str, owner: str) -> list[str]:
    """The operations `principal` may do to the automation: the grant for each, and
    others:work on someone else's (access.py), as a session of someone else's takes."""
    owned = Owned(uri, owner)
    return [op for op in OPERATIONS if access.refusal(principal, owned, f"automation:{op}") is None]


def seen_entry(principal: Principal, entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as `principal` is shown it: with the operations they may do. Whose it is is
    read off the entry itself, so a ringed automation/set replays as it was said."""
    owner = str((entry.get("_meta") or {}).get("ahpd.owner") or "")
    return {**entry, "operations": operations_for(principal, entry["resource"], owner)}


def seen_set(principal: Principal, action: dict[str, Any]) -> dict[str, Any]:
    return {**action, "automation": seen_entry(principal, action["automation"])}


def seen_catalogue(principal: Principal, state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "entries": [seen_entry(principal, e) for e in state["entries"]]}
