"""A session's customizations (SessionState.customizations): what each source offers it, in one
order, with the enablement decisions kept for the session laid on each, said with
session/customizationsChanged only where the list moved.

The sources, in the order the list shows them:
- `mcp`: the MCP servers the session's owner is offered, bare McpServerCustomizations at the
  top level, each with its state (starting, ready, error, stopped, authRequired);
- `folders`: what the session's working folders hold for the agent (skills, agents, rules,
  prompts), DirectoryCustomizations with their children.
A source sets its part whole (`set_part`). A server's state moves by `server_state`, which keeps
it in the part and says session/mcpServerStateChanged, so a later composition says the same.

Decisions are kept per session (SessionRecord.enablement), the toggle's list whole as it was
sent; a session decides for itself, never for another person's session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..channel import Channel
from .records import SessionRecord


class CustomizedSession(Protocol):
    """What of a session its customizations read and say through (a LiveSession)."""

    record: SessionRecord
    channel: Channel

    def say(self, action: dict[str, Any]) -> None: ...


#: The sources, in the order their entries are listed.
SOURCES = ("mcp", "folders")

#: The types that keep their decisions themselves (`enablement`); every other type shows the
#: legacy `enabled` flag (the protocol's reducer: session/customizationToggled).
_KEEP_DECISIONS = ("plugin", "mcpServer")


def is_enabled(
    entry: Mapping[str, Any],
    decisions: list[dict[str, Any]] | None,
    folders: Sequence[str] = (),
) -> bool:
    """Whether a customization is on for the session: the session's decision, else the one for
    a folder it works in (`folders`, its working directories), else the one for every
    session, else what it was published with. A decision for another folder is not this
    session's."""
    if decisions:
        mine = {folder.rstrip("/") for folder in folders}
        for kind in ("session", "workspace", "global"):
            for decision in decisions:
                if not isinstance(decision, dict) or decision.get("kind") != kind:
                    continue
                if kind == "workspace" and str(decision.get("uri") or "").rstrip("/") not in mine:
                    continue
                return bool(decision.get("enabled"))
    return bool(entry.get("enabled", True))


def with_decisions(
    entry: Mapping[str, Any],
    decisions: Mapping[str, list[dict[str, Any]]],
    folders: Sequence[str] = (),
) -> dict[str, Any]:
    """The entry (and its children) with the decisions kept for it, as the reducer lays them."""
    out = dict(entry)
    kept = decisions.get(str(entry.get("id")))
    if out.get("type") in _KEEP_DECISIONS:
        if kept:
            out["enablement"] = list(kept)
        else:
            out.pop("enablement", None)
    elif kept is not None:
        out["enabled"] = is_enabled(entry, kept, folders)
    children = entry.get("children")
    if isinstance(children, list):
        out["children"] = [with_decisions(child, decisions, folders) for child in children]
    return out


@dataclass(eq=False)
class SessionCustomizations:
    session: CustomizedSession
    #: Each source's entries, as it last set them (no decisions laid on).
    parts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Called with a customization's id after a person toggled it (the MCP servers start or
    #: stop theirs).
    on_toggled: list[Callable[[str], None]] = field(default_factory=list)

    def compose(self) -> list[dict[str, Any]]:
        record = self.session.record
        return [
            with_decisions(entry, record.enablement, record.working_directories)
            for source in SOURCES
            for entry in self.parts.get(source, ())
        ]

    def set_part(self, source: str, entries: list[dict[str, Any]]) -> None:
        """A source's entries, replacing what it set before; said where the list moved."""
        assert source in SOURCES, source
        self.parts[source] = [dict(entry) for entry in entries]
        self.publish()

    def replace_part(self, source: str, entries: list[dict[str, Any]]) -> None:
        """A source's entries replaced while the session runs (what its owner is offered moved):
        each entry gone said removed, one at a time; each that moved in place said updated,
        alone; the whole list said only where the state still falls short of it (an entry
        added)."""
        assert source in SOURCES, source
        before = {str(entry.get("id")) for entry in self.parts.get(source, ())}
        self.parts[source] = [dict(entry) for entry in entries]
        after = {str(entry.get("id")) for entry in entries}
        for gone in sorted(before - after):
            self.session.say({"type": "session/customizationRemoved", "id": gone})
        held = {
            str(entry.get("id")): entry
            for entry in self.session.channel.state.get("customizations", [])
        }
        for entry in self.compose():
            key = str(entry.get("id"))
            if key in before and key in held and held[key] != entry:
                self.session.say({"type": "session/customizationUpdated", "customization": entry})
        self.publish()

    def publish(self) -> None:
        composed = self.compose()
        if composed != self.session.channel.state.get("customizations", []):
            self.session.say({"type": "session/customizationsChanged", "customizations": composed})

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every entry and child, as the sources set them."""
        for source in SOURCES:
            for entry in self.parts.get(source, ()):
                yield entry
                yield from entry.get("children") or ()

    def find(self, customization_id: str) -> dict[str, Any] | None:
        for entry in self.entries():
            if entry.get("id") == customization_id:
                return entry
        return None

    def enabled(self, customization_id: str) -> bool:
        entry = self.find(customization_id)
        if entry is None:
            return False
        record = self.session.record
        return is_enabled(
            entry, record.enablement.get(customization_id), record.working_directories
        )

    def server_state(self, server_id: str, state: dict[str, Any]) -> None:
        """An MCP server's state moved: kept in its part and said, unless the session's state
        holds it already (a start or stop request's reducer moves it there first)."""
        for entry in self.parts.get("mcp", ()):
            if entry.get("id") == server_id:
                entry["state"] = dict(state)
                held = next(
                    (
                        e
                        for e in self.session.channel.state.get("customizations", [])
                        if e.get("id") == server_id
                    ),
                    None,
                )
                if held is not None and held.get("state") == state:
                    return
                self.session.say(
                    {"type": "session/mcpServerStateChanged", "id": server_id, "state": state}
                )
                return

    def toggled(self, customization_id: str) -> None:
        for listener in list(self.on_toggled):
            listener(customization_id)
