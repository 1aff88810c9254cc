"""The rules of a terminal's actions: what a client may do to a terminal, and what the host says.

A client's size, claim, title and clear are said as the client sent them and then take
effect (the pty is told its size; the root's list is said again after a claim or a title);
its input is said too, a side-effect-only action every client of the terminal is sent, and
written through to the pty. The host says a claim too (a session's terminal handed to the
tool call it runs for); the rest is the host's, read off the shell's output. Whose the terminal
is (the session claiming it, else its opener) is decided before any of these (access.py, in
commands/dispatch.py): another's takes `others:work` where it is.
"""

from __future__ import annotations

from typing import Any

from .. import access
from ..terminals import LiveTerminal
from .rule import ActionRule, Dispatch


def _terminal(d: Dispatch) -> LiveTerminal:
    terminal = d.host.terminals.get(d.channel.uri)
    assert terminal is not None, "a terminal rule runs on a terminal the host holds"
    return terminal


def _input(d: Dispatch) -> None:
    d.say()
    # Input to a shell that has exited goes out too, and reaches no process.
    _terminal(d).write(d.action["data"])


def _resized(d: Dispatch) -> None:
    d.say()
    _terminal(d).resize(int(d.action["cols"]), int(d.action["rows"]))


def _holder(claim: dict[str, Any]) -> str:
    if claim.get("kind") == "client":
        return f"client {claim.get('clientId')}"
    return f"session {claim.get('session')}"


def _claimed(d: Dispatch) -> str | None:
    held = _terminal(d).state["claim"]
    sender = d.caller.origin["clientId"] if d.caller.origin is not None else None
    if held.get("kind") != "client" or held.get("clientId") != sender:
        return f"Terminal {d.channel.uri} is held by {_holder(held)}: only its holder hands it on"
    claim = d.action["claim"]
    if claim.get("kind") == "session":
        # Handed to a session, it is that session's from now on: work in that session, as
        # createTerminal claiming one is.
        record = d.host.sessions.record_of(str(claim.get("session")))
        if record is None:
            return f"Session not found: {claim.get('session')}"
        if (reason := access.refusal(d.caller.principal, record, "chat:send")) is not None:
            return reason
    d.say()
    d.host.terminals.announce()
    return None


def _title_changed(d: Dispatch) -> None:
    d.say()
    d.host.terminals.announce()


def _cleared(d: Dispatch) -> None:
    d.say()
    _terminal(d).cleared()


TERMINAL_RULES = (
    ActionRule("root/terminalsChanged", said_by_host=True),
    ActionRule("terminal/input", grant="terminal:input", effect=_input),
    ActionRule("terminal/resized", grant="terminal:resize", effect=_resized),
    ActionRule("terminal/claimed", grant="terminal:claim", effect=_claimed, said_by_host=True),
    ActionRule("terminal/titleChanged", grant="terminal:rename", effect=_title_changed),
    ActionRule("terminal/cleared", grant="terminal:clear", effect=_cleared),
    ActionRule("terminal/data", said_by_host=True),
    ActionRule("terminal/cwdChanged", said_by_host=True),
    ActionRule("terminal/exited", said_by_host=True),
    ActionRule("terminal/commandDetectionAvailable", said_by_host=True),
    ActionRule("terminal/commandExecuted", said_by_host=True),
    ActionRule("terminal/commandFinished", said_by_host=True),
)
