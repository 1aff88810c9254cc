"""A `!command` typed in a chat (the initialize result's `terminalCommandPrefix`): this host's
own command, whatever the session's backend, never sent to the model as a question.

It is a turn like any other, run by a `LocalCommand` in the backend's place: one tool call
whose content is the terminal the command runs in, a host terminal claimed by the session
(its chat, turn and tool call), so a client subscribes and watches the output arrive; the
completion names the terminal again with the exit code and a preview of the output. The
terminal stays, exited, until the session is disposed, so a subscribe later reads it back.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...backends.base import TurnEnd, TurnEvents, TurnRequest
from ..access import Personal
from ..terminals import LiveTerminal, Terminals
from .jails import session_jail
from .live_session import LiveChat
from .records import file_path

log = logging.getLogger("ahpd.terminals")

PREFIX = "!"
#: The most of a command's output its completion carries as a preview.
PREVIEW_CHARS = 8192


def command_of(text: str) -> str | None:
    """The command a message asks this host to run (`!ls -l`), or None for a question."""
    if text.startswith(PREFIX) and text[len(PREFIX) :].strip():
        return text[len(PREFIX) :].strip()
    return None


def terminal_text(terminal: LiveTerminal) -> str:
    """All the output a terminal holds, in order."""
    return "".join(
        str(p.get("output" if p.get("type") == "command" else "value") or "")
        for p in terminal.state["content"]
    )


class LocalCommand:
    """One `!` command's turn, run as a backend's is (the AgentChat a turn of it is handed)."""

    backend_id: str | None = None

    def __init__(self, commands: LocalCommands, chat: LiveChat, command: str) -> None:
        self._commands = commands
        self._chat = chat
        self.command = command
        self.terminal: LiveTerminal | None = None

    def _folder(self) -> Path:
        for uri in self._chat.session.record.working_directories:
            folder = file_path(uri)
            if folder.is_dir():
                return folder
        return Path(os.getcwd())

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        chat = self._chat
        call_id = f"terminal-{uuid.uuid4()}"
        uri = f"ahp-terminal:/{uuid.uuid4()}"
        events.tool_call(call_id, name="terminal", title=self.command, kind="terminal")
        events.tool_running(call_id, title=f"Running `{self.command}`", tool_input=self.command)
        claim: dict[str, Any] = {
            "kind": "session",
            "session": chat.session.record.uri,
            "chat": chat.record.uri,
            "turnId": request.turn_id,
            "toolCallId": call_id,
        }
        try:
            record = chat.session.record
            terminal = self.terminal = self._commands.terminals.open(
                uri,
                # The session's, as the session claims it (whoever sent the line).
                owner=Personal(uri, record.owner, record.scope),
                claim=claim,
                title=self.command,
                shell=self._commands.shell(),
                cwd=self._folder(),
                cols=120,
                rows=30,
                jail=session_jail(self._commands.terminals.sandbox, chat.session.record),
                command=self.command,
            )
        except OSError as exc:
            message = f"`{self.command}` did not start: {exc}"
            events.tool_result(call_id, success=False, message=message, error=str(exc))
            return TurnEnd("complete")
        reference = {"type": "terminal", "resource": uri, "title": self.command}
        events.tool_content(call_id, [reference])
        await terminal.ended.wait()
        output = terminal_text(terminal)
        result: dict[str, Any] = {"preview": output[-PREVIEW_CHARS:]}
        if len(output) > PREVIEW_CHARS:
            result["truncated"] = True
        if terminal.exit_code is not None:
            result["exitCode"] = terminal.exit_code
        events.tool_result(
            call_id,
            success=terminal.exit_code == 0,
            message=f"Ran `{self.command}`",
            content=[{**reference, "isPty": True, "result": result}],
        )
        return TurnEnd("complete")

    async def cancel(self) -> None:
        """A stop: the command is hung up on, as closing its terminal would."""
        if self.terminal is not None:
            await self.terminal.hang_up(self._commands.terminals.settings.kill_grace_s)

    async def close(self) -> None:
        return None


class LocalCommands:
    """Makes the `LocalCommand` a `!` message's turn is run by, and keeps the running ones so
    a stop reaches them."""

    def __init__(self, terminals: Terminals, shell: Callable[[], str]) -> None:
        self.terminals = terminals
        #: The shell a terminal opens now (root config's defaultShell, else the login shell).
        self.shell = shell
        self._running: dict[str, LocalCommand] = {}

    def command_for(self, chat: LiveChat, text: str) -> LocalCommand | None:
        command = command_of(text)
        if command is None:
            return None
        local = self._running[chat.record.uri] = LocalCommand(self, chat, command)
        return local

    def done(self, chat: LiveChat, local: LocalCommand | None) -> None:
        """The turn `local` ran (None: no command's) is over."""
        if local is not None and self._running.get(chat.record.uri) is local:
            del self._running[chat.record.uri]

    def stop(self, chat: LiveChat) -> None:
        """A stop of the chat's turn reaches its running command, if one runs."""
        local = self._running.get(chat.record.uri)
        if local is not None:
            asyncio.get_running_loop().create_task(local.cancel())
