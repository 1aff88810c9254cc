"""The MCP servers of each session: what its owner is offered (asked of the host's MCP directory
when the session opens, and again whenever the team's registry is changed), listed as its
customizations, and run.

Who runs them depends on the session's agent:
- an agent that starts its own (ACP, `Agent.starts_mcp_servers`) is handed the enabled ones
  when its chat opens, and reports what the host can know of their state; a person cannot start
  or stop the agent's servers from here (the reference's words say so);
- for the host's own agent loop (the openai backend) the host connects to them itself
  (hosts/backends/mcp), when the session's agent is first opened or when a person asks; a
  toggle starts or stops one; a stop a person asked for holds until they ask for a start.

Before anything runs a server it is `stopped`. The specs hold secrets (env, headers): they live
here in memory and go to the agent alone; a customization shows the name and a URI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlsplit, urlunsplit

from ...backends.base import Agent, McpServerSpec
from ...backends.sandbox import Sandbox
from ..ports import McpServerDirectory
from .customizations import SessionCustomizations
from .jails import session_jail
from .records import SessionRecord, file_path

if TYPE_CHECKING:
    # The MCP SDK is a second's import: read only once a session needs its servers run.
    from ...backends.mcp import SessionMcpServers

log = logging.getLogger("ahpd.mcp")

STOPPED: dict[str, Any] = {"kind": "stopped"}
#: How long an agent's opening waits for the directory to say what its session is offered.
OFFER_TIMEOUT_S = 30.0
#: The reference's words where the session's agent runs its servers itself.
NOT_STARTABLE = "The session provider does not support starting MCP servers."


def customization_uri(spec: McpServerSpec) -> str:
    """The URI an MCP server's customization names it by: an http server's URL without what
    may be a secret in it (a user and password, a query, a fragment); for a stdio server,
    which has no address, `ahpd-mcp:<name>`, the entry it was offered as."""
    if spec.transport == "http":
        parts = urlsplit(spec.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return f"ahpd-mcp:{quote(spec.name, safe='')}"


def customization(spec: McpServerSpec, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The server's McpServerCustomization: its id, URI, name and state, no secret."""
    return {
        "id": spec.id,
        "uri": customization_uri(spec),
        "name": spec.name,
        "type": "mcpServer",
        "state": dict(state or STOPPED),
    }


class McpSession(Protocol):
    """What of a session its MCP servers read and keep themselves in (a LiveSession)."""

    record: SessionRecord
    customizations: SessionCustomizations
    mcp: SessionMcp | None


#: The token its owner pushed for a protected resource, spendable on the session (session URI,
#: owner, resource -> token): resource_tokens.ResourceTokens.token_for.
TokenFor = Callable[[str, str, str], "str | None"]


