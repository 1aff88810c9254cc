"""`invokeChangesetOperation`: one operation run on a changeset, refused or done.

Refused in the order and words of VS Code's changeset operations: a changeset this host does
not hold (-32001 `Changeset not found: <uri>`), then, each -32602, an operation it does not
offer (`Unknown operation 'X' on changeset <uri>`), one the channel holds disabled (`Operation
'X' is disabled on changeset <uri>`), one asked while the session runs a turn (`Operation 'X'
is disabled while a turn is active on changeset <uri>`: an operation that ended mid-turn is
held idle until the next list), a target of a scope the operation does not take (`Operation 'X'
does not support scope 'k' (allowed: ...)`), and this host's own last: a target outside the
session's folder. An identical invocation (the same operation, target and words, by the same
person) asked while one runs shares that run and its answer; another of the same operation
waits for the one before it (a lane each), and decides again from what git holds when its turn
comes. While it runs it is `running` on the channel; it ends `idle`, after the changeset was
read again and its moves said, or `error` with what git said (and the request fails -32603 with
it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ..sessions.records import file_path
from . import git, operations
from .changeset_table import Changeset, Changesets, InFlight

METHOD = "invokeChangesetOperation"

log = logging.getLogger("ahpd.engine")


def target_of(params: dict[str, Any]) -> tuple[str, str] | None:
    """The target's kind and resource, checked; None for the whole changeset."""
    target = params.get("target")
    if target is None:
        return None
    if not isinstance(target, dict):
        raise invalid_params(f"{METHOD}: target must be an object")
    kind, resource = target.get("kind"), target.get("resource")
    if kind not in ("resource", "range"):
        raise invalid_params(f"{METHOD}: target.kind must be resource or range")
    if not isinstance(resource, str) or not resource:
        raise invalid_params(f"{METHOD}: target.resource must be a non-empty URI")
    if target.get("side") not in (None, "before", "after"):
        raise invalid_params(f"{METHOD}: target.side must be before or after")
    if kind == "range" and not isinstance(target.get("range"), dict):
        raise invalid_params(f"{METHOD}: a range target needs its range")
    return kind, resource


def commit_message(params: dict[str, Any]) -> str | None:
    """The person's own words for a commit: `_meta['ahpd.commit'].message`."""
    meta = params.get("_meta")
    said = meta.get("ahpd.commit") if isinstance(meta, dict) else None
    if said is None:
        return None
    message = said.get("message") if isinstance(said, dict) else None
    if not isinstance(message, str) or not message.strip():
        raise invalid_params(f"{METHOD}: _meta['ahpd.commit'].message must be a non-empty string")
    return message


async def invoke(
    changesets: Changesets,
    changeset: Changeset | None,
    uri: str,
    operation_id: str,
    target: tuple[str, str] | None,
    message: str | None,
    who: tuple[str, str],
    asked: Any = None,
) -> str:
    """Run an operation (`asked` is the target as sent: what makes two invocations one)."""
    if changeset is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Changeset not found: {uri}")
    if changeset.tree is None or changeset.running != changesets.running(changeset):
        await changesets.read(changeset)  # as things stand now, a turn just ended included
    offered = {op["id"]: op for op in changeset.channel.state.get("operations") or []}
    operation = offered.get(operation_id)
    if operation is None:
        raise invalid_params(f"Unknown operation '{operation_id}' on changeset {uri}")
    if operation["status"] == "disabled":
        raise invalid_params(f"Operation '{operation_id}' is disabled on changeset {uri}")
    if changesets.running(changeset):
        raise invalid_params(
            f"Operation '{operation_id}' is disabled while a turn is active on changeset {uri}"
        )
    kind = target[0] if target is not None else "changeset"
    if kind not in operation["scopes"]:
        allowed = ", ".join(operation["scopes"])
        raise invalid_params(
            f"Operation '{operation_id}' does not support scope '{kind}' (allowed: {allowed})"
        )
    path = _inside(changeset, target[1]) if target is not None else None
    # One person's run is never another's: a commit is authored as whoever asked it.
    key = (operation_id, json.dumps(asked, sort_keys=True), message, who)
    run = changeset.in_flight.get(key)
    if run is not None:
        log.info("%s: %s on %s joins the run in flight", METHOD, operation_id, uri)
    else:
        run = asyncio.ensure_future(_run(changesets, changeset, operation_id, path, message, who))
        changeset.in_flight[key] = run
        run.add_done_callback(lambda done: _landed(changeset, key, done))
    # Shielded: a caller that goes away leaves the run to whoever else waits on it.
    return await asyncio.shield(run)


def _landed(changeset: Changeset, key: InFlight, run: asyncio.Future[str]) -> None:
    if changeset.in_flight.get(key) is run:
        del changeset.in_flight[key]
    if not run.cancelled():
        run.exception()  # retrieved, so a run nobody waits on any more fails quietly


def _inside(changeset: Changeset, resource: str) -> Path:
    """The path a target names, which must lie under the session's folder."""
    path = Path(os.path.realpath(file_path(resource)))
    folder = Path(os.path.realpath(changeset.folder))
    if not resource.startswith("file:") or not path.is_relative_to(folder):
        raise invalid_params(f"{METHOD}: {resource} is not under the session's folder {folder}")
    return path


async def _run(
    changesets: Changesets,
    changeset: Changeset,
    operation_id: str,
    path: Path | None,
    message: str | None,
    who: tuple[str, str],
) -> str:
    """One operation, after the one of the same id before it (its lane)."""

    def status(status: str, error: str | None = None) -> None:
        action: dict[str, Any] = {
            "type": "changeset/operationStatusChanged",
            "operationId": operation_id,
            "status": status,
        }
        if error is not None:
            action["error"] = {"errorType": "operationFailed", "message": error}
        changesets.fanout.emit(changeset.channel, action)

    async with changeset.lanes.setdefault(operation_id, asyncio.Lock()):
        status("running")
        try:
            await changesets.read(changeset)  # what git holds now decides
            assert changeset.tree is not None
            if path is not None and path == Path(os.path.realpath(changeset.folder)):
                path = None  # the session's own folder is the whole changeset
            said = await operations.run(
                operation_id, changeset.tree, path, message or changesets.subject(changeset), who
            )
        except (git.GitError, OSError) as error:
            await changesets.read(changeset)
            status("error", str(error))
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR, f"Failed to run {operation_id}: {error}"
            ) from None
        await changesets.read(changeset)
        status("idle")
        return said
