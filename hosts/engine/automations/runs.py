"""One automation run, from kept (pending) to over: its session made from the template as the
automation's owner, its message sent, and its lifecycle said on its `ahp-automation-run:`
channel as each change happens (and the entry said again, whose summary moved).

A run acts as its owner: their grants and the policies that hold for them make the session
and send the message, the session is theirs, and what it costs is theirs. It completes when
its turn ends, fails (with the error) when the session cannot start or the turn errors, and is
cancelled by a cancel.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ...protocol.errors import ProtocolError
from ..channel import Channel
from ..clock import iso, now_ms
from ..host import Host
from ..principal import Principal
from ..services.caller import Caller
from ..services.policies import do_create_checked_session
from ..services.turns import do_start_automation_turn
from .ports import AutomationStore

log = logging.getLogger("ahpd.automations")

TERMINAL = frozenset({"completed", "failed", "cancelled"})
_ENDINGS = {"complete": "completed", "cancelled": "cancelled", "error": "failed"}


def run_state(run: dict[str, Any]) -> dict[str, Any]:
    """The AutomationRunState of a kept run."""
    state: dict[str, Any] = {
        "resource": run["uri"],
        "automation": run["automation"],
        "origin": run["origin"],
        "lifecycle": run["lifecycle"],
        "sessions": list(run["sessions"]),
    }
    if run.get("primary_session"):
        state["primarySession"] = run["primary_session"]
    if run.get("owner"):
        state["_meta"] = {"ahpd.owner": run["owner"]}
    return state


def summary(run: dict[str, Any]) -> dict[str, Any]:
    """The AutomationRunSummary an entry's `runs` carries."""
    out: dict[str, Any] = {
        "resource": run["uri"],
        "automation": run["automation"],
        "origin": run["origin"],
        "lifecycle": run["lifecycle"],
        "sessionCount": len(run["sessions"]),
    }
    if run.get("primary_session"):
        out["primarySession"] = run["primary_session"]
    if run.get("owner"):
        out["_meta"] = {"ahpd.owner": run["owner"]}
    return out


def _turn_error(turn: dict[str, Any]) -> dict[str, Any]:
    for part in reversed(turn.get("responseParts") or []):
        if part.get("kind") == "error":
            return dict(part["error"])
    return {"errorType": "turnFailed", "message": "The run's turn ended in an error"}


