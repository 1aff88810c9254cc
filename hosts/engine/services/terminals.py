"""Opening and closing a host terminal: a shell on the server, in its person's sandbox (the
server's own user only with the sandbox off, and then a host-wide admin's alone), and its
opener's (access.py judges who else may touch it)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.uris import kind_of
from ...protocol.validation import checked_uri, terminal_claim_problem, terminal_size
from .. import access
from ..host import Host
from ..root_config import DEFAULT_SHELL
from ..sessions.jails import session_jail
from ..terminals import LiveTerminal, TerminalCap
from ..terminals.shells import chosen_shell, folder_of
from .caller import Caller, session_of

log = logging.getLogger("ahpd.terminals")


def do_create_terminal(
    host: Host,
    caller: Caller,
    uri: str,
    *,
    claim: Any,
    name: Any = None,
    cwd: Any = None,
    cols: Any = None,
    rows: Any = None,
) -> LiveTerminal:
    """Open a terminal under the URI the client chose: root config's defaultShell (else the
    login shell) under a pty, in the folder `cwd` names where it is one inside the served
    folders, else the first served folder; said to the root's watchers with the whole list.
    It is the caller's, in their home scope, or in the scope of the session it is claimed for;
    -32602 naming AHPD_TERMINALS_PER_PERSON where they have as many open as they may."""
    caller.may("terminal:create")
    if kind_of(uri) != "terminal":
        raise invalid_params(f"Terminal URI must use the ahp-terminal scheme: {uri}")
    checked_uri(uri, "createTerminal: channel")
    if (problem := terminal_claim_problem(claim)) is not None:
        raise invalid_params(f"createTerminal: {problem}")
    session = None
    scope = caller.principal.home
    if claim["kind"] == "session":
        # A terminal claimed for a session is work in that session: its grants, there.
        session = session_of(host, claim["session"])
        caller.may_in(session, "chat:send")
        scope = session.record.scope
    must_be_sandboxed(host, caller, "open a terminal")
    if name is not None and not isinstance(name, str):
        raise invalid_params("createTerminal: name must be a string")
    width = terminal_size(cols, "createTerminal", "cols", 80)
    height = terminal_size(rows, "createTerminal", "rows", 24)
    if host.fanout.has(uri):
        raise ProtocolError(ErrorCode.ALREADY_EXISTS, f"Terminal already exists: {uri}")
    folder = _folder(host, cwd)
    shell = chosen_shell(host.root_value(DEFAULT_SHELL))
    # A session's terminal runs where its other processes do; one of a person's own sees the
    # folder it was opened in.
    jail = (
        session_jail(host.sandbox, session.record)
        if session is not None
        else host.sandbox.jail(caller.principal.ref, [folder])
    )
    try:
        return host.terminals.open(
            uri,
            owner=access.Personal(uri, caller.principal.ref, scope),
            claim=claim,
            title=name or os.path.basename(shell),
            shell=shell,
            cwd=folder,
            cols=width,
            rows=height,
            jail=jail,
        )
    except TerminalCap as exc:
        raise invalid_params(f"createTerminal: {exc}") from None
    except OSError as exc:
        log.warning("terminal %s: %s did not start: %s", uri, shell, exc)
        raise ProtocolError(
            ErrorCode.INTERNAL_ERROR, f"createTerminal: {shell} did not start: {exc}"
        ) from None


def must_be_sandboxed(host: Host, caller: Caller, what: str) -> None:
    """-32009 unless people's processes run in the sandbox here, or the caller is a host-wide
    admin: with the sandbox off a shell is the server's own user, its data and its secrets."""
    if not host.sandbox.on and not caller.principal.admin:
        raise ProtocolError(
            ErrorCode.PERMISSION_DENIED,
            f"Only a host-wide admin may {what} here: the sandbox is off (AHPD_SANDBOX=off, "
            f"or bubblewrap cannot start: {host.sandbox.settings.reason}), so it would run as "
            "the server's own user",
        )


def _folder(host: Host, cwd: Any) -> Path:
    """Where a terminal starts: the folder named, when it is one inside the fence (a client's
    own folder, not on this machine, is no error: the shell starts in the first served one)."""
    named = folder_of(cwd)
    if named is not None and host.served.holds(Path(os.path.realpath(named))):
        return named
    return host.served.default


def do_dispose_terminal(host: Host, caller: Caller, uri: str) -> None:
    """Close a terminal: its channel goes, the root's list is said without it, and its
    process group is killed (SIGHUP, then SIGKILL after a grace). Another's takes
    others:dispose where it is (access.py)."""
    caller.may("terminal:dispose")
    record = host.terminals.whose(uri) if host.terminals.get(uri) is not None else None
    if record is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Resource not found: {uri}")
    access.require(caller.principal, record, "terminal:dispose")
    host.terminals.dispose(uri)


# -- what a client does to a terminal (its rules: rules/terminal_rules.py) --------------------


def _live(host: Host, uri: str) -> LiveTerminal:
    terminal = host.terminals.get(uri)
    assert terminal is not None, "a terminal rule runs on a terminal the host holds"
    return terminal


def do_terminal_input(host: Host, caller: Caller, uri: str, action: dict[str, Any]) -> None:
    """A client's terminal/input: said to every client of the terminal, and written through
    to the pty (to no process, once its shell has exited)."""
    terminal = _live(host, uri)
    caller.say(host, terminal.channel, action)
    terminal.write(action["data"])


def do_resize_terminal(host: Host, caller: Caller, uri: str, action: dict[str, Any]) -> None:
    """A client's terminal/resized: said, and the pty told its size."""
    terminal = _live(host, uri)
    caller.say(host, terminal.channel, action)
    terminal.resize(int(action["cols"]), int(action["rows"]))


def _holder(claim: dict[str, Any]) -> str:
    if claim.get("kind") == "client":
        return f"client {claim.get('clientId')}"
    return f"session {claim.get('session')}"


def do_claim_terminal(host: Host, caller: Caller, uri: str, action: dict[str, Any]) -> None:
    """A client's terminal/claimed: only the client holding it hands it on; handed to a
    session, it is that session's from now on (work in that session, as createTerminal
    claiming one is). Said, and the root's list said again."""
    terminal = _live(host, uri)
    held = terminal.state["claim"]
    sender = caller.origin["clientId"] if caller.origin is not None else None
    if held.get("kind") != "client" or held.get("clientId") != sender:
        raise ProtocolError(
            ErrorCode.PERMISSION_DENIED,
            f"Terminal {uri} is held by {_holder(held)}: only its holder hands it on",
        )
    claim = action["claim"]
    if claim.get("kind") == "session":
        record = host.sessions.record_of(str(claim.get("session")))
        if record is None:
            raise ProtocolError(
                ErrorCode.SESSION_NOT_FOUND, f"Session not found: {claim.get('session')}"
            )
        access.require(caller.principal, record, "chat:send")
    caller.say(host, terminal.channel, action)
    host.terminals.announce()


def do_retitle_terminal(host: Host, caller: Caller, uri: str, action: dict[str, Any]) -> None:
    """A client's terminal/titleChanged: said, and the root's list said again."""
    caller.say(host, _live(host, uri).channel, action)
    host.terminals.announce()


def do_clear_terminal(host: Host, caller: Caller, uri: str, action: dict[str, Any]) -> None:
    """A client's terminal/cleared: said, and the scrollback the host keeps cleared."""
    terminal = _live(host, uri)
    caller.say(host, terminal.channel, action)
    terminal.cleared()
