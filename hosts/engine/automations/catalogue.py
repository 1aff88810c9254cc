"""The `ahp-automations://` catalogue: the automations this host keeps, as entries, each with
its newest runs, and what creating, changing and removing one does.

What a client is told is what the store holds: each change is written first and then said as
automation/set (the entry whole), the request itself after it. Scheduled runs are claimed in
the store (schedule.py, the store's claim) by whichever process fires schedules; the engine
is told which were claimed (`claimed`) and starts them (runs.py).

Where several `serve` processes are nodes of one host, each holds the catalogue, and each
change one node writes it tells the others (other_nodes/messages.py), which read it back from
the store and say it to their own watchers: one catalogue, whichever node a client watches it
on. A run is run by the least loaded node serving its folder, as a new session is (carried
there from the node asked or told: services/automations.py); the others follow it from the
store as that node tells them it moved. A node that starts fails the runs it left unfinished,
and the runs of nodes no longer live are failed by the nodes that see them gone.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.limits import MAX_ID_LENGTH, MAX_URI_LENGTH
from ...protocol.uris import AUTOMATIONS_URI
from .. import access
from ..audit_trail import Act
from ..channel import Channel
from ..clock import iso, now_ms
from ..host import Host
from ..other_nodes.messages import AUTOMATION
from ..principal import Principal
from . import definitions, limits
from .operations import OPERATIONS, Owned, operations_for, seen_catalogue, seen_set
from .ports import AutomationStore
from .runs import Runs, run_state, summary
from .schedule import iso_or_none, next_run_at

log = logging.getLogger("ahpd.automations")

#: Runs an entry shows at first, and each fetchAutomationRuns adds.
PAGE = 20
PREFIX = "ahp-automation:/"
#: How a run the last process left unfinished reads back.
INTERRUPTED = "The server stopped while this run was unfinished"
#: How a run of a node gone reads back.
NODE_GONE = "The node running this run stopped while it was unfinished"


# The reference's words, under the protocol's codes: VS Code's host answers each of these
# -32603, which a client cannot tell from this host failing (issue 23).
def not_found(uri: str) -> ProtocolError:
    return ProtocolError(ErrorCode.NOT_FOUND, f"Automation not found: {uri}")


def used_elsewhere(request_id: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.ALREADY_EXISTS,
        f"Automation run requestId is already used for another automation: {request_id}",
    )


def unavailable(operation: str, uri: str) -> str:
    """The reference host's refusal of an operation the principal's entry does not offer."""
    return f"Automation operation '{operation}' is not available: {uri}"


class Automations:
    def __init__(
        self,
        host: Host,
        store: AutomationStore,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.host = host
        self.store = store
        self.clock = clock or (lambda: datetime.now(UTC))
        self.records: dict[str, dict[str, Any]] = {}
        #: Each automation's runs as its entry shows them, newest first.
        self.history: dict[str, list[dict[str, Any]]] = {}
        #: How many pages each entry shows, and whether the store holds more.
        self.pages: dict[str, int] = {}
        self.more: dict[str, bool] = {}
        #: This engine's node, where the host has several ("" for one process alone).
        self.node_id = host.placement.node_id
        self.runs = Runs(host, store, self.records, self.say, self.node_id)
        self._channel: Channel | None = None
        self._scheduler: asyncio.Task[None] | None = None
        self._pressing = asyncio.Lock()
        #: The other live nodes as last looked at (check_nodes); None before the first look.
        self._live_seen: set[str] | None = None
        host.nodes.listen(AUTOMATION, self._heard)

    # -- life -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Read back what is kept; a run the last process left unfinished reads as failed."""
        # Of several nodes, a live one's runs are its own; a run no node took yet (a Celery
        # worker claimed it a moment ago) may be one another live node is taking.
        live = tuple(await self.host.placement.others())
        failed = await self.store.fail_unfinished_runs(INTERRUPTED, live, blank=not live)
        if failed:
            log.warning("automations %s had runs unfinished at the last stop: failed", failed)
        for record in await self.store.load_automations():
            self.records[record["uri"]] = record
            self.pages[record["uri"]] = 1
            await self._read_history(record["uri"])
        self._channel = self.host.fanout.open(
            Channel(AUTOMATIONS_URI, "automation", {"entries": self._entries()})
        )
        # One catalogue is held; each watcher is shown its operations as their grants allow.
        self.host.fanout.action_views["automation/set"] = seen_set
        self.host.fanout.state_views["automation"] = seen_catalogue

    def start_scheduler(self, every_s: float) -> None:
        """Fire schedules from this process (the embedded deployment: no Celery)."""
        self._scheduler = asyncio.get_running_loop().create_task(
            self._schedule(every_s), name="ahpd-automations"
        )

    def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.cancel()
            self._scheduler = None

    async def _schedule(self, every_s: float) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("evaluating the automations' schedules failed")
            await asyncio.sleep(every_s)

    async def tick(self) -> None:
        """Claim what is due now and start it: the embedded scheduler's one step."""
        for uri, runs in await self.store.claim_due(self.clock()):
            # Each on its own: one that could not be started leaves the others to start.
            try:
                await self.claimed(uri, runs)
            except Exception:
                log.exception("starting %s's claimed runs %s failed", uri, runs)

    async def claimed(self, uri: str, runs: list[str]) -> None:
        """Runs claimed for an automation (here or by a Celery worker): the entry read again
        (its cursors, count and switch moved), said, and each run started, as far as the
        owner's window has room (limits.py); the rest fail, naming the bound, as a run the
        policies refuse does."""
        # Decided one batch (or press) at a time, so each counts what the last one started.
        async with self._pressing:
            await self._claimed(uri, runs)

    async def _claimed(self, uri: str, runs: list[str]) -> None:
        if self.node_id:
            await self.store.take_runs(runs, self.node_id)
        record = await self.store.load_automation(uri)
        if record is None:
            return
        self.records[uri] = record
        for run_uri in runs:
            run = await self.store.load_run(run_uri)
            if run is not None and run_uri not in self.runs.live:
                self.runs.open(run)
                self.history.setdefault(uri, []).insert(0, run)
        self.say(uri)
        owner = str(record.get("owner") or "")
        most = self.host.settings.automation_runs_per_hour
        started = await self._runs_started(owner, runs)
        for run_uri in runs:
            run = self.runs.live.get(run_uri)
            if run is None or run["lifecycle"]["status"] != "pending":
                continue
            if (reason := limits.runs_refusal(owner, started, most)) is not None:
                await self.runs.fail(run, reason, limits.RUN_LIMIT_ERROR)
                continue
            started += 1
            self.runs.begin(run_uri)
            # Run on the schedule's say, as its owner: on the audit trail as such.
            await self.host.audit.record(
                Act(owner, "automation.ran", "automation", uri, "schedule", "", {"run": run_uri})
            )

    # -- the other nodes ------------------------------------------------------------------

    async def _heard(self, message: dict[str, Any]) -> None:
        await self.changed_elsewhere(str(message.get("uri")))

    async def changed_elsewhere(self, uri: str) -> None:
        """Another node changed an automation (or a run of it moved): read back and said here;
        one the store no longer keeps is removed here too."""
        record = await self.store.load_automation(uri)
        if record is None:
            if uri in self.records:
                self._forget(uri, say=True)
            return
        self.records[uri] = record
        self.pages.setdefault(uri, 1)
        await self._read_history(uri)
        for run in self.history[uri]:
            self.runs.follow(run)
        self._show(uri)

    async def check_nodes(self, live: set[str]) -> None:
        """At each renewal of this node's lease (`live`: the other nodes there): the
        unfinished runs of a node gone since the last look are failed (once, whichever node
        sees it first), and the others told."""
        if not self.node_id or live == self._live_seen:
            return
        self._live_seen = live
        kept = (self.node_id, *sorted(live))
        for uri in await self.store.fail_unfinished_runs(NODE_GONE, kept, blank=False):
            log.warning("automation %s had runs on a node that is gone: failed", uri)
            await self.changed_elsewhere(uri)
            self.host.nodes.tell({"type": AUTOMATION, "uri": uri})

    async def _read_history(self, uri: str) -> None:
        shown = self.pages[uri] * PAGE
        runs = await self.store.load_runs(uri, shown + 1)
        self.more[uri] = len(runs) > shown
        self.history[uri] = runs[:shown]
        for run in self.history[uri]:
            if run["uri"] not in self.runs.live:
                self.runs.open(run)

    def capabilities(self) -> dict[str, Any]:
        """initialize's `automations`: create, schedules, cancelling runs, the page shown."""
        return {"create": {}, "schedules": {}, "runCancellation": {}, "runHistoryLimit": PAGE}

    # -- entries --------------------------------------------------------------------------

    @property
    def channel(self) -> Channel:
        assert self._channel is not None, "the automations are not started"
        return self._channel

    def entry(self, uri: str) -> dict[str, Any]:
        """The AutomationEntry of a kept automation."""
        record = self.records[uri]
        definition = record["definition"]
        entry: dict[str, Any] = {
            "resource": uri,
            "definition": definition,
            "runs": [summary(self.runs.live.get(r["uri"], r)) for r in self.history.get(uri, [])],
            "operations": list(OPERATIONS),  # as held; each principal is shown theirs
            "createdAt": iso(record["created_ms"]),
            "modifiedAt": iso(record["modified_ms"]),
        }
        if definition.get("enabled") and record.get("next_run_at"):
            entry["nextRunAt"] = record["next_run_at"]
        if definitions.after_runs(definition) is not None:
            entry["runCount"] = record.get("run_count") or 0
        if self.more.get(uri):
            entry["runsNextCursor"] = self.cursor(uri)
        if record.get("owner"):
            entry["_meta"] = {"ahpd.owner": record["owner"]}
        return entry

    def _entries(self) -> list[dict[str, Any]]:
        return [self.entry(uri) for uri in self.records]

    def cursor(self, uri: str) -> str:
        return f"{uri}#page={self.pages.get(uri, 1) + 1}"

    def say(self, uri: str) -> None:
        """Say an entry as this host holds it, and tell the other nodes it changed (what moved
        is written already: they read it back)."""
        self._show(uri)
        self.host.nodes.tell({"type": AUTOMATION, "uri": uri})

    def _show(self, uri: str) -> None:
        """Say an entry to this node's watchers."""
        self.host.fanout.emit(
            self.channel, {"type": "automation/set", "automation": self.entry(uri)}
        )

    def refusal(self, principal: Principal, uri: str, needed: str) -> str | None:
        """Why `principal` may not do `needed` to the automation: the grant, and whose it is."""
        return access.refusal(principal, Owned(uri, self.records[uri].get("owner", "")), needed)

    def kept_refusal(self, owner: str, uri: str) -> str | None:
        """Why `owner` may not keep the automation `uri` as a new one: the automations one
        person may keep (limits.py). One kept already is no new one."""
        if uri in self.records:
            return None
        kept = sum(1 for r in self.records.values() if r.get("owner") == owner)
        return limits.kept_refusal(owner, kept, self.host.settings.automations_per_person)

    async def _runs_started(self, owner: str, besides: list[str]) -> int:
        """The runs `owner`'s automations started in the window (limits.py), `besides` left
        out; none are counted where the window binds nobody."""
        if not self.host.settings.automation_runs_per_hour or not limits.is_person(owner):
            return 0
        return await self.store.runs_started(owner, now_ms() - limits.WINDOW_MS, besides)

    def unoffered(self, principal: Principal, uri: str, operation: str) -> str | None:
        """The reference's refusal of an operation the principal's entry does not offer."""
        owner = str(self.records[uri].get("owner") or "")
        if operation in operations_for(principal, uri, owner):
            return None
        return unavailable(operation, uri)

    # -- changes --------------------------------------------------------------------------

    def _fresh(self, record: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Cursors for triggers new (or the automation switched back on) start now; a fresh
        allowance (an afterRuns where there was none, a switch back on) starts at 0."""
        definition = record["definition"]
        now = self.clock()
        switched_on = old is None or (
            definition.get("enabled") and not old["definition"].get("enabled")
        )
        kept = {} if switched_on else dict(record.get("cursors") or {})
        record["cursors"] = {
            t["id"]: kept.get(t["id"]) or iso_or_none(now)
            for t in definitions.schedule_triggers(definition)
        }
        if switched_on or (
            definitions.after_runs(definition) is not None
            and (old is None or definitions.after_runs(old["definition"]) is None)
        ):
            record["run_count"] = 0
        at = next_run_at(definition, record["cursors"], now)
        record["next_run_at"] = iso_or_none(at) if definition.get("enabled") else None

    async def create(self, owner: str, uri: str, definition: Any) -> str | None:
        """Keep a new automation and say it; why not, or None. One kept already with this very
        definition is said again."""
        if not uri.startswith(PREFIX) or len(uri) == len(PREFIX):
            return f"An automation's resource is {PREFIX}<id>, not {uri}"
        if len(uri) > MAX_URI_LENGTH:
            return f"An automation's resource is at most {MAX_URI_LENGTH} characters"
        if (reason := definitions.definition_problem(definition)) is not None:
            return reason
        if (reason := self._triggers_refusal(definition)) is not None:
            return reason
        if (reason := self.kept_refusal(owner, uri)) is not None:
            return reason
        if uri in self.records:
            if self.records[uri]["definition"] != definition:
                return f"Automation already exists: {uri}"
            self.say(uri)
            return None
        now = now_ms()
        record = {
            "uri": uri,
            "owner": owner,
            "definition": definition,
            "created_ms": now,
            "modified_ms": now,
        }
        self._fresh(record, None)
        await self.store.save_automation(record)
        self.records[uri] = record
        self.history[uri], self.pages[uri], self.more[uri] = [], 1, False
        self.say(uri)
        return None

    async def update(self, uri: str, changes: Any) -> str | None:
        """Lay a patch over a kept automation and say it; why not, or None."""
        if (reason := definitions.patch_problem(changes)) is not None:
            return reason
        old = await self.store.load_automation(uri) or self.records[uri]
        record = {**old, "definition": definitions.patched(old["definition"], changes)}
        if (reason := definitions.definition_problem(record["definition"])) is not None:
            return reason
        if (reason := self._triggers_refusal(record["definition"])) is not None:
            return reason
        record["modified_ms"] = now_ms()
        self._fresh(record, old)
        await self.store.save_automation(record)
        self.records[uri] = record
        self.say(uri)
        return None

    def _triggers_refusal(self, definition: Any) -> str | None:
        return limits.triggers_refusal(definition, self.host.settings.automation_triggers_max)

    async def remove(self, uri: str, *, say: bool = False) -> None:
        """Forget an automation and its runs: said by the client's automation/removed, or
        (`say`) on this host's account."""
        await self.store.delete_automation(uri)
        self.host.nodes.tell({"type": AUTOMATION, "uri": uri})
        self._forget(uri, say=say)

    def _forget(self, uri: str, *, say: bool) -> None:
        if say:
            self.host.fanout.emit(self.channel, {"type": "automation/removed", "resource": uri})
        self.records.pop(uri, None)
        for run in self.history.pop(uri, []):
            self.runs.close(run["uri"])
        self.pages.pop(uri, None)
        self.more.pop(uri, None)

    async def fetch_runs(self, uri: str, cursor: str | None) -> None:
        """One more page of runs on the entry, said to every subscriber."""
        if uri not in self.records:
            raise not_found(uri)
        if not self.more.get(uri):
            return
        if cursor is not None and cursor != self.cursor(uri):
            # The protocol's code for a bad pagination cursor, in the reference's words.
            raise invalid_params(f"Automation run-history cursor is no longer available: {cursor}")
        self.pages[uri] += 1
        await self._read_history(uri)
        self._show(uri)  # the pages this node shows: nothing kept moved

    async def run_now(self, principal: Principal, uri: str, request_id: str) -> str:
        """A manual run (runAutomation): the run this request made already, a run of the
        automation that has not ended, or a new one, kept before its session is made."""
        if len(request_id) > MAX_ID_LENGTH:
            # A run keeps its request's id, in a column this long.
            raise invalid_params(f"runAutomation: requestId is at most {MAX_ID_LENGTH} characters")
        # One press at a time: two at once would each find no unfinished run and make two, and
        # each would find room in the window for one more.
        async with self._pressing:
            return await self._press(principal, uri, request_id)

    async def _press(self, principal: Principal, uri: str, request_id: str) -> str:
        if uri not in self.records:
            raise not_found(uri)
        # Refused first: a request asked again is no way round the grant.
        if (reason := self.unoffered(principal, uri, "run")) is not None:
            raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)
        same = self.runs.by_request(request_id)
        if same is not None:
            if same["automation"] != uri:
                raise used_elsewhere(request_id)
            return str(same["uri"])
        unfinished = [r for r in self.history.get(uri, []) if not self.runs.terminal(r["uri"])]
        if unfinished:
            return str(unfinished[0]["uri"])
        owner = str(self.records[uri].get("owner") or "")
        most = self.host.settings.automation_runs_per_hour
        started = await self._runs_started(owner, [])
        if (reason := limits.runs_refusal(owner, started, most)) is not None:
            raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)
        fresh = {
            "uri": f"ahp-automation-run:/{uuid.uuid4()}",
            "automation": uri,
            "owner": self.records[uri].get("owner", ""),
            "origin": {"kind": "manual"},
            "lifecycle": {"status": "pending", "createdAt": iso(now_ms())},
            "sessions": [],
            "primary_session": None,
            "request_id": request_id,
            "node": self.node_id,
        }
        # The store answers with the run a request made already, if it kept one.
        run = await self.store.add_run(fresh)
        if run["automation"] != uri:
            raise used_elsewhere(request_id)
        if run["uri"] == fresh["uri"]:
            self.runs.open(run)
            self.history.setdefault(uri, []).insert(0, run)
            self.say(uri)
            self.runs.begin(run["uri"])
        elif run["uri"] not in self.runs.live:
            # Kept long ago (past the pages this host read, or before its restart): its
            # channel is opened, so the run answered is one its asker can subscribe to.
            self.runs.open(run)
        return str(run["uri"])


__all__ = ["Automations", "run_state"]
