"""Which node runs each session (hosts.models.StoredSession.node), when several `serve`
processes share one database (hosts/store/nodes.py).

A session is run by one node at a time. A node takes a session by one statement under a
condition, never a read and then a write: the row's node is blank, is this node already, or is
a node whose lease has lapsed (no live row). Two nodes taking the same session at once cannot
both win: the database applies one update, and the other's condition no longer holds when it
is evaluated again on the row the first wrote (PostgreSQL's read committed; SQLite writes one
at a time).

A node on this very machine, among this process's pids, whose process is gone (killed and not
yet lapsed) has its row let go first, by a delete naming the start read, so its sessions are
taken at once rather than a lease later; a container sharing the machine's name but not its
pids (host networking) is never judged gone from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePath

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import Now

from ..edge.control import gone
from ..engine.sessions.records import first_folder
from ..models import Node, StoredChat, StoredSession
from .engine_database import db_call


@dataclass(frozen=True)
class Holder:
    """A live node that runs a session: its id, and where clients reach it."""

    node_id: str
    address: str


def _live_ids() -> QuerySet[Node]:
    return Node.objects.filter(lease_until__gte=Now()).values("node_id")


def _free_for(node_id: str) -> Q:
    """Sessions `node_id` may take: no node's, its own, or a node's that is gone."""
    return Q(node="") | Q(node=node_id) | ~Q(node__in=_live_ids())


def let_go_gone_here(machine: str) -> None:
    """Let go the rows of nodes on this machine whose process is gone (killed before their
    lease lapsed); a start that has claimed the row since is another instance, left alone."""
    rows = Node.objects.filter(machine=machine, lease_until__gte=Now())
    for node_id, instance, pid, space in rows.values_list(
        "node_id", "instance", "pid", "pid_space"
    ):
        if gone(machine, pid, space):
            Node.objects.filter(node_id=node_id, instance=instance).delete()


def take_free(node_id: str, machine: str) -> int:
    """Take every session no live node runs that this node may run (a node starting): how
    many it runs now."""
    let_go_gone_here(machine)
    live = _live_nodes()
    free = StoredSession.objects.filter(_free_for(node_id)).exclude(node=node_id)
    takeable = [
        uri
        for uri, folders, provider in free.values_list("uri", "working_directories", "provider")
        if _runs_here(node_id, first_folder(folders), provider, live)
    ]
    for start in range(0, len(takeable), 500):
        chunk = takeable[start : start + 500]
        StoredSession.objects.filter(_free_for(node_id), uri__in=chunk).update(node=node_id)
    return StoredSession.objects.filter(node=node_id).count()


@dataclass(frozen=True)
class LiveNode:
    """A live node as placement reads it."""

    address: str
    folders: tuple[str, ...]
    agents_max: int
    agents: tuple[str, ...]

    def runs(self, folder: Path | None, provider: str | None) -> bool:
        """Whether it may run a session of agent `provider` working in `folder` (its first):
        it serves the folder and runs the agent (None: any)."""
        return (folder is None or _serves(self.folders, folder)) and (
            provider is None or provider in self.agents
        )


def _live_nodes() -> dict[str, LiveNode]:
    """The live nodes, by id, in id order."""
    rows = Node.objects.filter(lease_until__gte=Now()).order_by("node_id")
    return {
        str(node_id): LiveNode(str(address), tuple(folders), int(agents_max), tuple(agents))
        for node_id, address, folders, agents_max, agents in rows.values_list(
            "node_id", "address", "folders", "agents_max", "agents"
        )
    }


def _runs_here(
    node_id: str, folder: Path | None, provider: str | None, live: dict[str, LiveNode]
) -> bool:
    """Whether `node_id` may take a session of agent `provider` working in `folder`: it serves
    the folder and runs the agent, or no live node does (a session is never left with nowhere
    to run)."""
    if node_id in live and live[node_id].runs(folder, provider):
        return True
    return not any(node.runs(folder, provider) for node in live.values())


def session_of(uri: str) -> str | None:
    """The session a URI is in, as the database keeps it: a session's, a chat's, or a channel
    under a session's (`<session>/annotations`, a changeset's); None for none."""
    chat = StoredChat.objects.filter(uri=uri).values_list("session_id", flat=True).first()
    if chat is not None:
        return str(chat)
    named = [uri, *(uri[:cut] for cut in range(len(uri)) if uri[cut] == "/" and cut)]
    kept = StoredSession.objects.filter(uri__in=named).values_list("uri", flat=True)
    return max(kept, key=len, default=None)


def take(session: str, node_id: str, machine: str) -> Holder | None:
    """Take `session` for `node_id` where no live node runs it and this node may run it
    (None: it is `node_id`'s now); the live node that runs it otherwise, or, where this node
    does not serve its folder, a live node that does (which takes it at its first use)."""
    rows = StoredSession.objects.filter(uri=session)
    mine = rows.filter(node=node_id).exists()
    if not mine:
        let_go_gone_here(machine)
    folders, provider = rows.values_list("working_directories", "provider").first() or ([], None)
    folder = first_folder(folders)
    live = _live_nodes()
    if not mine and not _runs_here(node_id, folder, provider, live):
        runner = rows.filter(node__in=_live_ids()).values_list("node", flat=True).first()
        if runner is None:
            # A live node serving its folder and running its agent runs it, taking it at its
            # first use there.
            runner = next(n for n, node in live.items() if node.runs(folder, provider))
        return Holder(str(runner), live[str(runner)].address if runner in live else "")
    if rows.filter(_free_for(node_id)).update(node=node_id):
        return None
    holder = rows.values_list("node", flat=True).first()
    if holder is None:
        return None  # disposed meanwhile: nothing to run
    address = Node.objects.filter(node_id=holder).values_list("address", flat=True).first()
    return Holder(str(holder), str(address or ""))


def held(node_id: str) -> list[str]:
    """The sessions `node_id` runs, as the database says."""
    return list(StoredSession.objects.filter(node=node_id).values_list("uri", flat=True))


def others(node_id: str, machine: str) -> list[str]:
    """The live nodes of the host but `node_id` (a node on this machine whose process is gone
    let go first: it is no live node, whatever its lease says)."""
    let_go_gone_here(machine)
    return [str(n) for n in _live_ids().exclude(node_id=node_id).values_list("node_id", flat=True)]


def place(folder: str | None, provider: str | None, node_id: str) -> tuple[str, str]:
    """The node a new session of agent `provider` working in `folder` goes to: of the live
    nodes serving the folder and running the agent (None: any), the one running fewest
    sessions for the agents it may run (`node_id`, this one, where it is among the least
    loaded or no node may run it)."""
    counts = dict(
        StoredSession.objects.exclude(node="")
        .values("node")
        .annotate(n=Count("uri"))
        .values_list("node", "n")
    )
    path = None if folder is None else Path(folder)
    best, best_load = (node_id, ""), None
    for other, node in _live_nodes().items():
        if not node.runs(path, provider):
            continue
        running = counts.get(other, 0)
        if node.agents_max and running >= node.agents_max:
            continue  # full
        load = running / (node.agents_max or 1000)
        if best_load is None or load < best_load or (load == best_load and other == node_id):
            best, best_load = (other, node.address), load
    return best


def _serves(folders: tuple[str, ...], folder: Path) -> bool:
    path = PurePath(folder)
    return any(path == PurePath(root) or PurePath(root) in path.parents for root in folders)


class DjangoSessionNodes:
    """The engine's SessionNodes port (hosts/engine/placement.py) for one node, over the ORM."""

    def __init__(self, node_id: str, machine: str) -> None:
        self.node_id = node_id
        self.machine = machine

    async def session_of(self, uri: str) -> str | None:
        return await db_call(session_of)(uri)

    async def take(self, session: str) -> tuple[str, str] | None:
        holder = await db_call(take)(session, self.node_id, self.machine)
        return None if holder is None else (holder.node_id, holder.address)

    async def place(self, folder: str | None, provider: str | None) -> tuple[str, str]:
        return await db_call(place)(folder, provider, self.node_id)

    async def held(self) -> list[str]:
        return await db_call(held)(self.node_id)

    async def others(self) -> list[str]:
        return await db_call(others)(self.node_id, self.machine)
