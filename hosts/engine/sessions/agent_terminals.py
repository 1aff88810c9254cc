"""The commands a chat's agent runs (ACP's `terminal/create`), as host terminals: the
`HostTerminals` port a backend is handed in its ChatContext, over the host's terminal table.

Each command is a terminal claimed by the chat's session and the turn it ran in, so a client
subscribes to it and watches the output arrive; the tool call it runs for is named in the claim
once the agent says which one (after creating it). The terminal stays, exited, until the
session is disposed, so a subscribe later reads it back; the agent reads what it printed.
"""

from __future__ import annotations

import shutil
import signal
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...backends.base import TerminalExit
from ...backends.process import child_umask
from ...backends.sandbox import Jail
from ..access import Owned, Personal
from ..terminals import LiveTerminal, Terminals
from .local_commands import terminal_text

#: What an agent's command gets unless its environment says otherwise: no pager.
NO_PAGER = {"PAGER": "cat", "GIT_PAGER": "cat"}
#: The size an agent's command runs at (what a program that asks lays its output out for).
COLS, ROWS = 120, 30


class AgentTerminal:
    """One command of the agent's, in its host terminal."""

    def __init__(self, table: Terminals, terminal: LiveTerminal) -> None:
        self._table = table
        self._terminal = terminal
        self.uri = terminal.uri
        self.title = str(terminal.state["title"])

    def output(self) -> tuple[str, bool]:
        # The pty's line discipline ends lines in CRLF; the agent reads text, not a screen.
        text = terminal_text(self._terminal).replace("\r\n", "\n")
        return text, self._terminal.trimmed

    def exit_status(self) -> TerminalExit | None:
        terminal = self._terminal
        if not terminal.ended.is_set():
            return None
        sig = terminal.pty.killed_by if terminal.pty is not None else None
        if sig is not None:
            return TerminalExit(None, _signal_name(sig))
        return TerminalExit(terminal.exit_code)

    async def wait(self) -> TerminalExit:
        await self._terminal.ended.wait()
        status = self.exit_status()
        assert status is not None
        return status

    async def kill(self) -> None:
        if self._terminal.running:
            await self._terminal.hang_up(self._table.settings.kill_grace_s)

    def claim_for(self, tool_call_id: str) -> None:
        claim = self._terminal.state["claim"]
        if claim.get("kind") == "session" and not self._terminal.disposed:
            self._table.claim(self._terminal, {**claim, "toolCallId": tool_call_id})


class AgentTerminals:
    """The `HostTerminals` of one chat: its agent's commands, claimed by its session and its
    owner's (counted against their AHPD_TERMINALS_PER_PERSON)."""

    def __init__(self, table: Terminals, session: Owned, chat: str, jail: Jail) -> None:
        self._table = table
        self._session = session.uri
        self._owner = session.owner
        self._scope = session.scope
        self._chat = chat
        self._jail = jail

    def open(
        self,
        argv: Sequence[str],
        *,
        title: str,
        cwd: Path,
        env: Mapping[str, str],
        turn_id: str | None,
    ) -> AgentTerminal:
        claim: dict[str, Any] = {"kind": "session", "session": self._session, "chat": self._chat}
        if turn_id is not None:
            claim["turnId"] = turn_id
        program = _program(argv[0], cwd, env.get("PATH"))
        uri = f"ahp-terminal:/{uuid.uuid4()}"
        terminal = self._table.run(
            uri,
            [program, *argv[1:]],
            # Under a pty, `git log` would open a pager and wait for keys nobody sends; the
            # agent reads the output whole, as it did from a pipe. Its own env may say otherwise.
            env={**NO_PAGER, **env},
            owner=Personal(uri, self._owner, self._scope),
            claim=claim,
            title=title,
            cwd=cwd,
            cols=COLS,
            rows=ROWS,
            jail=self._jail,
            # As a command run for the agent as a plain subprocess would (see backends.process).
            umask=child_umask(),
        )
        return AgentTerminal(self._table, terminal)


def _program(name: str, cwd: Path, path: str | None) -> str:
    """The program `name` runs, looked up as the command's own environment and folder would
    (the pty's spawn would look in the server's PATH, and from the server's folder)."""
    if "/" in name:
        return str(cwd / name)
    return shutil.which(name, path=path) or name


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