class SessionMcp:
    """One session's MCP servers."""

    def __init__(
        self,
        session: McpSession,
        sandbox: Sandbox,
        agent_starts_them: bool,
        spawn: Spawn,
        tokens: TokenFor | None = None,
    ) -> None:
        self.session = session
        self.specs: dict[str, McpServerSpec] = {}
        #: Its agent starts its servers itself (ACP): the host neither starts nor stops them.
        self.agent_starts_them = agent_starts_them
        self._sandbox = sandbox
        self._spawn = spawn
        self._tokens = tokens
        self._offered = asyncio.Event()
        #: One reading of the directory at a time, each applied before the next begins: a
        #: slower read of an older registry never lands after a newer one.
        self._offering = asyncio.Lock()
        #: The host's connections, for its own agent loop, once something needed them.
        self._connections: SessionMcpServers | None = None
        #: Servers a person stopped: not started again until a person starts them.
        self._held: set[str] = set()
        #: The session is gone: what its servers report is said to nobody.
        self._closed = False
        session.customizations.on_toggled.append(self._toggled)

    async def offer(self, directory: McpServerDirectory) -> None:
        """Ask the directory what the session's owner is offered, and list it."""
        async with self._offering:
            specs = await self._read(directory)
            self.specs = {spec.id: spec for spec in specs or ()}
            self.session.customizations.set_part(
                "mcp", [customization(spec) for spec in self.specs.values()]
            )
            self._offered.set()

    async def offer_again(self, directory: McpServerDirectory) -> None:
        """What the session's owner is offered moved while it runs (the team's registry was
        changed): the new set replaces the old. A server taken out is said removed and
        stopped; one whose definition moved (a command, a secret) is stopped and, where it
        ran, started again on the new one, its row said updated where that moved; one added is
        listed stopped. An agent that starts its servers itself takes the new set when it next
        starts (sessions/opening.py: the chat's agent is opened again at its next turn)."""
        async with self._offering:
            await self._offer_again(directory)

    async def _offer_again(self, directory: McpServerDirectory) -> None:
        specs = await self._read(directory)
        if specs is None:
            return  # what the session was offered stays: a failed read is no news
        before, now = self.specs, {spec.id: spec for spec in specs}
        if self._closed or now == before:
            return
        self.specs = now
        connections = None if self.agent_starts_them else self._connections
        if connections is not None:
            for server_id in before.keys() - now.keys():
                self._held.discard(server_id)
                self._spawn(connections.stop(server_id))
            for server_id in now.keys() & before.keys():
                if now[server_id] != before[server_id]:
                    self._spawn(self._restart(connections, now[server_id]))
        self.session.customizations.replace_part(
            "mcp",
            [
                customization(spec, self.state(spec.id) if spec.id in before else None)
                for spec in now.values()
            ],
        )

    async def _read(self, directory: McpServerDirectory) -> list[McpServerSpec] | None:
        """What the directory says the session's owner is offered; None where it could not
        be read (logged)."""
        record = self.session.record
        try:
            return list(await directory.offered(record.owner, record.scope))
        except Exception:
            log.exception("the MCP servers offered to %s could not be read", record.uri)
            return None

    async def _restart(self, connections: SessionMcpServers, spec: McpServerSpec) -> None:
        """A running server whose definition moved: stopped, and started again on the new one
        unless it is switched off (one that was not running stays stopped)."""
        was_running = connections.running(spec.id)
        await connections.stop(spec.id)
        if was_running and not self._closed and self.session.customizations.enabled(spec.id):
            connections.start(spec)

    async def offered(self) -> None:
        """Wait until the session's servers are known (a directory that does not answer in
        OFFER_TIMEOUT_S is logged, and the agent opens with none)."""
        try:
            await asyncio.wait_for(self._offered.wait(), OFFER_TIMEOUT_S)
        except TimeoutError:
            log.warning("%s: the MCP directory did not answer in time", self.session.record.uri)

    def enabled(self) -> list[McpServerSpec]:
        """The servers nobody switched off for the session."""
        return [s for s in self.specs.values() if self.session.customizations.enabled(s.id)]

    def say_state(self, server_id: str, state: Any) -> None:
        """A server's state as its runner reports it, said where it moved."""
        if server_id in self.specs and not self._closed:
            self.session.customizations.server_state(server_id, dict(state))

    def state(self, server_id: str) -> dict[str, Any]:
        entry = self.session.customizations.find(server_id) or {}
        state = entry.get("state")
        return dict(state) if isinstance(state, dict) else dict(STOPPED)

    # -- the host's own agent loop --------------------------------------------------------------

    def for_loop(self) -> SessionMcpServers:
        """The connections the session's agent loop calls through, every enabled server not
        held by a person's stop started (those starting or ready are left as they are)."""
        connections = self._connect()
        for spec in self.enabled():
            if spec.id not in self._held:
                connections.start(spec)
        return connections

    def _connect(self) -> SessionMcpServers:
        if self._connections is None:
            from ...backends.mcp import SessionMcpServers

            record = self.session.record
            folders = [file_path(uri) for uri in record.working_directories]
            tokens = self._tokens
            self._connections = SessionMcpServers(
                folder=folders[0] if folders else None,
                on_state=self.say_state,
                jail=session_jail(self._sandbox, record),
                token_for=(
                    (lambda resource: tokens(record.uri, record.owner, resource))
                    if tokens is not None
                    else None
                ),
            )
        return self._connections

    # -- what people ask ------------------------------------------------------------------------

    def started(self, server_id: str, before: dict[str, Any]) -> None:
        """A person's start, said (the reducer left it starting): started, or its state said
        again where it runs already; where the agent runs its servers, the state it was in if
        ready, else an error in the reference's words."""
        spec = self.specs[server_id]
        if self.agent_starts_them:
            if before.get("kind") == "ready":
                self.say_state(server_id, before)
            else:
                error = {"errorType": "mcp-server-start-failed", "message": NOT_STARTABLE}
                self.say_state(server_id, {"kind": "error", "error": error})
            return
        self._held.discard(server_id)
        connections = self._connect()
        now = connections.state(server_id)
        if now is not None and connections.running(server_id):
            self.say_state(server_id, now)
            return
        connections.start(spec)

    def stopped(self, server_id: str, before: dict[str, Any]) -> None:
        """A person's stop, said (the reducer left it stopped): stopped and held; where the
        agent runs its servers, logged, and the state it is still in said again."""
        if self.agent_starts_them:
            log.info(
                "%s: the agent runs MCP server %s itself; a stop is not made",
                self.session.record.uri,
                server_id,
            )
            self.say_state(server_id, before)
            return
        self._held.add(server_id)
        if self._connections is not None:
            self._spawn(self._connections.stop(server_id))

    def folders_moved(self) -> None:
        """The session's folders changed: the servers the host runs for it run in the first
        one, in a sandbox of the old set; they are stopped, and started again in the new at the
        session's next turn (for_loop)."""
        connections, self._connections = self._connections, None
        if connections is not None:
            self._spawn(connections.close())

    def signed_in(self, resource: str) -> None:
        """Its owner pushed a token for `resource`: the servers waiting for it connect again."""
        if self._connections is not None and not self._closed:
            self._connections.signed_in(resource)

    def _toggled(self, customization_id: str) -> None:
        """A person switched a server on or off for the session: for the host's own loop, on
        starts it (once the session's agent runs, or a person started one), off stops it."""
        spec = self.specs.get(customization_id)
        if spec is None or self.agent_starts_them or self._connections is None:
            return
        if self.session.customizations.enabled(spec.id):
            self._held.discard(spec.id)
            self._connections.start(spec)
        else:
            self._spawn(self._connections.stop(spec.id))

    async def close(self) -> None:
        """The session is gone: every server it connected to is stopped."""
        self._closed = True
        if self._connections is not None:
            await self._connections.close()


