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

from ..services.terminals import (
    do_claim_terminal,
    do_clear_terminal,
    do_resize_terminal,
    do_retitle_terminal,
    do_terminal_input,
)
from .rule import ActionRule, Dispatch


def _input(d: Dispatch) -> None:
    do_terminal_input(d.host, d.caller, d.channel.uri, d.action)


def _resized(d: Dispatch) -> None:
    do_resize_terminal(d.host, d.caller, d.channel.uri, d.action)


def _claimed(d: Dispatch) -> None:
    do_claim_terminal(d.host, d.caller, d.channel.uri, d.action)


def _title_changed(d: Dispatch) -> None:
    do_retitle_terminal(d.host, d.caller, d.channel.uri, d.action)


def _cleared(d: Dispatch) -> None:
    do_clear_terminal(d.host, d.caller, d.channel.uri, d.action)


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
