"""The host's terminals: each one's channel and process, the root's list of them, and their end.

The root lists every terminal (`root/terminalsChanged`, the whole TerminalInfo list) when one
opens, closes or exits, and after every title and claim; root state holds no `terminals` while
none is open. A disposed terminal's channel goes at once and its process group is killed
behind it (SIGHUP, then SIGKILL after a grace); the host's stop kills every one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...backends.sandbox import Jail, Sandbox
from ..channel import Channel
from ..fanout import Fanout
from .live import LiveTerminal
from .pty import Pty
from .shells import SHELL_DIR, shell_command, shell_environment

log = logging.getLogger("ahpd.terminals")

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class TerminalSettings:
    #: The most output a terminal holds for a late subscriber (AHPD_TERMINAL_SCROLLBACK_BYTES).
    scrollback_bytes: int = MIB
    #: What every shell's environment gets (AHPD_SHELL_ENV); None takes a name away.
    shell_env: Mapping[str, str | None] = field(default_factory=dict)
    #: How long a terminal's processes have after SIGHUP before SIGKILL.
    kill_grace_s: float = 2.0


class Terminals:
    def __init__(
        self,
        fanout: Fanout,
        root: Callable[[], Channel],
        settings: TerminalSettings,
        *,
        sandbox: Sandbox | None = None,
    ) -> None:
        self._fanout = fanout
        self._root = root
        self.settings = settings
        #: Where every terminal's process starts (sandbox.py): each in a person's jail.
        self.sandbox = sandbox or Sandbox()
        self._live: dict[str, LiveTerminal] = {}
        self._kills: set[asyncio.Task[None]] = set()

    def get(self, uri: str) -> LiveTerminal | None:
        return self._live.get(uri)

    def __len__(self) -> int:
        return len(self._live)

    def claimed_by_session(self, session: str) -> list[LiveTerminal]:
        return [
            terminal
            for terminal in self._live.values()
            if terminal.state["claim"].get("kind") == "session"
            and terminal.state["claim"].get("session") == session
        ]

    def open(
        self,
        uri: str,
        *,
        claim: dict[str, Any],
        title: str,
        shell: str,
        cwd: Path,
        cols: int,
        rows: int,
        jail: Jail,
        command: str | None = None,
    ) -> LiveTerminal:
        """Start `shell` under a pty in `cwd`, in `jail`, and open its channel; OSError if it
        cannot start (nothing is opened then). With a `command`, the shell runs that alone
        (`-c`) and the terminal exits with it."""
        env = {**shell_environment(self.settings.shell_env, plain=jail.on), **jail.home_env()}
        argv, extra = shell_command(shell, env) if command is None else ([shell, "-c", command], {})
        return self.run(
            uri,
            argv,
            env={**env, **extra},
            claim=claim,
            title=title,
            cwd=cwd,
            cols=cols,
            rows=rows,
            jail=jail,
            needs=(str(SHELL_DIR),),
        )

    def run(
        self,
        uri: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        claim: dict[str, Any],
        title: str,
        cwd: Path,
        cols: int,
        rows: int,
        jail: Jail,
        needs: Sequence[str] = (),
        umask: int = -1,
    ) -> LiveTerminal:
        """Start `argv` under a pty in `cwd` with exactly `env` (and `umask`, unless -1), in
        `jail`, and open its channel; OSError if it cannot start (nothing is opened then). The
        terminal exits with the process."""
        state: dict[str, Any] = {
            "title": title,
            "cwd": cwd.as_uri(),
            "cols": cols,
            "rows": rows,
            "content": [],
            "lifecycle": {"status": "running"},
            "claim": claim,
            "isPty": True,
        }
        terminal = LiveTerminal(
            self._fanout,
            Channel(uri, "terminal", state),
            scrollback_bytes=self.settings.scrollback_bytes,
            changed=lambda _: self.announce(),
        )
        started, started_env = jail.wrap(argv, cwd=cwd, env=env, needs=needs)
        terminal.pty = Pty(
            started,
            cwd=cwd,
            env=started_env,
            cols=cols,
            rows=rows,
            output=terminal.output,
            done=terminal.exited,
            umask=umask,
        )
        terminal.pty.start()
        self._fanout.open(terminal.channel)
        self._live[uri] = terminal
        log.info("terminal %s opened: %s in %s (pid %d)", uri, argv[0], cwd, terminal.pty.pid)
        self.announce()
        return terminal

    def claim(self, terminal: LiveTerminal, claim: dict[str, Any]) -> None:
        """The host hands a terminal on (to the tool call a session's terminal runs for)."""
        if claim != terminal.state["claim"]:
            terminal.say({"type": "terminal/claimed", "claim": claim})
            self.announce()

    def announce(self) -> None:
        """Say the whole TerminalInfo list on the root; none open, and the root holds none."""
        infos = [terminal.info() for terminal in self._live.values()]
        root = self._root()
        next_state = {k: v for k, v in root.state.items() if k != "terminals"}
        if infos:
            next_state["terminals"] = infos
        self._fanout.emit(
            root, {"type": "root/terminalsChanged", "terminals": infos}, next_state=next_state
        )

    def dispose(self, uri: str) -> bool:
        """Close a terminal's channel, say the list without it, and kill its processes behind;
        False if no such terminal is open."""
        terminal = self._live.pop(uri, None)
        if terminal is None:
            return False
        terminal.disposed = True
        terminal.ended.set()
        self._fanout.close(uri)
        self.announce()
        if terminal.pty is not None:
            task = asyncio.get_running_loop().create_task(
                terminal.pty.kill(self.settings.kill_grace_s), name=f"ahpd-kill-{uri}"
            )
            self._kills.add(task)
            task.add_done_callback(self._kills.discard)
        log.info("terminal %s disposed", uri)
        return True

    async def stop(self) -> None:
        """Kill every terminal's processes, and wait for the kills under way."""
        for terminal in list(self._live.values()):
            terminal.disposed = True
            terminal.ended.set()
            if terminal.pty is not None:
                task = asyncio.get_running_loop().create_task(
                    terminal.pty.kill(self.settings.kill_grace_s)
                )
                self._kills.add(task)
        self._live.clear()
        if self._kills:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._kills, return_exceptions=True)
