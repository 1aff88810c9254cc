"""The resource family a client asks of this host: the `file:` URIs of the served folders,
and the before side of a changeset's files (`ahpd-git:`, read from git inside the fence),
and the `usage:` and `policy:` URIs the meter serves (hosts/engine/meter.py).

Each command checks its params and the URI (resources/served.py), and runs the file work off
the event loop every client shares (resources/files.py), which walks the path inside the fence
(-32009 `Permission denied: <uri>` outside it) and works on what it walked to. What each needs
is in the command table (`file:get` ...); inside a `.git` folder only a host-wide admin
writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ...protocol.errors import invalid_params
from ...protocol.uris import scheme_of
from ...protocol.validation import (
    optional_bool,
    optional_choice,
    optional_offset,
    optional_str,
    required_str,
)
from .. import client_requests, meter
from ..changesets import files as changeset_files
from ..connection import Connection
from ..host import Host
from ..resources import copies, files

log = logging.getLogger("ahpd.engine")

Handler = Callable[[Host, Connection, dict[str, Any]], Awaitable[dict[str, Any]]]

ENCODINGS = ("base64", "utf-8")


def or_the_clients(method: str, handler: Handler) -> Handler:
    """`handler` for this host's files; for a client's own (`vscode-agent-client:`), the
    same request asked of that client, its answer given back as it gave it (client_requests.py)."""
    key = client_requests.FORWARDED[method][0]

    async def handle(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get(key)
        named = client_requests.client_uri(uri) if isinstance(uri, str) else None
        if named is None:
            return await handler(host, conn, params)
        assert isinstance(uri, str)
        said = client_requests.as_the_client_knows(params, named[0], method)
        answer: dict[str, Any] = await host.client_requests.ask(
            conn.principal.ref, uri, method, said
        )
        return answer

    handle.__name__ = handle.__qualname__ = handler.__name__
    return handle


def or_the_meters(method: str, handler: Handler, grant: str) -> Handler:
    """`handler`, `grant` held, for files; a `usage:` or `policy:` URI is the meter's, which
    says itself who may read or write it (a person reads their own usage with no grant)."""

    async def handle(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if isinstance(uri, str) and uri.partition(":")[0] in meter.SCHEMES:
            principal = await host.permissions.principal_now(conn)
            return await host.turns.metering.meter.resource(principal, method, uri, params)
        await host.permissions.require(conn, grant)
        return await handler(host, conn, params)

    handle.__name__ = handle.__qualname__ = handler.__name__
    return handle


WRITE_MODES = ("truncate", "append", "insert")


async def resource_read(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "resourceRead", "uri")
    encoding = optional_choice(params, "resourceRead", "encoding", ENCODINGS)
    limit = host.settings.resource_read_limit
    if scheme_of(uri) == changeset_files.CONTENT_SCHEME:
        # The before side of a changeset's file: what a commit holds, inside the fence too.
        named, commit = changeset_files.parse_before_uri(uri, "resourceRead")
        path = host.served.path_of(named.as_uri(), "resourceRead")
        data = await host.changesets.before(path, commit, uri, limit)
        return files.encoded(data, path, encoding)
    path = host.served.named(uri, "resourceRead")
    return await asyncio.to_thread(files.read, host.served, path, uri, encoding, limit)


async def resource_write(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    method = "resourceWrite"
    uri = required_str(params, method, "uri")
    data = required_str(params, method, "data")
    encoding = optional_choice(params, method, "encoding", ENCODINGS)
    if encoding is None:
        raise invalid_params(f"{method}: encoding is required: base64 or utf-8")
    mode = optional_choice(params, method, "mode", WRITE_MODES) or "truncate"
    position = optional_offset(params, method, "position")
    create_only = optional_bool(params, method, "createOnly")
    if_match = optional_str(params, method, "ifMatch")
    content = files.decoded(data, encoding)
    path = host.served.named(uri, method)
    await asyncio.to_thread(
        files.write,
        host.served,
        path,
        uri,
        content,
        create_only=create_only,
        mode=mode,
        position=position,
        if_match=if_match,
        admin=conn.principal.admin,
    )
    return {}


async def resource_list(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "resourceList", "uri")
    path = host.served.named(uri, "resourceList")
    return await asyncio.to_thread(files.listing, host.served, path, uri)


async def resource_resolve(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "resourceResolve", "uri")
    follow = optional_bool(params, "resourceResolve", "followSymlinks", default=True)
    path = host.served.named(uri, "resourceResolve")
    return await asyncio.to_thread(files.resolve, host.served, path, uri, follow=follow)


async def resource_mkdir(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "resourceMkdir", "uri")
    path = host.served.named(uri, "resourceMkdir")
    await asyncio.to_thread(files.mkdir, host.served, path, uri, admin=conn.principal.admin)
    return {}


async def resource_delete(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "resourceDelete", "uri")
    recursive = optional_bool(params, "resourceDelete", "recursive")
    path = host.served.named(uri, "resourceDelete")
    await asyncio.to_thread(
        files.delete, host.served, path, uri, recursive=recursive, admin=conn.principal.admin
    )
    return {}


async def resource_copy(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    return await _copy_or_move(host, conn, params, "resourceCopy", move=False)


async def resource_move(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    return await _copy_or_move(host, conn, params, "resourceMove", move=True)


async def _copy_or_move(
    host: Host, conn: Connection, params: dict[str, Any], method: str, *, move: bool
) -> dict[str, Any]:
    source_uri = required_str(params, method, "source")
    target_uri = required_str(params, method, "destination")
    fail = optional_bool(params, method, "failIfExists")
    source = host.served.named(source_uri, method)
    target = host.served.named(target_uri, method)
    await asyncio.to_thread(
        copies.copy_or_move,
        host.served,
        source,
        target,
        (source_uri, target_uri),
        move=move,
        fail=fail,
        admin=conn.principal.admin,
    )
    return {}


async def create_resource_watch(
    host: Host, conn: Connection, params: dict[str, Any]
) -> dict[str, Any]:
    """The watch's channel; its watcher is attached when the client subscribes to it (over a
    client's own files, that client is asked for the watch then: client_watches.py)."""
    return {"channel": await host.watches.create(params, conn.principal.ref)}


