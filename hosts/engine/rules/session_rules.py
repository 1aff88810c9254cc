"""The rules of a session's actions."""

from __future__ import annotations

from .rule import DROP, ActionRule, Dispatch, flag_effect

NO_AGENT = "No agent for session: {uri}"


def _title(d: Dispatch) -> str | None:
    d.say()
    d.session.record.title = d.action["title"]
    d.host.sessions.touch(d.session)
    d.host.changesets.retitled(d.session.record.uri)
    return None


def _said(d: Dispatch) -> str | None:
    d.say()
    return None


def _config(d: Dispatch) -> str | None:
    d.say()
    session = d.session
    session.record.config = dict(session.channel.state["config"]["values"])
    d.host.sessions.save_session(session)
    return None


SESSION_RULES = (
    ActionRule("session/ready", said_by_host=True),
    ActionRule("session/creationFailed", said_by_host=True),
    ActionRule("session/chatAdded", said_by_host=True),
    ActionRule("session/chatRemoved", said_by_host=True),
    ActionRule("session/chatUpdated", said_by_host=True),
    ActionRule("session/inputNeededSet", said_by_host=True),
    ActionRule("session/inputNeededRemoved", said_by_host=True),
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
        effect=_said,
        unknown_target=NO_AGENT,
        said_by_host=True,
    ),
    ActionRule(
        "session/activeClientRemoved",
        grant="session:attach",
        effect=_said,
        unknown_target=NO_AGENT,
        said_by_host=True,
    ),
    ActionRule("session/configChanged", grant="session:configure", effect=_config),
)
