"""The ports through which the engine reaches what it does not own (the database, mostly)."""

from __future__ import annotations

from typing import Any, Protocol

from ..backends.base import McpServerSpec


class Store(Protocol):
    """Durable facts the engine keeps. Implemented over Django's ORM in `hosts.store`."""

    async def load_root_config(self) -> dict[str, Any]: ...

    async def save_root_config(self, values: dict[str, Any], *, replace: bool = False) -> None:
        """Keep the root config values pushed, over those kept (instead of them: `replace`)."""
        ...

    async def load_sessions(self, only: str | None = None) -> list[dict[str, Any]]:
        """Every kept session this engine runs (or the one `only` names) as {"session":
        record, "chats": [record with "turn_count"]}: what listing and watching a session
        need, not the chats' turns. A node of several takes, first, every session no live
        node runs (hosts/store/session_nodes.py)."""
        ...

    async def load_turns(self, chat: str) -> list[dict[str, Any]]:
        """A chat's turns, oldest first."""
        ...

    async def load_running_turns(
        self, session: str | None = None
    ) -> list[tuple[str, int, dict[str, Any]]]:
        """(chat, position, turn) of every turn kept as still running in the sessions this
        engine runs (or in `session`)."""
        ...

    async def save_session(self, session: dict[str, Any]) -> None: ...

    async def delete_session(self, uri: str) -> None: ...

    async def save_chat(self, chat: dict[str, Any]) -> None: ...

    async def delete_chat(self, uri: str) -> None: ...

    async def save_turn(self, chat: str, position: int, turn: dict[str, Any]) -> None: ...

    async def truncate_turns(self, chat: str, keep: int) -> None:
        """Forget every turn of the chat from position `keep` on."""
        ...


class McpServerDirectory(Protocol):
    """The team's MCP servers (the registry kept in the database) with the operator's
    AHPD_CONFIG `mcpServers` (hosts/edge/runtime.py reads them at start; the composition root
    hands them to the directory, and they come first). Implemented in `mcp_servers`."""

    async def offered(self, owner: str, scope: str) -> list[McpServerSpec]:
        """The servers a session owned by `owner` (`user:<id>`, `root:<host>`) in `scope`
        (`team:<slug>`, `project:<slug>`, "" the host's) is offered: those offered host-wide,
        to that person, to that scope (and a project's team); secrets included, for the
        agent alone."""
        ...


class ListedMcpServers:
    """A directory that offers every session the servers it was made with, host-wide: the
    operator's AHPD_CONFIG `mcpServers` alone, where no registry is wired in (engine tests)."""

    def __init__(self, servers: list[McpServerSpec] | None = None) -> None:
        self.servers = list(servers or ())

    async def offered(self, owner: str, scope: str) -> list[McpServerSpec]:
        return list(self.servers)


class MemoryStore:
    """A store that keeps everything for the life of the process (engine tests, benchmarks)."""

    def __init__(self) -> None:
        self.root_config: dict[str, Any] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.chats: dict[str, dict[str, Any]] = {}
        self.turns: dict[str, dict[int, dict[str, Any]]] = {}

    async def load_root_config(self) -> dict[str, Any]:
        return dict(self.root_config)

    async def save_root_config(self, values: dict[str, Any], *, replace: bool = False) -> None:
        self.root_config = dict(values) if replace else {**self.root_config, **values}

    async def load_sessions(self, only: str | None = None) -> list[dict[str, Any]]:
        out = []
        for session in self.sessions.values():
            if only is not None and session["uri"] != only:
                continue
            chats = [
                {**self.chats[uri], "turn_count": len(self.turns.get(uri, {}))}
                for uri in session["chats"]
                if uri in self.chats
            ]
            out.append({"session": dict(session), "chats": chats})
        return out

    async def load_turns(self, chat: str) -> list[dict[str, Any]]:
        return [dict(t) for _, t in sorted(self.turns.get(chat, {}).items())]

    async def load_running_turns(
        self, session: str | None = None
    ) -> list[tuple[str, int, dict[str, Any]]]:
        return [
            (chat, position, dict(turn))
            for chat, turns in self.turns.items()
            for position, turn in turns.items()
            if turn.get("state") == "running"
            and (session is None or self.chats.get(chat, {}).get("session") == session)
        ]

    async def save_session(self, session: dict[str, Any]) -> None:
        self.sessions[session["uri"]] = dict(session)

    async def delete_session(self, uri: str) -> None:
        session = self.sessions.pop(uri, None)
        for chat in session["chats"] if session else []:
            self.chats.pop(chat, None)
            self.turns.pop(chat, None)

    async def save_chat(self, chat: dict[str, Any]) -> None:
        self.chats[chat["uri"]] = dict(chat)

    async def delete_chat(self, uri: str) -> None:
        self.chats.pop(uri, None)
        self.turns.pop(uri, None)

    async def save_turn(self, chat: str, position: int, turn: dict[str, Any]) -> None:
        self.turns.setdefault(chat, {})[position] = dict(turn)

    async def truncate_turns(self, chat: str, keep: int) -> None:
        turns = self.turns.get(chat, {})
        for position in [p for p in turns if p >= keep]:
            del turns[position]


class Transport(Protocol):
    """One client's socket, as the engine sees it.

    Neither `write_now` nor `send_batch` waits for the peer to read: the engine bounds what a
    slow client holds by asking `buffered` before each frame, and drops the client past its
    limit.
    """

    def write_now(self, texts: list[str]) -> bool:
        """Hand frames to the socket, in order, without waiting, where the transport can;
        False (nothing written) leaves them to `send_batch`."""
        ...

    async def send_batch(self, texts: list[str]) -> None:
        """Send several frames in order, as one write where the transport can."""
        ...

    async def close(self, code: int, reason: str) -> None: ...

    async def abort(self) -> None:
        """Drop the socket at once, discarding whatever it still holds unsent."""
        ...

    def buffered(self) -> int | None:
        """Bytes written to this socket and not yet taken by the kernel, or None if unknown."""
        ...
