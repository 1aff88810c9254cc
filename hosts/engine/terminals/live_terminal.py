"""One live terminal: its channel's held state, the process under its pty, and what the
shell's marks say, turned into the terminal's actions.

Output is said as it is read: one wakeup of the pty's reader is one `terminal/data` (a flood
is a few large envelopes, never one per byte), split only where a mark stood, so the output
before a C mark is the prompt's and the output before a D mark the command's.
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections.abc import Callable
from typing import Any

from ..access import Personal
from ..channel import Channel
from ..clock import now_ms
from ..fanout import Fanout
from .marks import Mark, MarkParser, command_line, cwd_uri
from .pty import Pty
from .scrollback import content_bytes, trimmed


class LiveTerminal:
    def __init__(
        self,
        fanout: Fanout,
        channel: Channel,
        *,
        owner: Personal,
        scrollback_bytes: int,
        changed: Callable[[LiveTerminal], None],
    ) -> None:
        self.fanout = fanout
        self.channel = channel
        #: Whose it is: its opener, in the scope it was opened in (a session that claims it
        #: speaks for it while it does: Terminals.whose).
        self.owner = owner
        self.pty: Pty | None = None
        self._cap = scrollback_bytes
        #: Told when what the root lists of this terminal moved (it exited).
        self._changed = changed
        self._parser = MarkParser()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held_bytes = 0
        self._detected = False
        #: What the line editor drew since the B mark: the command line, read back at C.
        self._drawn: list[str] | None = None
        #: The command running: its id and when its C mark came (monotonic).
        self._command: tuple[str, float] | None = None
        self._commands = 0
        #: Disposed: nothing more is said on its channel (which is gone).
        self.disposed = False
        #: Set once its process exited (and the output drained), or it was disposed.
        self.ended = asyncio.Event()
        self.exit_code: int | None = None
        #: Whether the held content lost older output (to the scrollback cap, or a clear).
        self.trimmed = False

    @property
    def uri(self) -> str:
        return self.channel.uri

    @property
    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.channel.state
        return state

    @property
    def running(self) -> bool:
        return self.pty is not None and self.pty.running

    def info(self) -> dict[str, Any]:
        """Its TerminalInfo, as the root lists it."""
        state = self.state
        return {
            "resource": self.uri,
            "title": state["title"],
            "claim": state["claim"],
            "lifecycle": state["lifecycle"],
        }

    def say(self, action: dict[str, Any]) -> None:
        """Say an action of this terminal on the host's own account."""
        if not self.disposed:
            self.fanout.emit(self.channel, action)

    # -- what the pty tells ---------------------------------------------------------------

    def output(self, raw: bytes) -> None:
        text: list[str] = []
        for piece in self._parser.feed(raw):
            if isinstance(piece, Mark):
                self._say_text(text)
                self._mark(piece)
                continue
            decoded = self._decoder.decode(piece)
            if decoded:
                text.append(decoded)
                if self._drawn is not None:
                    self._drawn.append(decoded)
        self._say_text(text)

    def exited(self, code: int | None) -> None:
        """The output drained and the process was reaped: the last of it, then the exit."""
        rest = self._decoder.decode(self._parser.flush(), final=True)
        self._say_text([rest] if rest else [])
        self.exit_code = code
        self.say({"type": "terminal/exited", **({"exitCode": code} if code is not None else {})})
        self.ended.set()
        self._changed(self)

    def _say_text(self, text: list[str]) -> None:
        if not text:
            return
        data = "".join(text)
        text.clear()
        self.say({"type": "terminal/data", "data": data})
        self._held_bytes += len(data.encode())
        if self._held_bytes > self._cap:
            # Trimmed to three quarters, so a terminal at its cap is not copied at every read.
            content = trimmed(self.state["content"], self._cap * 3 // 4)
            self.trimmed = True
            self.channel.state = {**self.state, "content": content}
            self._held_bytes = content_bytes(content)

    def _mark(self, mark: Mark) -> None:
        if mark.code == "7":
            cwd = cwd_uri(mark.value)
            if cwd is not None and cwd != self.state.get("cwd"):
                self.say({"type": "terminal/cwdChanged", "cwd": cwd})
            return
        if not self._detected:
            self._detected = True
            self.say({"type": "terminal/commandDetectionAvailable"})
        kind, _, rest = mark.value.partition(";")
        if kind == "A":
            self._drawn = None
        elif kind == "B":
            self._drawn = []
        elif kind == "C":
            self._finish(None)
            self._commands += 1
            command_id = str(self._commands)
            self.say(
                {
                    "type": "terminal/commandExecuted",
                    "commandId": command_id,
                    "commandLine": command_line("".join(self._drawn or [])),
                    "timestamp": now_ms(),
                }
            )
            self._drawn = None
            self._command = (command_id, time.monotonic())
        elif kind == "D":
            self._finish(int(rest) if rest.strip().lstrip("-").isdigit() else None)

    def _finish(self, code: int | None) -> None:
        """The running command finished (with the shell's exit status, where it said one)."""
        if self._command is None:
            return
        command_id, started = self._command
        self._command = None
        action: dict[str, Any] = {
            "type": "terminal/commandFinished",
            "commandId": command_id,
            "durationMs": round((time.monotonic() - started) * 1000),
        }
        if code is not None:
            action["exitCode"] = code
        self.say(action)

    # -- what clients ask -----------------------------------------------------------------

    def write(self, data: str) -> None:
        if self.pty is not None:
            self.pty.write(data.encode())

    def resize(self, cols: int, rows: int) -> None:
        if self.pty is not None:
            self.pty.resize(cols, rows)

    def cleared(self) -> None:
        self._held_bytes = 0
        self.trimmed = True

    async def hang_up(self, grace: float) -> None:
        """Stop what runs in it as closing a terminal would (SIGHUP, then SIGKILL after
        `grace`); the terminal stays, and says it exited once the output drained."""
        if self.pty is not None:
            await self.pty.kill(grace, quiet=False)