class Runs:
    def __init__(
        self,
        host: Host,
        store: AutomationStore,
        records: dict[str, dict[str, Any]],
        say: Callable[[str], None],
        node_id: str = "",
    ) -> None:
        self.host = host
        #: This engine's node ("" for one process alone, which runs every run).
        self.node_id = node_id
        self.store = store
        #: The automations kept (the catalogue's), and how an entry is said again.
        self.records = records
        self.say_entry = say
        #: Every run this host shows, by URI, as last kept.
        self.live: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, Channel] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def open(self, run: dict[str, Any]) -> None:
        self.live[run["uri"]] = run
        for uri in run["sessions"]:
            self._stamp(uri, run)
        self.channels[run["uri"]] = self.host.fanout.open(
            Channel(run["uri"], "automationRun", run_state(run))
        )

    def _stamp(self, uri: str, run: dict[str, Any]) -> None:
        """A run's session read back says whose run it is (the run's row keeps the link)."""
        session = self.host.sessions.session(uri)
        if session is None or session.record.origin:
            return
        origin = {"kind": "automation", "automation": run["automation"], "run": run["uri"]}
        session.record.origin = origin
        # A new state, not the old one changed: what was said of the old one stays as it was.
        session.channel.state = {**session.channel.state, "origin": origin}

    def close(self, uri: str) -> None:
        self.live.pop(uri, None)
        self.channels.pop(uri, None)
        self.host.fanout.close(uri)

    def here(self, run: dict[str, Any]) -> bool:
        """Whether this node runs the run (or none does yet): its moves are this node's to
        make; another's run is followed (`follow`)."""
        return not self.node_id or run.get("node") in ("", None, self.node_id)

    def follow(self, stored: dict[str, Any]) -> None:
        """Another node's run, read back from the store as that node said it moved: the copy
        held here brought in line, each move said on its channel as that node said it."""
        run = self.live.get(stored["uri"])
        if run is None or run is stored or self.here(run):
            return
        actions: list[dict[str, Any]] = []
        for session in stored["sessions"]:
            if session not in run["sessions"]:
                actions.append({"type": "automationRun/sessionSet", "session": session})
        for session in run["sessions"]:
            if session not in stored["sessions"]:
                actions.append({"type": "automationRun/sessionRemoved", "session": session})
        primary = stored.get("primary_session")
        if primary != run.get("primary_session"):
            changed: dict[str, Any] = {"type": "automationRun/primarySessionChanged"}
            if primary:
                changed["primarySession"] = primary
            actions.append(changed)
        if stored["lifecycle"] != run["lifecycle"]:
            actions.append(
                {"type": "automationRun/lifecycleChanged", "lifecycle": stored["lifecycle"]}
            )
        run.update(stored)
        channel = self.channels.get(run["uri"])
        if channel is not None:
            for action in actions:
                self.host.fanout.emit(channel, action)

    def terminal(self, uri: str) -> bool:
        run = self.live.get(uri)
        return run is None or run["lifecycle"]["status"] in TERMINAL

    def by_request(self, request_id: str) -> dict[str, Any] | None:
        return next((r for r in self.live.values() if r.get("request_id") == request_id), None)

    def of_session(self, session: str) -> dict[str, Any] | None:
        return next((r for r in self.live.values() if session in r["sessions"]), None)

    def begin(self, uri: str) -> None:
        """Start a kept pending run, on the engine's loop, once."""
        task = asyncio.get_running_loop().create_task(self._start(uri), name=f"run {uri}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settled(self) -> None:
        """Wait for every run started here to be over (and written)."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    # -- what is said ---------------------------------------------------------------------

    async def _keep(self, run: dict[str, Any], *actions: dict[str, Any]) -> None:
        """Written, then said: the run's actions on its channel and its entry again (its
        summary moved). What a client is told it reads back after a crash."""
        await self.store.save_run(run)
        self._say(run, *actions)

    def _say(self, run: dict[str, Any], *actions: dict[str, Any]) -> None:
        channel = self.channels.get(run["uri"])
        if channel is not None:
            for action in actions:
                self.host.fanout.emit(channel, action)
        if run["automation"] in self.records:
            self.say_entry(run["automation"])

    async def _move(self, run: dict[str, Any], status: str, **extra: Any) -> None:
        if run["lifecycle"]["status"] in TERMINAL:
            return
        now = iso(now_ms())
        lifecycle: dict[str, Any] = {"status": status, "createdAt": run["lifecycle"]["createdAt"]}
        if status == "running":
            lifecycle["startedAt"] = now
        elif "startedAt" in run["lifecycle"]:
            lifecycle["startedAt"] = run["lifecycle"]["startedAt"]
        if status in TERMINAL:
            lifecycle["completedAt"] = now
        lifecycle.update(extra)
        run["lifecycle"] = lifecycle
        await self.store.save_run(run)
        if run["lifecycle"] is lifecycle:  # else a later move, written behind this, says itself
            self._say(run, {"type": "automationRun/lifecycleChanged", "lifecycle": lifecycle})

    async def fail(self, run: dict[str, Any], message: str, error_type: str = "runFailed") -> None:
        await self._move(run, "failed", error={"errorType": error_type, "message": message})

    async def _joined(self, run: dict[str, Any], session: str) -> None:
        # The session is committed before the run names it: a crash leaves no run pointing
        # at a session nobody has.
        await self.host.writes.flush()
        run["sessions"].append(session)
        run["primary_session"] = session
        await self._keep(
            run,
            {"type": "automationRun/sessionSet", "session": session},
            {"type": "automationRun/primarySessionChanged", "primarySession": session},
        )

    async def session_gone(self, session: str) -> None:
        """A disposed session is unlinked from its run, and the primary cleared with it."""
        run = self.of_session(session)
        if run is None:
            return
        run["sessions"].remove(session)
        actions: list[dict[str, Any]] = [
            {"type": "automationRun/sessionRemoved", "session": session}
        ]
        if run.get("primary_session") == session:
            run["primary_session"] = None
            actions.append({"type": "automationRun/primarySessionChanged"})
        await self._keep(run, *actions)

    # -- the run --------------------------------------------------------------------------

    async def _owner(self, ref: str) -> Principal | None:
        if ref == self.host.root_principal.ref or not ref:
            return self.host.root_principal
        return await self.store.owner_principal(ref)

    async def _start(self, uri: str) -> None:
        run = self.live.get(uri)
        if run is None or run["lifecycle"]["status"] != "pending":
            return  # cancelled meanwhile, or started already
        try:
            await self._run(run)
        except Exception as exc:
            log.exception("automation run %s failed", uri)
            await self.fail(run, f"The run failed: {exc}")

    async def _run(self, run: dict[str, Any]) -> None:
        record = self.records.get(run["automation"])
        if record is None:
            return await self.fail(run, f"Automation not found: {run['automation']}")
        owner = await self._owner(run.get("owner") or "")
        if owner is None:
            return await self.fail(run, f"The automation's owner {run['owner']} is not here")
        definition = record["definition"]
        template = definition.get("session") or {}
        caller = Caller(owner)
        try:
            # Made as the owner's own createSession is: checked against the policies' deny
            # rows, limits and budgets (root and an automation with no owner are not checked).
            created = await do_create_checked_session(
                self.host,
                caller,
                provider=template.get("provider"),
                directories=template.get("workingDirectories"),
                config=template.get("config"),
                method="runAutomation",
                origin={"kind": "automation", "automation": run["automation"], "run": run["uri"]},
            )
        except ProtocolError as exc:
            return await self.fail(run, exc.message, "sessionCreationFailed")
        session = created.session
        await self._joined(run, session.record.uri)
        if run["lifecycle"]["status"] in TERMINAL:
            return  # cancelled while the session was made
        chat = session.chats[session.record.default_chat]
        try:
            turn_id = do_start_automation_turn(self.host, caller, chat, definition["message"])
        except ProtocolError as exc:
            return await self.fail(run, exc.message, "sessionCreationFailed")
        await self._move(run, "running")
        task = chat.task
        if task is not None:
            await asyncio.wait([task])
        turn = next((t for t in chat.state().get("turns", []) if t.get("id") == turn_id), None)
        ending = _ENDINGS.get(str((turn or {}).get("state")), "failed")
        if ending == "failed":
            await self._move(run, "failed", error=_turn_error(turn or {}))
        else:
            await self._move(run, ending)

    async def cancel(self, uri: str) -> str | None:
        """Stop the run's turns; a run with no session yet is cancelled at once. Why not, in
        VS Code's words, or None."""
        run = self.live.get(uri)
        if run is None:
            return f"Automation run not found: {uri}"
        if run["lifecycle"]["status"] in TERMINAL:
            return f"Automation run is already terminal: {uri}"
        if not run["sessions"]:
            await self._move(run, "cancelled")
            return None
        stopped = False
        for session_uri in run["sessions"]:
            session = self.host.sessions.session(session_uri)
            for chat in session.chats.values() if session is not None else ():
                if chat.runner is not None and self.host.turns.stop(chat, said=False):
                    stopped = True
        if not stopped:
            return f"Automation run cancellation was not accepted: {uri}"
        return None