Spawn = Callable[[Coroutine[Any, Any, Any]], None]


class McpServersOfSessions:
    """Every session's MCP servers: offered as each session opens, closed as it goes."""

    def __init__(
        self,
        agents: Mapping[str, Agent],
        sessions: Callable[[], Iterable[McpSession]],
        directory: Callable[[], McpServerDirectory],
        sandbox: Sandbox,
        tokens: TokenFor | None = None,
    ) -> None:
        self._agents = agents
        self._tokens = tokens
        self._sessions = sessions
        self._directory = directory
        self._sandbox = sandbox
        self._tasks: set[asyncio.Task[Any]] = set()

    def opened(self, session: McpSession) -> None:
        """A session opened (made, read back, or made for a moved chat): its servers asked
        for, in the background, and listed once known."""
        agent = self._agents.get(session.record.provider)
        mcp = SessionMcp(
            session,
            self._sandbox,
            bool(getattr(agent, "starts_mcp_servers", False)),
            self.spawn,
            self._tokens,
        )
        session.mcp = mcp
        self.spawn(mcp.offer(self._directory()))

    async def registry_changed(self) -> None:
        """The team's MCP servers were changed (added, removed, redefined, offered to others):
        every running session is offered what its owner is offered now."""
        directory = self._directory()
        await asyncio.gather(
            *(
                session.mcp.offer_again(directory)
                for session in list(self._sessions())
                if session.mcp is not None
            )
        )

    def token_pushed(self, resource: str, person: str) -> None:
        """A person pushed a token for `resource`: their own sessions' servers waiting for that
        sign-in connect again (never another person's)."""
        for session in list(self._sessions()):
            if session.mcp is not None and session.record.owner == person:
                session.mcp.signed_in(resource)

    def disposed(self, session: McpSession) -> None:
        if session.mcp is not None:
            self.spawn(session.mcp.close())

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """The host stops: every session's servers are stopped."""
        for session in list(self._sessions()):
            if session.mcp is not None:
                await session.mcp.close()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def host_wide(self) -> list[dict[str, Any]]:
        """What a new session of any agent starts with: the servers offered host-wide (the
        directory asked for an owner nobody is, in no scope), each stopped."""
        try:
            specs = await self._directory().offered("", "")
        except Exception:
            log.exception("the host-wide MCP servers could not be read")
            return []
        return [customization(spec) for spec in specs]
