"""The authoritative host: the parts of the engine, made and started together.

`Host` composes the fan-out core (fanout.py), the permission gate (permissions.py), the clients
it has met (clients.py), the sessions table with their presence and turns (sessions/), root config
and the write-behind to the store. Nothing here routes a request (router.py does) or decides
what an action does (rules/ and services/ do): each part is reached through its own interface.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..backends.base import Agent
from ..backends.sandbox import Sandbox
from ..protocol import limits
from ..protocol.actions import action_spec
from ..protocol.errors import ProtocolError
from ..protocol.reducers import reduce
from ..protocol.shapes import Origin
from ..protocol.turn_windows import windowed
from ..protocol.uris import ROOT_URI, canonical
from ..protocol.validation import action_problem
from . import access, changesets, grants, root_config, session_annotations
from .audit_trail import Act, AuditTrail, NoAuditTrail
from .changesets import Changesets
from .changesets import git as changeset_git
from .changesets.outside_git import OutsideGitCopies
from .channel import Channel
from .client_requests import ASK_CLIENT, ClientRequests
from .clients import Clients
from .clock import now_ms
from .connection import Connection
from .debug_logs import DebugLogs
from .fanout import Fanout
from .folder_watchers import FolderWatchers
from .git_facts import GitFacts
from .host_settings import HostSettings as HostSettings
from .other_nodes.feeds import Feeds
from .other_nodes.messages import AGENTS, ROOT_CONFIG, SERVICE_RESTART, OtherNodes
from .other_nodes.mirrors import Mirrors
from .other_nodes.piped_clients import PipedClients
from .permissions import Permissions
from .placement import Elsewhere, HereOnly, Placement, Relay, engine_channel
from .ports import ListedMcpServers, McpServerDirectory, Store, Transport
from .principal import USERS_RESOURCE_METADATA, Directory, NoDirectory, Principal
from .principal import root as principal_root
from .resource_tokens import ResourceTokens
from .resources import watches
from .resources.served import Served
from .resources.watches import Watches
from .sessions import Presence, RunningAgents, Sessions, Turns
from .sessions.attachments import Attachments
from .sessions.folder_customization_watches import FolderCustomizations
from .sessions.live_session import LiveChat
from .sessions.local_commands import LocalCommands
from .sessions.mcp_servers import McpServersOfSessions
from .sessions.records import first_folder
from .telemetry import Telemetry
from .terminals import Terminals
from .terminals.shells import chosen_shell
from .writebehind import WriteBehind

#: A session's folders, where its agent works in more than one: the first is the agent's
#: process root, never removed, and moved only by a replacement of it
#: (services/working_directories.py).
FOLDERS_PINNED = {"immutablePrimary": True, "primaryReplacement": True}

log = logging.getLogger("ahpd.engine")
connections_log = logging.getLogger("ahpd.connections")
stop_log = logging.getLogger("ahpd.runtime")

#: The close a client is sent as the host stops: RFC 6455's "going away".
GOING_AWAY = 1001


class Host:
    def __init__(
        self,
        store: Store,
        settings: HostSettings | None = None,
        agents: Mapping[str, Agent] | None = None,
        directory: Directory | None = None,
        placement: Placement | None = None,
        relay: Relay | None = None,
    ) -> None:
        self.store = store
        self.settings = settings = settings or HostSettings()
        self.writes = WriteBehind()
        self.fanout = Fanout(
            replay_count=settings.replay_count,
            replay_bytes=self.replay_bytes,
            queue_limit=settings.client_queue_bytes,
            told=grants.TOLD,
            total_limit=settings.client_queues_total_bytes,
        )
        self.permissions = Permissions(directory or NoDirectory(), self.fanout)
        self.clients = Clients(settings.client_record_ttl_s)
        #: What this host asks of clients (their own files), and their answers.
        self.client_requests = ClientRequests(self.fanout, self.clients)
        self.root_principal = principal_root(settings.host_name)
        self.sessions = Sessions(self.fanout, self.writes, store, agents or {})
        self.sessions.moves_enabled = lambda: bool(self.root_value(root_config.CHAT_MOVES))
        self.permissions.whose = self._whose
        for agent in self.sessions.agents.values():
            if hasattr(agent, "on_info_changed"):
                agent.on_info_changed = self._agents_changed
        #: What of the disk this host serves; never its own data directory.
        self.served = Served(
            settings.served_paths or (Path.cwd(),),
            private=(
                *settings.private_paths,
                *((settings.state_dir,) if settings.state_dir is not None else ()),
            ),
        )
        #: The OS's watches over folders, one per folder, shared by every watch channel and
        #: changeset over it.
        self.folder_watchers = FolderWatchers(watches.BATCH_MS)
        self.watches = Watches(
            self.fanout,
            self.served,
            self.client_requests,
            settings.presence_grace_s,
            folders=self.folder_watchers,
            per_person=settings.watches_per_person,
        )
        self.permissions.watch_owner = self.watches.refusal
        #: What each session's working folders hold for its agent, kept current.
        self.folder_customizations = FolderCustomizations(
            self.fanout,
            self.sessions.session,
            self.served,
            self.folder_watchers,
            settings.presence_grace_s,
        )
        self.sessions.on_opened.append(self.folder_customizations.opened)
        #: Each session's uncommitted changes, where it works in git.
        self.changesets = Changesets(
            self.fanout,
            self.sessions.session,
            self.sessions.save_session,
            settings.presence_grace_s,
            kept=(
                OutsideGitCopies(settings.state_dir / "changesets", settings.private_paths)
                if settings.state_dir is not None
                else None
            ),
            folders=self.folder_watchers,
        )
        self.sessions.catalogue_of = self.changesets.catalogue
        #: Each session's annotations channel.
        self.annotations = session_annotations.Annotations(
            self.fanout, self.sessions.session, self.sessions.save_session
        )
        self.sessions.on_activity = self.changesets.activity
        #: Where what people start runs (bubblewrap, or as the server's user when off).
        self.sandbox = Sandbox(settings.sandbox)
        changeset_git.run_in(self.sandbox)
        self.terminals = Terminals(
            self.fanout,
            lambda: self.root,
            settings.terminals,
            session_record=self.sessions.record_of,
            remembered=settings.replay_count,
            sandbox=self.sandbox,
        )
        #: The terminals `!command` turns run in, in the shell a client's terminal opens.
        self.local_commands = LocalCommands(
            self.terminals, lambda: chosen_shell(self.root_value(root_config.DEFAULT_SHELL))
        )
        self.presence = Presence(self.sessions, self.fanout, settings.presence_grace_s)
        self.running_agents = RunningAgents(
            self.sessions,
            sleep_after_s=settings.sleep_after_s,
            session_limit=settings.session_residency_limit,
            per_person=settings.agents_per_person,
        )
        self.turns = Turns(
            self.sessions,
            self.running_agents,
            delta_window_ms=settings.delta_window_ms,
            state_dir=settings.state_dir,
            local=self.local_commands,
            attachments=Attachments(
                self.served, self.client_requests, settings.attachment_fetch_limit
            ),
        )
        self.turns.hooks.starting = self.changesets.starting
        self.turns.hooks.ended = self._turn_ended
        #: The ahp-otlp channels: log lines, turn spans, GenAI metrics (telemetry/).
        self.telemetry = Telemetry(
            self.fanout,
            settings.telemetry,
            self._session_of_chat,
            service_name=settings.server_name,
            service_version=settings.server_version,
        )
        #: What a VS Code window collects of the host's logs and a session's record.
        self.debug_logs = DebugLogs(
            settings.state_dir / "debug-logs" if settings.state_dir is not None else None,
            settings.telemetry.loggers,
        )
        #: Which node runs a session: this one, or (a node of several) the one the database
        #: names (placement.py).
        self.placement: Placement = placement or HereOnly()
        #: How a service call reaches an engine that is not this one (None: there is none).
        self.relay = relay
        #: The channels this node runs, fed to the nodes whose clients watch them; the ones
        #: another node runs, mirrored here for this node's clients (other_nodes/).
        self.feeds = Feeds(self.fanout, relay, self.placement.node_id)
        self.mirrors = Mirrors(
            self.fanout,
            relay,
            engine_channel(self.placement.node_id),
            settings.client_record_ttl_s,
        )
        self.fanout.on_left(self.mirrors.left)
        #: The clients whose sockets on this node are piped to the node that met them, and
        #: those whose sockets on another node are piped here.
        self.pipes = PipedClients(self.fanout, relay, self.placement, self.clients, self.disconnect)
        #: What this node tells the other nodes of the host, and hears from them.
        self.nodes = OtherNodes(
            self.placement,
            relay,
            self.sessions,
            self.terminals,
            self.clients,
            self.mirrors,
            self.feeds,
            self.fanout,
            self.root_config_said_elsewhere,
        )
        self.client_requests.ask_elsewhere = self._ask_on_node
        self.nodes.own_agents = self.own_agents_info
        self.nodes.agents_said = self.agents_said_elsewhere
        #: The agents each other node runs, as it told them (AgentInfo, by node), and what
        #: this one told them of its own last.
        self.agents_elsewhere: dict[str, list[dict[str, Any]]] = {}
        self._agents_told: list[dict[str, Any]] | None = None
        #: The automations catalogue (automations.Automations, which imports this module),
        #: where a store for them was given; None otherwise.
        self.automations: Any = None
        #: Where the acts the engine makes on someone's say are kept (audit_trail.py).
        self.audit: AuditTrail = NoAuditTrail()
        #: Acts waiting for the next write-behind round (audit_later).
        self._acts: list[Act] = []
        #: The MCP servers a session's owner is offered (ports.McpServerDirectory): the
        #: team's registry with the operator's file, wired in by the composition root.
        self.mcp_directory: McpServerDirectory = ListedMcpServers()
        #: Tokens connections pushed for an MCP server's protected resource (authenticate).
        self.resource_tokens = ResourceTokens(self.client_requests.notify)
        #: Each session's MCP servers, offered as it opens (sessions/mcp_servers.py).
        self.mcp_servers = McpServersOfSessions(
            self.sessions.agents,
            lambda: self.sessions.sessions.values(),
            lambda: self.mcp_directory,
            self.sandbox,
            self.resource_tokens.token_for,
        )
        self.resource_tokens.on_pushed.append(self.mcp_servers.token_pushed)
        self.sessions.on_opened.append(self.mcp_servers.opened)
        self.sessions.on_disposed.append(self.mcp_servers.disposed)
        #: Where each session's git working tree stands, said under its `_meta.git`.
        self.git_facts = GitFacts(self.sessions)
        self.sessions.on_opened.append(self.git_facts.opened)
        self.sessions.on_disposed.append(self.git_facts.disposed)
        #: What a new session of any agent starts with (AgentInfo.customizations): the MCP
        #: servers offered host-wide, read as the host starts.
        self.agent_customizations: list[dict[str, Any]] = []
        self._root: Channel | None = None
        #: The root as every root config push taken so far leaves it, while some are taken
        #: and not yet said (committing); None when all are said.
        self._root_ahead: dict[str, Any] | None = None
        self._root_unsaid = 0
        #: What the pushes taken since the last root config write moved, for the next: the
        #: values they set (all of them, after a replace), and whether one replaced them.
        self._root_unwritten: tuple[dict[str, Any], bool] | None = None
        self._started = False
        self._start_lock = asyncio.Lock()
        #: Set once `stop` began: no new connection is admitted.
        self.stopping = False
        self.started_monotonic = time.monotonic()

    @property
    def directory(self) -> Directory:
        return self.permissions.directory

    def forget_principals(self, tokens: list[int] | None) -> None:
        """The Django side changed what these tokens' principals are read from (None: what
        any may be, a role's grants or a team's projects): each is read again before its next
        command. How a revoked token or a changed role reaches the connections it signed in."""
        self.permissions.forget(tokens)

    def _whose(self, uri: str) -> access.Owned | None:
        """Whose a channel is: the session it is in (a session's, a chat's, a changeset's, its
        annotations'), or
        a terminal's (the session claiming it, else its opener: Terminals.whose)."""
        in_session = changesets.session_uri_of(uri) or session_annotations.session_uri_of(uri)
        record = self.sessions.record_of(in_session or uri)
        if record is not None:
            return record
        mirrored = self.mirrors.whose(uri)
        return mirrored if mirrored is not None else self.terminals.whose(uri)

    def _turn_ended(self, chat: LiveChat, turn_id: str) -> None:
        """What hears a turn end: the tree it left (changesets) and where git stands."""
        self.changesets.ended(chat, turn_id)
        self.git_facts.ended(chat, turn_id)

    def _session_of_chat(self, uri: str) -> tuple[str, str] | None:
        """The session a chat is in (its URI) and its agent's provider, for telemetry."""
        chat = self.sessions.chats.get(uri)
        if chat is None:
            return None
        return chat.session.uri, chat.session.record.provider

    async def wake(self, uri: str) -> Elsewhere | None:
        """Make ready what a URI names before a command reads it: a session this node takes
        over (its node gone), a dormant chat's turns, a watch channel named again (after a
        restart), a logs channel's level. The live node that runs it, where another does:
        nothing is made ready here."""
        elsewhere = await self.elsewhere(uri)
        if elsewhere is not None:
            return elsewhere
        self.telemetry.wake(uri)
        await self.sessions.wake(uri)
        self.watches.wake(uri)
        self.changesets.wake(uri)
        self.annotations.wake(uri)
        await self.folder_customizations.wake(uri)
        return None

    async def wake_to_watch(self, uri: str, principal: Principal) -> None:
        """`wake`, for a client about to watch `uri` (initialSubscriptions, a reconnect): a
        channel another node runs is mirrored here for it, where that node lets `principal`
        watch it; where not, nothing is opened and the channel is not found here."""
        elsewhere = await self.wake(uri)
        if elsewhere is None:
            return
        try:
            await self.mirrors.open(canonical(uri), elsewhere, principal)
        except ProtocolError as refused:
            log.info("%s is not mirrored for %s: %s", uri, principal.ref, refused.message)

    async def elsewhere(self, uri: str) -> Elsewhere | None:
        """The live node that runs the session a URI is in (or the terminal it names), where
        that is another node's; a session that no live node runs is taken by this one and
        opened here first."""
        if not self.placement.node_id:
            return None
        # An open channel (read once, on every request naming one) is this node's or a mirror.
        if (open_channel := self.fanout.channel(uri)) is not None:
            return self.mirrors.node_of(open_channel.uri)
        if (terminal_node := self.terminals.node_of(canonical(uri))) is not None:
            return Elsewhere(terminal_node, engine_channel(terminal_node), "")
        if uri in self.sessions.dormant or uri in self.sessions.sessions:
            return None
        if (listing := self.mirrors.listing(canonical(uri))) is not None:
            return listing
        found = await self.placement.find(uri)
        if found.elsewhere is not None:
            return found.elsewhere
        if found.session is not None and found.session not in self.sessions.sessions:
            await self.sessions.adopt(found.session)
        return None

    async def check_nodes(self) -> None:
        """At each renewal of this node's lease, a look at whether the others are there: the
        mirrors a node gone fed are closed, the sockets piped to it too, and the runs it ran
        failed."""
        live = set(await self.placement.others())
        await self.nodes.check_feeders(live)
        for node in set(self.agents_elsewhere) - live:
            self.agents_said_elsewhere(node, None)  # what it ran is run nowhere now
        await self.pipes.homes_gone(live)
        if self.automations is not None:
            await self.automations.check_nodes(live)

    async def let_go_taken(self) -> None:
        """Let go every session another node took while this one was thought gone (its lease
        lapsed unrenewed): told by the node's lease as it finds that."""
        kept = await self.placement.held()
        for uri in [uri for uri in self.sessions.sessions if uri not in kept]:
            log.warning("session %s is run by another node now: let go here", uri)
            watchers = self._watchers_of(uri)
            await self.sessions.let_go(uri)
            # Its channels here are gone: whoever watched them is sent to reconnect.
            await self.send_away(watchers, f"session {uri} is run by another node now")

    async def send_away(self, watchers: set[Connection], reason: str) -> None:
        """Send the watchers of channels this node no longer runs to reconnect (closed 1012),
        to be served by the node that runs them now; a node whose mirrors this one fed is told
        they are lost."""
        for conn in watchers:
            if (inbox := self.feeds.inbox_of(conn)) is not None:
                self.feeds.drop(inbox)
            else:
                await self.fanout.close_one(conn, SERVICE_RESTART, reason)

    async def _ask_on_node(
        self, node: str, who: str, uri: str, method: str, params: dict[str, Any]
    ) -> Any:
        """Ask a client another node holds (client_requests.py), by that node, as `who`."""
        assert self.relay is not None, "a client met by another node is asked over the relay"
        return await self.relay.call(
            engine_channel(node),
            ASK_CLIENT,
            Principal(who, ()),
            {"uri": uri, "method": method, "params": params},
        )

    def _watchers_of(self, session: str) -> set[Connection]:
        """The connections watching any of a session's channels (its terminals aside: they
        stay with this node's ptys)."""
        return {
            conn
            for conn in self.fanout.connections
            for channel in conn.subscriptions.values()
            if channel.kind != "terminal"
            and (record := self._whose(channel.uri)) is not None
            and record.uri == session
        }

    def agents_info(self) -> list[dict[str, Any]]:
        """Root state's `agents`: the host's, this node's and then each other node's that this
        one does not run (a session of one is made where it runs: runs_agent_elsewhere, and
        services/calls.py for REST)."""
        agents = self.own_agents_info()
        listed = {info.get("provider") for info in agents}
        for node in sorted(self.agents_elsewhere):
            for info in self.agents_elsewhere[node]:
                if info.get("provider") not in listed:
                    listed.add(info.get("provider"))
                    agents.append(info)
        return agents

    def agents_said_elsewhere(self, node: str, agents: list[dict[str, Any]] | None) -> None:
        """The agents another node runs, as it told them (None: that node is gone)."""
        if agents is None:
            self.agents_elsewhere.pop(node, None)
        else:
            self.agents_elsewhere[node] = agents
        self._agents_changed()

    async def runs_agent_elsewhere(self, params: dict[str, Any]) -> Elsewhere | None:
        """The live node a createSession's session is made on, where its agent is one this
        node does not run and another does (the least loaded serving its folder); None where
        this node runs it or none does (refused here, as one node alone refuses it)."""
        provider = params.get("provider")
        if not isinstance(provider, str) or provider in self.sessions.agents:
            return None
        if not any(
            info.get("provider") == provider
            for infos in self.agents_elsewhere.values()
            for info in infos
        ):
            return None
        return await self.placement.place_new(
            first_folder(params.get("workingDirectories")), provider
        )

    def own_agents_info(self) -> list[dict[str, Any]]:
        """The agents this node runs: each one's AgentInfo, with the people resource."""
        offered = self.agent_customizations
        return [
            {
                **agent.info(),
                "protectedResources": [USERS_RESOURCE_METADATA],
                **({"customizations": [dict(c) for c in offered]} if offered else {}),
                **(
                    {"capabilities": {"multipleWorkingDirectories": dict(FOLDERS_PINNED)}}
                    if getattr(agent, "multiple_working_directories", False)
                    else {}
                ),
            }
            for agent in self.sessions.agents.values()
        ]

    def audit_later(self, act: Act) -> None:
        """Keep an act with the next write-behind round, stamped now: the acts of a burst (a
        window pushing its settings at every keystroke) are one insert, and the act is on the
        trail with the change it records (a change said after its commit, root config's, is
        committed in the same round or the one before)."""
        self._acts.append(dataclasses.replace(act, at=datetime.now(UTC)))
        self.writes.later("audit", self._keep_acts)

    async def _keep_acts(self) -> None:
        acts, self._acts = self._acts, []
        if acts:
            await self.audit.record_many(acts)

    async def mcp_registry_changed(self) -> None:
        """The team's MCP servers were changed: what a new session starts with (each agent's
        customizations, said where it moved) and what every running session is offered are
        read again."""
        self.agent_customizations = await self.mcp_servers.host_wide()
        self._agents_changed()
        await self.mcp_servers.registry_changed()

    def _agents_changed(self) -> None:
        """What the agents offer moved (an ACP agent's models, learned at its first session;
        another node's agents): this node's told to the other nodes where they moved, and the
        host's said to every client, so a model picker is not left empty."""
        own = self.own_agents_info()
        if own != self._agents_told:
            self._agents_told = own
            self.nodes.tell({"type": AGENTS, "agents": own})
        root = self._root
        agents = self.agents_info()
        if root is not None and root.state.get("agents") != agents:
            self.fanout.emit(root, {"type": "root/agentsChanged", "agents": agents})

    # -- life -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Read what the store keeps and open the root channel. Safe to call more than once."""
        async with self._start_lock:
            if self._started:
                return
            config_schema = root_config.schema(
                client_queue_bytes=self.settings.client_queue_bytes,
                replay_bytes=self.settings.replay_bytes,
            )
            self.agent_customizations = await self.mcp_servers.host_wide()
            values = await self._kept_root_values(config_schema)
            self._root = self.fanout.open(
                Channel(
                    ROOT_URI,
                    "root",
                    {
                        "agents": self.agents_info(),
                        "activeSessions": 0,
                        "config": {"schema": config_schema, "values": values},
                    },
                )
            )
            self.fanout.queue_limit = self.client_queue_bytes()
            await self.sessions.restore()
            self.fanout.start()
            self.telemetry.start()
            self.debug_logs.start()
            self.writes.start()
            self.started_monotonic = time.monotonic()
            self._started = True
            if not self.sandbox.on and self.sessions.agents:
                log.warning(
                    "the sandbox is off (%s): agents and what they run start as the server's "
                    "own user and can read its data directory; terminals and ! commands are "
                    "a host-wide admin's alone",
                    self.sandbox.settings.reason or "no sandbox settings",
                )

    async def stop(self) -> None:
        """Stop cleanly: end the running turns as a restart reads them back (each said to its
        clients and written), send every client what it is owed and a close frame (1001,
        going away), let the backends go, write what is owed to the store. Once only."""
        if self.stopping:
            return
        self.stopping = True
        stop_log.info(
            "stopping: %d clients connected, ending the turns that run",
            len(self.fanout.connections),
        )
        ended = await self.turns.interrupt_all()
        closed = await self.fanout.close_all(GOING_AWAY, "server shutting down")
        if not await self.fanout.all_gone(self.settings.close_wait_s):
            stop_log.warning(
                "%d clients did not answer the close in %.0f s",
                len(self.fanout.connections),
                self.settings.close_wait_s,
            )
        # A shell outlives no server: every terminal's process group is killed.
        await self.terminals.stop()
        await self.sessions.shutdown()
        await self.mcp_servers.stop()
        await self.watches.stop()
        await self.changesets.stop()
        await self.git_facts.stop()
        await self.folder_customizations.stop()
        await self.folder_watchers.stop()
        await self.running_agents.drain()
        await self.writes.stop()
        await self.telemetry.stop()
        self.debug_logs.stop()
        self.fanout.stop()
        stop_log.info(
            "stopped: %d turns ended as interrupted, %d clients closed 1001, the store written",
            ended,
            closed,
            extra={"turnsEnded": ended, "clientsClosed": closed},
        )

    # -- connections ----------------------------------------------------------------------

    def connect(
        self, transport: Transport, peer: str, principal: Principal | None = None
    ) -> Connection:
        """A socket admitted at the upgrade, as the person (or the deployment) its token is."""
        conn = self.fanout.connect(transport, peer)
        conn.principal = conn.admitted_principal = principal or self.root_principal
        connections_log.info(
            "connected: %s as %s",
            peer,
            conn.principal.ref,
            extra={"peer": peer, "principal": conn.principal.ref},
        )
        return conn

    def disconnect(self, conn: Connection) -> None:
        """The socket is gone: stop delivering to it and start the client record's clock."""
        self.pipes.gone(conn)
        if self.fanout.disconnect(conn):
            connections_log.info(
                "disconnected: %s (client %s)",
                conn.peer,
                conn.client_id,
                extra={"peer": conn.peer, "client": conn.client_id},
            )
        # Also where the fan-out dropped it already (too slow): its record's clock starts.
        self.clients.gone(conn)
        self.client_requests.gone(conn)
        self.resource_tokens.gone(conn)

    # -- root -----------------------------------------------------------------------------

    @property
    def root(self) -> Channel:
        assert self._root is not None, "the host is not started"
        return self._root

    def root_value(self, key: str) -> Any:
        """A root config value, or its declared default where a replace left it unset."""
        config = self.root.state["config"]
        if key in config["values"]:
            return config["values"][key]
        return config["schema"]["properties"][key]["default"]

    def client_queue_bytes(self) -> int:
        return int(self.root_value(root_config.CLIENT_QUEUE_BYTES))

    def replay_bytes(self) -> int:
        return int(self.root_value(root_config.REPLAY_BYTES)) if self._root is not None else 0

    def root_values_ahead(self) -> dict[str, Any]:
        """The root config values every push taken so far leaves, said or not."""
        ahead = self._root_ahead if self._root_ahead is not None else self.root.state
        return dict(ahead["config"]["values"])

    async def change_root_config(
        self,
        action: dict[str, Any],
        *,
        origin: Origin | None = None,
        sender: Connection | None = None,
    ) -> str | None:
        """Apply a root/configChanged of the right shape: its values checked, then kept and
        said only where it moves one; why it cannot be taken, or None.

        A push that moves nothing is not kept, and is said back to its sender alone (which
        waits for its echo, as for any dispatch), so a window mirroring its settings at every
        connect moves no other client watching the root. One that moves something is committed
        before any client is told (a client told a setting reads it back after a crash), by a
        group commit: each push is reduced on the ones before it at once, and said once the
        commit covering it is done, in the order they came, so pushes that arrive while one
        commit runs share the next (writes.then_say) instead of one database round trip each.
        The sender's later frames wait until its pushes are said (router.py), so it is told
        of its actions in the order it sent them.
        """
        reason = root_config.check_push(action["config"])
        if reason is not None:
            return reason
        root = self.root
        # The values every push taken so far leaves, said or not: what the next one moves.
        ahead = self._root_ahead if self._root_ahead is not None else root.state
        next_state = reduce("root", ahead, action, now_ms=now_ms())
        moved = next_state["config"]["values"] != ahead["config"]["values"]
        if not moved and self._root_unsaid == 0:
            if sender is not None:
                self._echo_root_push(action, origin, sender)
            return None
        if moved:
            self._root_ahead = next_state
            values = next_state["config"]["values"]
            written, replaced = self._root_unwritten or ({}, False)
            if action.get("replace"):
                written, replaced = dict(values), True
            else:
                # Only the keys pushed: another node's push of other keys, kept meanwhile, is
                # not written over (the store lays these over what it keeps).
                written = {**written, **{k: values[k] for k in action["config"] if k in values}}
            self._root_unwritten = (written, replaced)
            self.writes.later("root-config", self._write_root_config)
        self._root_unsaid += 1

        def say() -> None:
            self._root_unsaid -= 1
            if self._root_unsaid == 0:
                self._root_ahead = None
            if not moved:
                if sender is not None:
                    self._echo_root_push(action, origin, sender)
                return
            self._root_config_said(action, origin, sender)
            # The other nodes of the host say it too (root state is the same on every node):
            # it is kept already, and they read it back.
            self.nodes.tell({"type": ROOT_CONFIG})

        said = self.writes.then_say(say)
        if sender is not None:
            sender.unsaid = said
        return None

    def _root_config_said(
        self, action: dict[str, Any], origin: Origin | None, sender: Connection | None
    ) -> None:
        # Reduced again on the root as it is now: other root actions (agents, terminals,
        # counts) may have been said since this push was taken.
        self.fanout.emit(self.root, action, origin=origin, sender=sender)
        # chatMoves.enabled turned on or off says every chat's movable again.
        self.sessions.say_movable_all()
        # clientQueueBytes is read before every frame to every client: a push applies to
        # the very next one.
        self.fanout.queue_limit = self.client_queue_bytes()

    async def _kept_root_values(self, config_schema: dict[str, Any]) -> dict[str, Any]:
        """The root config values the store keeps, over the schema's defaults."""
        values = root_config.defaults(config_schema)
        for key, value in (await self.store.load_root_config()).items():
            # A value kept before the wire's limits were checked would make every root
            # snapshot unsayable: it is left out, loudly, rather than brought back.
            problem = limits.sayable_problem({key: value}, "root config")
            if problem is not None:
                log.warning("root config: %s; not read back", problem)
                continue
            values[key] = value
        return values

    async def _write_root_config(self) -> None:
        if self._root_unwritten is None:
            return
        (values, replace), self._root_unwritten = self._root_unwritten, None
        await self.store.save_root_config(values, replace=replace)

    async def root_config_said_elsewhere(self) -> None:
        """Another node of the host kept a root config push: read back as the store keeps it
        now (every node's pushes laid over one another there, in the order written), and what
        it moves here said. Every node reads it back after each push it hears of, so all end
        as the store does, whichever of two pushes at once was written last."""
        config = self.root.state["config"]
        values = await self._kept_root_values(config["schema"])
        now = config["values"]
        if any(key not in values for key in now):
            self._root_config_said(
                {"type": "root/configChanged", "config": values, "replace": True}, None, None
            )
            return
        moved = {key: value for key, value in values.items() if now.get(key) != value}
        if moved:
            self._root_config_said({"type": "root/configChanged", "config": moved}, None, None)

    def _echo_root_push(
        self, action: dict[str, Any], origin: Origin | None, sender: Connection
    ) -> None:
        self.fanout.emit(
            self.root,
            action,
            origin=origin,
            sender=sender,
            reduce_state=False,
            sender_only=True,
        )

    async def say_host_action(self, uri: Any, action: Any) -> str | None:
        """Say an action on this host's own account (no origin); why not, or None when said."""
        if not isinstance(uri, str) or not isinstance(action, dict):
            return "a host action needs a channel URI and an action object"
        spec = action_spec(str(action.get("type")))
        channel = self.fanout.channel(uri)
        if spec is None:
            return f"unknown action type: {action.get('type')}"
        if channel is None:
            return f"no such channel: {uri}"
        if channel.kind != spec.channel_kind:
            return f"{spec.type} is not an action of {channel.uri}"
        if spec.type == "root/configChanged":
            return action_problem(action) or await self.change_root_config(action)
        self.fanout.emit(channel, action)
        return None

    def snapshot(
        self,
        conn: Connection,
        channel: Channel,
        resource: str | None = None,
        *,
        turns: int | None = None,
    ) -> Any:
        """A channel's snapshot for one connection, through its kind's view (fanout.py); the root
        says who it is and the grant map. A chat's is every turn it holds, or the newest `turns`
        of them with a cursor back (turn_windows.py)."""
        snapshot = channel.snapshot(self.fanout.server_seq, resource)
        if (view := self.fanout.state_views.get(channel.kind)) is not None:
            snapshot["state"] = view(conn.principal, snapshot["state"])
        if channel.kind == "chat":
            snapshot["state"] = windowed(snapshot["state"], turns)
        if channel.kind == "root":
            state = dict(snapshot["state"])
            if not conn.principal.may(grants.TOLD["root/configChanged"]):
                # Root state shows a person only what their grants let them read.
                state["config"] = {"schema": state["config"]["schema"], "values": {}}
            if not conn.principal.may(grants.TOLD["root/terminalsChanged"]):
                state.pop("terminals", None)
            elif "terminals" in state:
                # The terminals they may read, as root/terminalsChanged tells them.
                state["terminals"] = self.terminals.visible(conn.principal, state["terminals"])
            state["_meta"] = {
                **state.get("_meta", {}),
                "ahpd.grants": grants.advertised(),
                "ahpd.principal": conn.principal.ref,
            }
            snapshot["state"] = state
        return snapshot
