"""What an operator reads of a running host: its figures (for /metrics and /api/status) and
its running turns (for the admin and GET /api/turns/), each read on the engine's loop in one
pass, from counters the engine keeps where things happen (fanout.py, sessions/turn_counts.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .host import Host
from .sessions.live_session import LiveChat
from .sessions.turn_counts import ENDINGS, Durations


@dataclass(frozen=True, slots=True)
class HostStatus:
    version: str
    uptime_s: float
    connections: int
    subscriptions: int
    sessions: int
    running_turns: int
    #: The providers of the agents the operator configured.
    agents: list[str]
    connections_opened: int
    envelopes: int
    deliveries: int
    queue_drops: int
    turns_started: dict[str, int]
    #: provider -> ending -> turns
    turns_finished: dict[str, dict[str, int]]
    backend_errors: dict[str, int]
    turn_durations: dict[str, Durations] = field(default_factory=dict)
    #: Where people's processes run: `bwrap`, or `off` (as the server's own user).
    sandbox: str = "off"

    def to_json(self) -> dict[str, Any]:
        """The figures as /api/status says them: camelCase, each key kept as it is named."""
        return {
            "version": self.version,
            "uptimeSeconds": round(self.uptime_s, 3),
            "connections": self.connections,
            "subscriptions": self.subscriptions,
            "sessionsHeld": self.sessions,
            "runningTurns": self.running_turns,
            "agents": self.agents,
            "connectionsOpened": self.connections_opened,
            "envelopes": self.envelopes,
            "deliveries": self.deliveries,
            "queueDrops": self.queue_drops,
            "turnsStarted": sum(self.turns_started.values()),
            "turnsFinished": {
                ending: sum(by.get(ending, 0) for by in self.turns_finished.values())
                for ending in ENDINGS
            },
            "backendErrors": sum(self.backend_errors.values()),
            "sandbox": self.sandbox,
        }


def read_status(host: Host) -> HostStatus:
    """The host's figures now. Call on the engine's loop."""
    fanout, counts = host.fanout, host.turns.counts
    conns = fanout.connections
    finished: dict[str, dict[str, int]] = {}
    for (provider, ending), count in counts.finished.items():
        finished.setdefault(provider, {})[ending] = count
    return HostStatus(
        version=host.settings.server_version,
        uptime_s=time.monotonic() - host.started_monotonic,
        connections=len(conns),
        subscriptions=sum(len(conn.subscriptions) for conn in conns),
        sessions=len(host.sessions.sessions),
        running_turns=sum(1 for chat in host.sessions.chats.values() if chat.busy),
        agents=sorted(host.sessions.agents),
        connections_opened=fanout.connections_opened,
        envelopes=fanout.envelopes,
        deliveries=fanout.deliveries,
        queue_drops=fanout.queue_drops,
        turns_started=dict(counts.started),
        turns_finished=finished,
        backend_errors=dict(counts.backend_errors),
        sandbox=host.sandbox.mode,
        turn_durations={
            provider: Durations(list(d.buckets), d.total_s, d.count)
            for provider, d in counts.durations.items()
        },
    )


@dataclass(frozen=True, slots=True)
class RunningTurn:
    """A turn running now, as the admin shows it."""

    chat: str
    turn_id: str
    #: "running", or "waiting for an answer" while a person is asked about a tool call.
    status: str
    sender: str | None
    started_at: str
    duration_s: float
    message: str
    #: What the turn said so far, a line per response part.
    parts: list[str]
    #: The turn's usage so far as its reports said it (the protocol's UsageInfo), {} for none.
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunningNow:
    """A turn running now in some session, as the admin's running-now page shows it."""

    session: str
    title: str
    #: Whose session it is (`user:<id>`, `root:<host>`), "" for nobody named.
    owner: str
    #: The agent it runs.
    provider: str
    turn: RunningTurn


def running_turns(host: Host, session: str) -> list[RunningTurn]:
    """The turns running in a session's chats now, from the chats' held state (what every
    client sees). Call on the engine's loop."""
    live = host.sessions.session(session)
    if live is None:
        return []
    return [_running(chat) for chat in live.chats.values() if chat.busy]


def every_running_turn(host: Host) -> list[dict[str, Any]]:
    """Every turn running now, by session URI then chat URI, as GET /api/turns/ says them
    (whose session, its title) for `manage.py ahpd sessions`. Call on the engine's loop."""
    found: list[dict[str, Any]] = []
    for uri, live in sorted(host.sessions.sessions.items()):
        for chat in sorted(live.chats.values(), key=lambda chat: chat.record.uri):
            if not chat.busy:
                continue
            turn = _running(chat)
            found.append(
                {
                    "session": uri,
                    "chat": turn.chat,
                    "turnId": turn.turn_id,
                    "sender": turn.sender,
                    "owner": live.record.owner or None,
                    "startedAt": turn.started_at or None,
                    "title": live.channel.state.get("title"),
                }
            )
    return found


def running_now(host: Host) -> list[RunningNow]:
    """Every turn running now across every session, longest running first. Call on the
    engine's loop."""
    found = [
        RunningNow(
            session=uri,
            title=str(live.channel.state.get("title") or ""),
            owner=live.record.owner or "",
            provider=live.record.provider,
            turn=_running(chat),
        )
        for uri, live in host.sessions.sessions.items()
        for chat in live.chats.values()
        if chat.busy
    ]
    return sorted(found, key=lambda now: (-now.turn.duration_s, now.session, now.turn.chat))


def _running(chat: LiveChat) -> RunningTurn:
    runner = chat.runner
    assert runner is not None
    active: dict[str, Any] = chat.state().get("activeTurn") or {}
    asked = any(
        request.get("chat") == chat.record.uri and request.get("turnId") == runner.turn_id
        for request in chat.session.channel.state.get("inputNeeded", [])
    )
    return RunningTurn(
        chat=chat.record.uri,
        turn_id=runner.turn_id,
        status="waiting for an answer" if asked else "running",
        sender=runner.sender,
        started_at=str(active.get("startedAt", "")),
        duration_s=runner.duration() / 1000,
        message=str((active.get("message") or {}).get("text", "")),
        parts=[_part_line(part) for part in active.get("responseParts", [])],
        usage=dict(active.get("usage") or {}),
    )


def _part_line(part: dict[str, Any]) -> str:
    kind = part.get("kind")
    if kind == "toolCall":
        call = part.get("toolCall", {})
        return f"tool {call.get('displayName') or call.get('toolName')}: {call.get('status')}"
    if kind in ("markdown", "reasoning"):
        return f"{kind}: {part.get('content', '')}"
    if kind == "error":
        return f"error: {part.get('error', {}).get('message', '')}"
    return str(kind)
