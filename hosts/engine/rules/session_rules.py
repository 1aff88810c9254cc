"""The rules of a session's actions."""

from __future__ import annotations

from ..services.customizations import do_toggle_customization
from ..services.mcp_servers import (
    do_background_mcp_server,
    do_start_mcp_server,
    do_stop_mcp_server,
)
from ..services.sessions import do_configure_session, do_rename_session, do_set_active_client
from ..services.working_directories import do_change_working_directories, sender_refusal
from .rule import DROP, ActionRule, Dispatch, flag_effect

NO_AGENT = "No agent for session: {uri}"


def _title(d: Dispatch) -> str | None:
    do_rename_session(d.host, d.caller, d.session, d.action)
    return None


def _active_client(d: Dispatch) -> str | None:
    do_set_active_client(d.host, d.caller, d.session, d.action)
    return None


def _customization_toggled(d: Dispatch) -> str | None:
    return do_toggle_customization(d.host, d.caller, d.session, d.action)


def _mcp_start(d: Dispatch) -> str | None:
    return do_start_mcp_server(d.host, d.caller, d.session, d.action)


def _mcp_stop(d: Dispatch) -> str | None:
    return do_stop_mcp_server(d.host, d.caller, d.session, d.action)


def _mcp_background(d: Dispatch) -> str | None:
    return do_background_mcp_server(d.host, d.caller, d.session, d.action)


def _working_directories(d: Dispatch) -> str | None:
    return do_change_working_directories(d.host, d.caller, d.session, d.action)


def _config(d: Dispatch) -> str | None:
    do_configure_session(d.host, d.caller, d.session, d.action)
    return None


SESSION_RULES = (
    ActionRule("session/ready", said_by_host=True),
    ActionRule("session/creationFailed", said_by_host=True),
    ActionRule("session/chatAdded", said_by_host=True),
    ActionRule("session/chatRemoved", said_by_host=True),
    ActionRule("session/chatUpdated", said_by_host=True),
    ActionRule("session/customizationsChanged", said_by_host=True),
    # A running session's MCP servers as the team's registry moves (sessions/mcp_servers.py).
    ActionRule("session/customizationUpdated", said_by_host=True),
    ActionRule("session/customizationRemoved", said_by_host=True),
    ActionRule("session/mcpServerStateChanged", said_by_host=True),
    ActionRule("session/chatsReordered", said_by_host=True),
    ActionRule("session/inputNeededSet", said_by_host=True),
    ActionRule("session/inputNeededRemoved", said_by_host=True),
    # What its agent is doing (sessions/agent_reports.py).
    ActionRule("session/activityChanged", said_by_host=True),
    ActionRule("session/metaChanged", said_by_host=True),
    ActionRule(
        "session/defaultChatChanged",
        never_said="this host keeps a session's default chat for the session's life "
        "(`disposeChat` and `moveChat` leave it), and relays no session another host runs",
    ),
    ActionRule(
        "session/serverToolsChanged",
        never_said="this host offers an agent no tools of its own: each tool is its "
        "backend's, an MCP server's (a customization) or a client's (`activeClients`), so "
        "`serverTools` is never set and nothing moves it",
    ),
    ActionRule("session/titleChanged", grant="session:rename", effect=_title, said_by_host=True),
    ActionRule(
        "session/isReadChanged",
        grant="session:mark",
        effect=flag_effect("isRead"),
        unknown_target=DROP,
        said_by_host=True,
    ),
    ActionRule(
        "session/isArchivedChanged",
        grant="session:mark",
        effect=flag_effect("isArchived"),
        unknown_target=DROP,
    ),
    ActionRule(
        "session/activeClientSet",
        grant="session:attach",
        effect=_active_client,
        unknown_target=NO_AGENT,
        said_by_host=True,
    ),
    ActionRule(
        "session/activeClientRemoved",
        grant="session:attach",
        effect=_active_client,
        unknown_target=NO_AGENT,
        said_by_host=True,
    ),
    ActionRule("session/configChanged", grant="session:configure", effect=_config),
    # Its folders (services/working_directories.py).
    *(
        ActionRule(
            action_type,
            grant="session:folders",
            effect=_working_directories,
            sender_refusal=sender_refusal,
        )
        for action_type in (
            "session/workingDirectorySet",
            "session/workingDirectoryRemoved",
            "session/workingDirectoryReplaced",
        )
    ),
    # The host's alone: what the session's sources offer it (sessions/customizations.py).
    ActionRule(
        "session/customizationToggled",
        grant="session:configure",
        effect=_customization_toggled,
        unknown_target=NO_AGENT,
    ),
    *(
        ActionRule(action_type, grant="session:configure", effect=effect, unknown_target=NO_AGENT)
        for action_type, effect in (
            ("session/mcpServerStartRequested", _mcp_start),
            ("session/mcpServerStopRequested", _mcp_stop),
            ("session/mcpServerBackgroundRequested", _mcp_background),
        )
    ),
)
