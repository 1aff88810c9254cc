"""Opening a chat's agent: once per chat (later turns reuse it), room made under the residency
limit, and the agent handed the chat's kept turns, its folders, its config and its terminals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...backends.base import Agent, AgentChat, BackendError, ChatContext, McpServerSpec
from ..terminals import Terminals
from .agent_reports import AgentReports
from .agent_terminals import AgentTerminals
from .client_tool_calls import client_tools_of
from .jails import session_jail
from .live_session import LiveChat
from .local_commands import command_of
from .records import assistant_text, file_path
from .running_agents import RunningAgents
from .session_table import Sessions


async def open_agent_chat(
    chat: LiveChat,
    sessions: Sessions,
    running_agents: RunningAgents,
    terminals: Terminals,
    state_dir: Path | None,
) -> AgentChat:
    """The chat's agent, opened now unless it is open already."""
    async with chat.opening:
        record = chat.session.record
        agent = sessions.agents.get(record.provider)
        folders = tuple(record.working_directories)
        if chat.agent_chat is not None and (
            chat.opened_in != folders or chat.opened_with != handed_servers(chat, agent)
        ):
            # The session's folders changed since it was opened (services/
            # working_directories.py), or the MCP servers its agent starts itself (a server
            # taken out of the registry, redefined, switched off or on): let go, and opened
            # again as the session is now, resumed by its id.
            closing = running_agents.let_go(chat)
            if closing is not None:
                await closing
        if chat.agent_chat is not None:
            return chat.agent_chat
        if agent is None:
            raise BackendError(f"No agent is configured for provider {record.provider!r}")
        # What the turn waits on until its agent runs, said as VS Code's host says a first
        # send's wait (chat/activityChanged), and cleared whatever came of it.
        chat.say({"type": "chat/activityChanged", "activity": starting_words(agent.info())})
        try:
            return await _open(chat, agent, sessions, running_agents, terminals, state_dir)
        finally:
            if sessions.chat(chat.record.uri) is chat:
                chat.say({"type": "chat/activityChanged"})


def handed_servers(chat: LiveChat, agent: Agent | None) -> tuple[McpServerSpec, ...]:
    """The MCP servers the chat's agent is handed to start itself: the session's enabled ones,
    for an agent that starts its own (ACP, Claude); none for one the host runs them for."""
    mcp = chat.session.mcp
    if mcp is None or not getattr(agent, "starts_mcp_servers", False):
        return ()
    return tuple(mcp.enabled())


def starting_words(info: dict[str, Any]) -> str:
    """What a chat says it waits on while its agent starts: the agent by its display name."""
    return f"Starting {info.get('displayName') or info.get('provider') or 'the agent'}"


async def _open(
    chat: LiveChat,
    agent: Agent,
    sessions: Sessions,
    running_agents: RunningAgents,
    terminals: Terminals,
    state_dir: Path | None,
) -> AgentChat:
    """Start the chat's agent: room made for it, then its backend's chat opened."""
    record = chat.session.record
    await running_agents.make_room(chat)
    history = [
        {"user": t["message"].get("text", ""), "assistant": assistant_text(t)}
        for t in chat.record.turns
        # A ! command's turn was this host's, never the model's.
        if t.get("state") == "complete" and command_of(t["message"].get("text", "")) is None
    ]
    jail = session_jail(terminals.sandbox, record)
    mcp = chat.session.mcp
    if mcp is not None:
        await mcp.offered()
    starts_own = bool(getattr(agent, "starts_mcp_servers", False))
    context = ChatContext(
        chat=chat.record.uri,
        working_directories=[file_path(u) for u in record.working_directories] or [Path.cwd()],
        backend_id=chat.record.backend_id,
        history=history,
        config=dict(chat.session.channel.state["config"]["values"]),
        state_dir=state_dir and state_dir / "agents" / record.provider,
        terminals=AgentTerminals(terminals, record, chat.record.uri, jail),
        jail=jail,
        client_tools=lambda: client_tools_of(
            chat.session.channel.state, chat.session.tool_providers
        ),
        mcp_servers=handed_servers(chat, agent),
        mcp_state=mcp.say_state if mcp is not None else None,
        mcp=mcp.for_loop() if mcp is not None and not starts_own else None,
        reports=AgentReports(chat),
    )
    chat.agent_chat = await agent.open_chat(context)
    chat.opened_in = tuple(record.working_directories)
    chat.opened_with = tuple(context.mcp_servers)
    if chat.agent_chat.backend_id != chat.record.backend_id:
        chat.record.backend_id = chat.agent_chat.backend_id
        sessions.save_chat(chat)
    return chat.agent_chat
