"""`ahpd status` and `ahpd sessions`: the running server's own facts, asked of it (server.py).
Neither touches the database: a server that is not running is said so in one line.
`ahpd nodes`: the host's nodes, read from the database every node shares, so that it answers
on any machine given the host's DATABASE_URL, whether a node runs there or not."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from hosts.store.nodes import live, node_json

from .server import call, listing, serving
from .verbs import Shown, verb

#: What status leaves out of its lines: who asked (the control token is root, with every grant).
_ASKER = ("principal", "grants")


def register(nouns: Any) -> None:
    verb(
        nouns,
        "status",
        "the running server: its URL, version, connections, running turns, agents",
        status,
        database=False,
    )
    verb(
        nouns,
        "nodes",
        "the host's nodes (every serve on this database): where each listens, since when, "
        "until when its lease holds",
        nodes_list,
    )
    sessions = verb(
        nouns,
        "sessions",
        "sessions, whose each is and what runs in them; --cancel stops a session's turns",
        sessions_list,
        database=False,
    )
    sessions.add_argument("--running", action="store_true", help="only those with a turn running")
    sessions.add_argument(
        "--cancel", metavar="URI", help="stop every turn running in this session, for everyone"
    )


def status(options: dict[str, Any]) -> Shown:
    record = serving()
    answer = call("GET", "status/")
    data = {"url": record.public, "api": record.api_base + "api/", "pid": record.pid, **answer}
    shown = {**data, "nodes": [node["id"] for node in data.get("nodes") or []]}
    lines = [f"{key}: {_said(value)}" for key, value in shown.items() if key not in _ASKER]
    return Shown(data, lines=lines)


def nodes_list(options: dict[str, Any]) -> Shown:
    rows = [node_json(node) for node in live()]
    lines = [
        f"{row['id']}  {row['address'] or '-'}  pid {row['pid']} on {row['machine']}  "
        f"since {row['startedAt']}  lease until {row['leaseUntil']}  "
        f"agents {', '.join(row['agents']) or 'none'} ({row['agentsMax'] or 'no limit'} at "
        f"most)  folders {', '.join(row['folders']) or '-'}"
        for row in rows
    ]
    return Shown(rows, lines=lines or ["no nodes: no serve runs on this database"])


def _said(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_said(item) for item in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_said(v)}" for k, v in value.items()) or "none"
    return str(value)


def sessions_list(options: dict[str, Any]) -> Shown | dict[str, Any]:
    if options["cancel"]:
        uri = options["cancel"]
        answer = call("POST", f"sessions/{quote(uri, safe='')}/cancel/")
        return {"session": uri, "cancelled": answer.get("cancelled", [])}
    running: dict[str, list[dict[str, Any]]] = {}
    for turn in listing("turns/"):
        running.setdefault(turn["session"], []).append(turn)
    rows = []
    for session in listing("sessions/"):
        turns = running.pop(session["uri"], [])
        if options["running"] and not turns:
            continue
        rows.append(_row(session["uri"], session.get("owner"), session.get("title"), turns))
    for uri, turns in running.items():  # running, not written behind yet
        rows.append(_row(uri, turns[0].get("owner"), turns[0].get("title"), turns))
    lines = [
        f"{row['uri']}  owner={row['owner'] or '-'}  title={row['title'] or '-'}  "
        + (
            "running: " + ", ".join(f"{t['turnId']} by {t['sender'] or '-'}" for t in row["turns"])
            if row["turns"]
            else "idle"
        )
        for row in rows
    ]
    return Shown(rows, lines=lines or ["no sessions" + (" running" if options["running"] else "")])


def _row(uri: str, owner: Any, title: Any, turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "uri": uri,
        "owner": owner or None,
        "title": title or None,
        "running": bool(turns),
        "turns": [
            {key: turn.get(key) for key in ("chat", "turnId", "sender", "startedAt")}
            for turn in turns
        ],
    }
