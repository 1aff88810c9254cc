"""The sessions the other nodes run, as rows of this node's catalogue: so a client of any node
lists every session of the host, and hears of each one added, changed or removed, whichever
node runs it.

Each node tells the others what it tells its own root watchers of its sessions (a row added,
changed or removed, with whose session it is), through the nodes' channel-layer group; a node
that starts asks the others for their rows (`HELLO`), and each answers with all of its own
(`ROWS`), which replace what was held of that node. A session taken over by this node leaves
these rows for its own (session_table.py); one taken over by a third is said added by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .mirrors import Owner

#: What a node tells the others of one of its sessions: a root notification it said.
SESSION = "nodes.session"
#: A node started, and asks the others for their rows.
HELLO = "nodes.hello"
#: A node's rows, all of them, sent to the node that asked.
ROWS = "nodes.rows"


@dataclass(slots=True)
class Row:
    node: str
    summary: dict[str, Any]
    owned: Owner

    @property
    def modified_ms(self) -> int:
        """Where the row sorts in the catalogue: its modifiedAt (an ISO 8601 time)."""
        said = self.summary.get("modifiedAt")
        if not isinstance(said, str):
            return 0
        return int(datetime.fromisoformat(said).timestamp() * 1000)


def told(node: str, method: str, params: dict[str, Any], owned: Owner) -> dict[str, Any]:
    """The message that tells the other nodes of a root notification about a session."""
    return {
        "type": SESSION,
        "node": node,
        "method": method,
        "params": params,
        "owned": {"uri": owned.uri, "owner": owned.owner, "scope": owned.scope},
    }


def owner_of(data: dict[str, Any]) -> Owner:
    return Owner(str(data["uri"]), str(data["owner"]), str(data["scope"]))


class SessionsElsewhere:
    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def take(self, node: str, method: str, params: dict[str, Any], owned: Owner) -> Row | None:
        """Hold what another node said of its session; the row it leaves (None: gone)."""
        uri = owned.uri
        if method == "root/sessionAdded":
            added = self.rows[uri] = Row(node, dict(params["summary"]), owned)
            return added
        if method == "root/sessionRemoved":
            self.rows.pop(uri, None)
            return None
        changed = self.rows.get(uri)
        if changed is None:
            return None
        changed.node = node
        changed.summary = {**changed.summary, **params.get("changes", {})}
        return changed

    def replace(self, node: str, rows: list[dict[str, Any]]) -> tuple[list[str], list[Row]]:
        """All of a node's rows, as it sent them: (the URIs it no longer runs, its rows)."""
        dropped = [uri for uri, row in self.rows.items() if row.node == node]
        for uri in dropped:
            del self.rows[uri]
        held = []
        for data in rows:
            row = Row(node, dict(data["summary"]), owner_of(data["owned"]))
            self.rows[row.owned.uri] = row
            held.append(row)
        kept = {row.owned.uri for row in held}
        return [uri for uri in dropped if uri not in kept], held
