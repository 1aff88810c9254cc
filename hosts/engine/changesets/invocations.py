"""`invokeChangesetOperation`: one operation run on a changeset, refused or done.

Refused in this order: a changeset this host does not hold (-32001), then, each -32602, an
operation it does not offer, one it offers disabled, one asked while the session runs a turn,
a target of a kind the operation does not take, and a target outside the session's folder.
Operations of one id run one after the other (a lane each), and each decides again from what
git holds when its turn comes. While it runs it is `running` on the channel; it ends `idle`,
after the changeset was read again and its moves said, or `error` with what git said (and
the request fails -32603 with it).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ..sessions.records import file_path
from . import git, operations
from .table import Changeset, Changesets

METHOD = "invokeChangesetOperation"


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
) -> str:
    if changeset is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Changeset not found: {uri}")
    if changeset.tree is None or changeset.running != changesets.running(changeset):
        await changesets.read(changeset)  # as things stand now, a turn just ended included
    offered = {op["id"]: op for op in changeset.channel.state.get("operations") or []}
    operation = offered.get(operation_id)
    if operation is None:
        raise invalid_params(f"Changeset operation not found: {operation_id}")
    running = changesets.running(changeset)
    if operation["status"] == "disabled" and not running:
        raise invalid_params(f"Changeset operation '{operation_id}' is disabled")
    if running or operation["status"] == "disabled":
        raise invalid_params(
            f"Changeset operation '{operation_id}' is not available while a turn is running"
        )
    kind = target[0] if target is not None else "changeset"
    if kind not in operation["scopes"]:
        raise invalid_params(f"Changeset operation '{operation_id}' does not take a {kind} target")
    path = _inside(changeset, target[1]) if target is not None else None
    lane = changeset.lanes.setdefault(operation_id, asyncio.Lock())
    async with lane:
        return await _run(changesets, changeset, operation_id, path, message, who)


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
    def status(status: str, error: str | None = None) -> None:
        action: dict[str, Any] = {
            "type": "changeset/operationStatusChanged",
            "operationId": operation_id,
            "status": status,
        }
        if error is not None:
            action["error"] = {"errorType": "operationFailed", "message": error}
        changesets.fanout.emit(changeset.channel, action)

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
