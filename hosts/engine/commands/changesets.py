"""invokeChangesetOperation: a person commits, discards, stages or unstages what a session
changed (changesets/). Needs `session:changes`, and working in that session (its owner, or
one who holds others:work where it is)."""

from __future__ import annotations

from typing import Any

from ...protocol.validation import required_str
from .. import access
from ..changesets import invocations
from ..connection import Connection
from ..host import Host


async def invoke_changeset_operation(
    host: Host, conn: Connection, params: dict[str, Any]
) -> dict[str, Any]:
    method = invocations.METHOD
    uri = required_str(params, method, "channel")
    operation = required_str(params, method, "operationId")
    target = invocations.target_of(params)
    message = invocations.commit_message(params)
    changeset = host.changesets.get(uri)
    record = host.sessions.record_of(changeset.session) if changeset is not None else None
    if record is not None:
        access.require(conn.principal, record, "session:changes")
    name = conn.principal.ref.partition(":")[2] or conn.principal.ref
    said = await invocations.invoke(
        host.changesets,
        changeset,
        uri,
        operation,
        target,
        message,
        (name, f"{name}@ahpd"),
        asked=params.get("target"),
    )
    return {"message": said}
