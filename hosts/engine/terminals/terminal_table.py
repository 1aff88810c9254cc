"""The host's terminals: each one's channel and process, whose each is, the root's list of them,
a person's cap, and their end.

The root lists the terminals (`root/terminalsChanged`, the whole TerminalInfo list) when one
opens, closes or exits, and after every title and claim; root state holds no `terminals` while
none is open. One root list is held, and each watcher is shown the terminals they may read
(`visible`), live, in a snapshot and in a replay alike. A disposed terminal's channel goes at
once and its process group is killed behind it (SIGHUP, then SIGKILL after a grace); the host's
stop kills every one.

Where several nodes are one host, a terminal runs on the node it was opened on (its pty is that
machine's), and the root's list is the host's: each node tells the others the terminals it runs,
with whose each is (other_nodes/messages.py), and lists theirs beside its own (`elsewhere`); a
client of another node watches and drives one through that node's mirror of its channel.

A terminal is its opener's (`LiveTerminal.owner`, access.Personal): judged as the session that
claims it while one does (`whose`), else as its opener's own. A person may have `per_person`
terminals open at once (AHPD_TERMINALS_PER_PERSON): the ones they opened and the ones their
sessions claim, a session's exited command (kept for reading, with no process) aside.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...backends.sandbox import Jail, Sandbox
from .. import access
from ..channel import Channel
from ..fanout import Fanout
from ..principal import Principal
from .live_terminal import LiveTerminal
from .pty import Pty
from .shells import SHELL_DIR, shell_command, shell_environment

log = logging.getLogger("ahpd.terminals")

MIB = 1024 * 1024

#: The setting a person's cap is read from, named in its refusal.
PER_PERSON_SETTING = "AHPD_TERMINALS_PER_PERSON"


class TerminalCap(OSError):
    """A terminal not started because its person has as many open as they may: refused as the
    system refuses a process past its limit (fork's EAGAIN), so whoever handles a terminal that
    could not start says why."""


@dataclass(frozen=True, slots=True)
class TerminalSettings:
    #: The most output a terminal holds for a late subscriber (AHPD_TERMINAL_SCROLLBACK_BYTES).
    scrollback_bytes: int = MIB
    #: What every shell's environment gets (AHPD_SHELL_ENV); None takes a name away.
    shell_env: Mapping[str, str | None] = field(default_factory=dict)
    #: How long a terminal's processes have after SIGHUP before SIGKILL.
    kill_grace_s: float = 2.0
    #: How many terminals one person may have open at once (AHPD_TERMINALS_PER_PERSON); 0 sets
    #: no cap.
    per_person: int = 10


def _no_session(uri: str) -> access.Owned | None:
    return None


class Terminals:
    def __init__(
        self,
        fanout: Fanout,
        root: Callable[[], Channel],
        settings: TerminalSettings,
        *,
        sandbox: Sandbox | None = None,
        session_record: Callable[[str], access.Owned | None] = _no_session,
        remembered: int = 1000,
    ) -> None:
        self._fanout = fanout
        self._root = root
        self.settings = settings
        #: Where every terminal's process starts (sandbox.py): each in a person's jail.
        self.sandbox = sandbox or Sandbox()
        #: The record of a session by its URI (whose, and where), while it is open.
        self._session_record = session_record
        self._live: dict[str, LiveTerminal] = {}
        self._kills: set[asyncio.Task[None]] = set()
        #: Whose each disposed terminal was, the newest `remembered` (the replay ring's count):
        #: a list the ring still holds may name one, and is replayed to those who could read it.
        self._gone: OrderedDict[str, access.Owned] = OrderedDict()
        self._remembered = remembered
        #: The terminals the other nodes of the host run, by node: each one's TerminalInfo
        #: and whose it is, as that node last told.
        self._elsewhere: dict[str, dict[str, tuple[dict[str, Any], access.Owned]]] = {}
        #: Told this node's own list each time it is said (the other nodes are told).
        self.on_announced: Callable[[list[tuple[dict[str, Any], access.Owned]]], None] | None = None
        # One list is held; each watcher is told the terminals they may read.
        fanout.action_views["root/terminalsChanged"] = self._seen_list

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

    # -- whose ----------------------------------------------------------------------------

    def whose(self, uri: str) -> access.Owned | None:
        """What a terminal is judged as (access.py): the session that claims it while that
        session is open, else its opener's own; None for a terminal nobody here knows."""
        terminal = self._live.get(uri)
        if terminal is None:
            node = self.node_of(uri)
            return self._elsewhere[node][uri][1] if node is not None else self._gone.get(uri)
        claim = terminal.state["claim"]
        if claim.get("kind") == "session":
            record = self._session_record(str(claim.get("session", "")))
            if record is not None:
                return record
        return terminal.owner

    def may_read(self, principal: Principal, uri: str) -> bool:
        record = self.whose(uri)
        reading = access.READ_TERMINAL
        return record is not None and access.refusal(principal, record, reading) is None

    def visible(self, principal: Principal, infos: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The TerminalInfo rows of `infos` that `principal` may read."""
        return [info for info in infos if self.may_read(principal, str(info.get("resource")))]

    def _seen_list(self, principal: Any, action: Any) -> Any:
        return {**action, "terminals": self.visible(principal, list(action["terminals"]))}

    # -- a person's cap -------------------------------------------------------------------

    def open_of(self, person: str) -> int:
        """How many terminals count against `person`'s cap: those they opened and those their
        sessions claim, but a session's command that exited (it holds no process, and is kept
        for reading until the session goes)."""
        count = 0
        for terminal in self._live.values():
            record = self.whose(terminal.uri)
            if terminal.owner.owner != person and (record is None or record.owner != person):
                continue
            if not terminal.running and terminal.state["claim"].get("kind") == "session":
                continue
            count += 1
        # The other nodes' count too: the cap is the host's (each of theirs, exited or not).
        for rows in self._elsewhere.values():
            count += sum(1 for _, record in rows.values() if record.owner == person)
        return count

    def cap_refusal(self, person: str) -> str | None:
        """Why `person` may not have another terminal open now, naming the cap; None if they
        may."""
        cap = self.settings.per_person
        if not cap:
            return None
        count = self.open_of(person)
        if count < cap:
            return None
        return (
            f"{person} already has {count} terminals open, the most one person may have "
            f"({PER_PERSON_SETTING}={cap}): dispose of one first"
        )

    def _check_cap(self, owner: access.Personal, claim: dict[str, Any]) -> None:
        people = [owner.owner]
        if claim.get("kind") == "session":
            session = self._session_record(str(claim.get("session", "")))
            if session is not None and session.owner != owner.owner:
                people.append(session.owner)
        for person in people:
            if (reason := self.cap_refusal(person)) is not None:
                raise TerminalCap(reason)

    # -- opening and closing --------------------------------------------------------------

    def open(
        self,
        uri: str,
        *,
        owner: access.Personal,
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
        (`-c`) and the terminal exits with it. `owner` is whose it is (its opener, in the scope
        it was opened in); TerminalCap, an OSError, where that person has as many open as they
        may."""
        env = {**shell_environment(self.settings.shell_env, plain=jail.on), **jail.home_env()}
        argv, extra = shell_command(shell, env) if command is None else ([shell, "-c", command], {})
        return self.run(
            uri,
            argv,
            env={**env, **extra},
            owner=owner,
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
        owner: access.Personal,
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
        `jail`, and open its channel; OSError if it cannot start (nothing is opened then):
        TerminalCap where its opener, or the person whose session claims it, has as many open
        as they may. The terminal exits with the process."""
        self._check_cap(owner, claim)
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
            owner=owner,
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
        """Say the whole TerminalInfo list on the root (this node's terminals and the other
        nodes'), and tell the other nodes this node's; none open, and the root holds none."""
        if self.on_announced is not None:
            self.on_announced(self.own_rows())
        self._say_list()

    def said_elsewhere(
        self, node: str, rows: list[tuple[dict[str, Any], access.Owned]] | None
    ) -> None:
        """Node `node` said the terminals it runs (None: it is gone, and they with it); the
        list is said again where that moved it."""
        held = self._elsewhere.get(node, {})
        told = {} if rows is None else {str(info["resource"]): (info, w) for info, w in rows}
        if rows is None:
            self._elsewhere.pop(node, None)
        else:
            self._elsewhere[node] = told
        if [info for info, _ in held.values()] != [info for info, _ in told.values()]:
            self._say_list()

    def nodes_elsewhere(self) -> set[str]:
        """The other nodes whose terminals are listed here."""
        return set(self._elsewhere)

    def node_of(self, uri: str) -> str | None:
        """The other node that runs a terminal, where one does."""
        return next((node for node, rows in self._elsewhere.items() if uri in rows), None)

    def own_rows(self) -> list[tuple[dict[str, Any], access.Owned]]:
        """The terminals this node runs: each one's TerminalInfo, and whose it is."""
        rows = []
        for terminal in self._live.values():
            record = self.whose(terminal.uri)
            if record is not None:
                rows.append((terminal.info(), record))
        return rows

    def _say_list(self) -> None:
        infos = [terminal.info() for terminal in self._live.values()]
        infos += [info for rows in self._elsewhere.values() for info, _ in rows.values()]
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
        record = self.whose(uri)
        terminal = self._live.pop(uri, None)
        if terminal is None or record is None:
            return False
        # Judged as it was when it went, for as long as a ringed list may name it.
        self._gone[uri] = record
        while len(self._gone) > self._remembered:
            self._gone.popitem(last=False)
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
