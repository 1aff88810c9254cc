"""Making and disposing sessions."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from ...protocol import validation
from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.uris import kind_of
from .. import access
from ..host import Host
from ..permissions import denied
from ..sessions import LiveSession
from ..sessions.client_tool_calls import fail_calls_of
from ..sessions.records import derived_default_chat_uri
from .caller import Caller, session_of, user_message
from .turns import room_for_agent


@dataclass(frozen=True, slots=True)
class Created:
    session: LiveSession
    #: The first turn's id, where a first message was sent.
    turn_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        chat = self.session.record.default_chat
        return {"uri": self.session.record.uri, "chat": chat, "turnId": self.turn_id}


def agent_for(host: Host, provider: Any) -> str:
    """The provider named (or the first configured); -32002 for one this host does not run."""
    agents = host.sessions.agents
    if provider is None:
        if not agents:
            raise ProtocolError(ErrorCode.PROVIDER_NOT_FOUND, "No agent is configured on this host")
        return next(iter(agents))
    if not isinstance(provider, str) or provider not in agents:
        raise ProtocolError(ErrorCode.PROVIDER_NOT_FOUND, f"Provider not found: {provider}")
    return provider


def config_values(host: Host, provider: str, config: Any, method: str) -> dict[str, Any]:
    """The backend's defaults with the values the client chose laid over them."""
    schema = host.sessions.agents[provider].session_config_schema()
    values = {
        key: prop["default"]
        for key, prop in schema.get("properties", {}).items()
        if "default" in prop
    }
    values.update(validation.config_object(config, method))
    return values


def do_create_session(
    host: Host,
    caller: Caller,
    *,
    uri: str | None = None,
    provider: Any = None,
    directories: Any = None,
    config: Any = None,
    active_client: Any = None,
    message: Any = None,
    scope: Any = None,
    derived_chat_uri: bool = False,
    method: str = "createSession",
    origin: dict[str, Any] | None = None,
    multi_root: bool = False,
) -> Created:
    """A session of the caller's, at the URI the client chose (or a fresh one), with its
    default chat, in the scope named (one the caller is a member of) or their home scope; a
    first message (REST) starts its first turn there.

    Asked again for a URI it holds with the same provider, nothing is made.
    """
    caller.may("session:create")
    if message is not None:
        caller.may("chat:send")
    scope = access.creation_scope(caller.principal, scope, method)
    for needed in ("session:create", "chat:send") if message is not None else ("session:create",):
        if not caller.principal.may_in(scope, needed):
            raise denied(caller.principal, needed, f" (in {scope or 'the host'})")
    if uri is not None and (kind_of(uri) not in (None, "session") or ":" not in uri):
        raise invalid_params(f"{method}: {uri} cannot name a session")
    if uri is not None:
        validation.checked_uri(uri, f"{method}: channel")
        if derived_chat_uri:
            # An older VS Code window names the default chat after the session, longer.
            validation.checked_uri(
                derived_default_chat_uri(uri), f"{method}: the default chat URI of {uri}"
            )
    # Inside a served folder (AHPD_PATHS), kept as the client spelled them; the first served
    # folder where none is named.
    dirs = validation.working_directories(directories, method)
    for folder in dirs:
        host.served.folder_of(folder, method)
    dirs = dirs or [host.served.default.as_uri()]
    provider = agent_for(host, provider)
    values = config_values(host, provider, config, method)
    client_id = caller.sender.client_id if caller.sender is not None else None
    active_client = validation.active_client(active_client, method, client_id)
    if message is not None and (reason := validation.text_message_problem(message)) is not None:
        raise invalid_params(reason)
    uri = uri or f"ahp-session:/{uuid.uuid4()}"
    existing = host.sessions.session(uri)
    if existing is not None and existing.record.provider == provider:
        caller.may_in(existing, "session:create")
        return Created(existing)
    if existing is not None or host.sessions.taken(uri):
        raise ProtocolError(ErrorCode.SESSION_ALREADY_EXISTS, f"Session already exists: {uri}")
    if message is not None:
        # Refused before the session is made: its first turn would start an agent past the cap.
        room_for_agent(host, caller.principal.ref, provider)
    session = host.sessions.create(
        caller.principal.ref,
        uri,
        provider,
        dirs,
        values,
        active_client,
        scope=scope,
        derived_chat_uri=derived_chat_uri,
        origin=origin,
        multi_root=multi_root,
    )
    if active_client is not None:
        session.tool_providers.add(active_client["clientId"])  # checked to be the caller's own
    if message is None:
        return Created(session)
    chat = session.chats[session.record.default_chat]
    return Created(session, host.turns.begin_message(chat, user_message(message, caller)))


async def do_dispose_session(host: Host, caller: Caller, uri: str) -> None:
    """Dispose a session and every chat it holds: its owner may, and who holds
    others:dispose where it is (access.py)."""
    caller.may("session:dispose")
    session = session_of(host, uri)
    caller.may_in(session, "session:dispose")
    for chat in session.record.chats:
        if (moving := host.sessions.moving_refusal(chat)) is not None:
            raise ProtocolError(ErrorCode.CONFLICT, moving)
    # Its changesets are cleared for those who watch them before the session is said gone.
    await host.changesets.clear(session.record.uri)
    host.annotations.close(session.record.uri)
    await host.sessions.dispose(session)
    if session.record.owner != caller.principal.ref:
        await host.audit.record(
            caller.act("session.disposed", "session", uri, owner=session.record.owner)
        )
    if host.automations is not None:
        await host.automations.runs.session_gone(session.record.uri)
    # The terminals it claimed go with it, each said as it goes.
    for terminal in host.terminals.claimed_by_session(session.record.uri):
        host.terminals.dispose(terminal.uri)


# -- what a client changes of a session (its rules: rules/session_rules.py) -------------------


def do_rename_session(host: Host, caller: Caller, session: LiveSession, action: Any) -> None:
    """A client's session/titleChanged: said, kept, and the session's changesets retitled."""
    caller.say(host, session.channel, action)
    session.record.title = action["title"]
    host.sessions.touch(session)
    host.changesets.retitled(session.record.uri)


def do_configure_session(host: Host, caller: Caller, session: LiveSession, action: Any) -> None:
    """A client's session/configChanged: said, and the values it left kept."""
    caller.say(host, session.channel, action)
    session.record.config = dict(session.channel.state["config"]["values"])
    host.sessions.save_session(session)


def do_set_active_client(host: Host, caller: Caller, session: LiveSession, action: Any) -> None:
    """A client's session/activeClientSet or activeClientRemoved: said; a client removed
    fails the calls it was running (sessions/client_tool_calls.py).

    An entry is held under whatever clientId it carries, as the protocol's reducer keys it;
    but only a client's own announcement makes its tools the agent's to call: tools announced
    in another client's name would have that client run what it never offered.
    """
    caller.say(host, session.channel, action)
    sender = caller.origin["clientId"] if caller.origin is not None else None
    if action["type"] == "session/activeClientRemoved":
        session.tool_providers.discard(action["clientId"])
        fail_calls_of(session, action["clientId"])
        return
    client_id = action["activeClient"].get("clientId")
    if isinstance(client_id, str) and client_id == sender:
        session.tool_providers.add(client_id)
    elif isinstance(client_id, str):
        session.tool_providers.discard(client_id)