async def resource_request(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    """Answered yes, as the reference answers it: it withholds nothing the operations that
    follow do not check again, inside the fence."""
    uri = required_str(params, "resourceRequest", "uri")
    write = optional_bool(params, "resourceRequest", "write")
    log.info("%s asked for %s access to %s", conn.principal.ref, "write" if write else "read", uri)
    return {}


#: The resource family this host serves, with what each needs; a client's own files (of the
#: methods client_requests.py forwards) are asked of that client.
SERVED: dict[str, tuple[Handler, str | None]] = {
    "resourceRead": (
        or_the_meters("resourceRead", or_the_clients("resourceRead", resource_read), "file:get"),
        None,
    ),
    "resourceList": (
        or_the_meters("resourceList", or_the_clients("resourceList", resource_list), "file:list"),
        None,
    ),
    "resourceResolve": (or_the_clients("resourceResolve", resource_resolve), "file:resolve"),
    "resourceRequest": (or_the_clients("resourceRequest", resource_request), "file:resolve"),
    "resourceWrite": (
        or_the_meters("resourceWrite", or_the_clients("resourceWrite", resource_write), "file:put"),
        None,
    ),
    "resourceMkdir": (or_the_clients("resourceMkdir", resource_mkdir), "file:mkdir"),
    "resourceDelete": (
        or_the_meters(
            "resourceDelete", or_the_clients("resourceDelete", resource_delete), "file:delete"
        ),
        None,
    ),
    "resourceCopy": (or_the_clients("resourceCopy", resource_copy), "file:copy"),
    "resourceMove": (or_the_clients("resourceMove", resource_move), "file:move"),
    "createResourceWatch": (create_resource_watch, "file:watch"),
}
