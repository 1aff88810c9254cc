"""The registry's one way to read and write a server: every interface (REST, the admin, the
command line through REST) checks a server here, writes it here, and is answered with it as
here shown, so each says the same and each write is on the audit trail once.

A server is said in the API's words (camelCase, `hostWide`, `offeredTo`). Its env and headers
hold secrets: each key whose value is set is shown as `<set>` (the rule root config's
credentials follow, hosts/engine/root_config.py), never its value, here, in the audit detail and
anywhere a server is shown; a write that sends `<set>` for a key keeps the value kept for it.

A registry server may not take the name of one of the operator's AHPD_CONFIG `mcpServers`:
the name is what the agent and the model see, and the file's is the host's own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from hosts.backends.base import McpServerSpec
from hosts.backends.config import ConfigError, load_mcp_servers, mcp_server_problems
from hosts.engine.clock import iso
from hosts.engine.root_config import SET
from hosts.store import acts as audit
from hosts.store.acts import SYSTEM, Actor
from hosts.store.project_teams import team_known, teams_of_projects

from .models import McpServer

#: A server's fields, in the API's words and order.
FIELDS = (
    "name",
    "transport",
    "command",
    "args",
    "cwd",
    "env",
    "url",
    "headers",
    "description",
    "enabled",
    "hostWide",
    "offeredTo",
)
#: The model's field for each API field that is named otherwise.
COLUMN = {"hostWide": "host_wide", "offeredTo": "offered_to"}
#: The fields whose values are secrets.
SECRETS = ("env", "headers")
#: Each transport's own fields: a server of one takes none of the other's.
SHAPES = {"stdio": ("command", "args", "cwd", "env"), "http": ("url", "headers")}
EMPTY: dict[str, Any] = {
    "command": "",
    "args": [],
    "cwd": "",
    "env": {},
    "url": "",
    "headers": {},
    "description": "",
    "enabled": True,
    "hostWide": False,
    "offeredTo": [],
}
#: Where a server comes from: the registry (these rows) or the operator's file.
REGISTRY, CONFIG = "registry", "config"
AUDIENCE_SAID = "a list of team:<slug>, project:<slug> and user:<id>"


class Invalid(ValueError):
    """A server that cannot be kept: `problems`, by API field, says what is wrong."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        self.problems = dict(problems)
        super().__init__("; ".join(f"{key}: {said}" for key, said in self.problems.items()))


class NameTaken(ValueError):
    """The name is another server's: a registry row's, or the operator's file's."""


class NoSuchServer(LookupError):
    pass


class FileServer(ValueError):
    """The server is the operator's AHPD_CONFIG's: changed there, not here."""


# -- the operator's file ---------------------------------------------------------------------


def file_servers() -> list[McpServerSpec]:
    """AHPD_CONFIG's `mcpServers`, as the server read them at start (its bad entries were
    warned of then, by hosts/edge/runtime.py: not again at each read here)."""
    if not settings.AHPD_CONFIG:
        return []
    path = Path(settings.AHPD_CONFIG).expanduser()
    try:
        modified = path.stat().st_mtime_ns
    except OSError:
        return []
    return list(_read_file(str(path), modified))


@functools.lru_cache(maxsize=8)
def _read_file(path: str, modified: int) -> tuple[McpServerSpec, ...]:
    try:
        return tuple(load_mcp_servers(Path(path), warn=lambda said: None))
    except ConfigError:
        return ()


def file_server(name: str) -> McpServerSpec | None:
    return next((spec for spec in file_servers() if spec.name == name), None)


# -- showing ---------------------------------------------------------------------------------


def hidden(values: Mapping[str, str]) -> dict[str, str]:
    """Secrets by key, in key order (PostgreSQL's jsonb keeps no order of its own): each one
    set shown as `<set>`, an empty one as it is."""
    return {key: SET if value else value for key, value in sorted(values.items())}


def server_json(row: McpServer) -> dict[str, Any]:
    """A registry row as every interface shows it: its secrets `<set>`."""
    return {
        "name": row.name,
        "source": REGISTRY,
        "transport": row.transport,
        "command": row.command,
        "args": list(row.args),
        "cwd": row.cwd,
        "env": hidden(row.env),
        "url": row.url,
        "headers": hidden(row.headers),
        "description": row.description,
        "enabled": row.enabled,
        "hostWide": row.host_wide,
        "offeredTo": list(row.offered_to),
        "createdAt": iso(int(row.created_at.timestamp() * 1000)),
        "modifiedAt": iso(int(row.modified_at.timestamp() * 1000)),
    }


def file_server_json(spec: McpServerSpec) -> dict[str, Any]:
    """One of the operator's file's servers, as a row is shown: offered host-wide, always on."""
    return {
        "name": spec.name,
        "source": CONFIG,
        "transport": spec.transport,
        "command": spec.command,
        "args": list(spec.args),
        "cwd": spec.cwd or "",
        "env": hidden(spec.env),
        "url": spec.url,
        "headers": hidden(spec.headers),
        "description": "",
        "enabled": True,
        "hostWide": True,
        "offeredTo": [],
        "createdAt": None,
        "modifiedAt": None,
    }


def every_server() -> list[dict[str, Any]]:
    """The file's servers (in the file's order), then the registry's (by name)."""
    return [
        *(file_server_json(spec) for spec in file_servers()),
        *(server_json(row) for row in McpServer.objects.order_by("name")),
    ]


def one_server(name: str) -> dict[str, Any]:
    """The registry's row of that name, else the file's server; NoSuchServer if neither."""
    row = McpServer.objects.filter(name=name).first()
    if row is not None:
        return server_json(row)
    spec = file_server(name)
    if spec is None:
        raise NoSuchServer(f"no such MCP server: {name}")
    return file_server_json(spec)


def spec_of(row: McpServer) -> McpServerSpec:
    """A row as the engine offers it, secrets and all (for the agent alone)."""
    return McpServerSpec(
        id=f"mcp:{row.name}",
        name=row.name,
        transport="http" if row.transport == "http" else "stdio",
        command=row.command,
        args=tuple(row.args),
        cwd=row.cwd or None,
        env=dict(row.env),
        url=row.url,
        headers=dict(row.headers),
    )


# -- checking --------------------------------------------------------------------------------


def _stored(row: McpServer) -> dict[str, Any]:
    return {field: getattr(row, COLUMN.get(field, field)) for field in FIELDS}


def _kept_secrets(field: str, sent: Any, stored: Mapping[str, str]) -> tuple[Any, str | None]:
    """`sent` with each `<set>` replaced by the value kept for its key; a `<set>` for a key
    with none kept is a problem."""
    if not isinstance(sent, dict):
        return sent, None
    out = dict(sent)
    for key, value in sent.items():
        if value == SET:
            if not stored.get(key):
                return sent, f"{key!r}: {SET} keeps the value kept for it, and none is"
            out[key] = stored[key]
    return out, None


def _audience_problem(refs: Any) -> str | None:
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        return f"must be {AUDIENCE_SAID}"
    for ref in refs:
        kind, _, key = ref.partition(":")
        if kind == "team":
            if not team_known(key):
                return f"no such team: {key}"
        elif kind == "project":
            if key not in teams_of_projects([key]):
                return f"no such project: {key}"
        elif kind == "user":
            if not get_user_model().objects.filter(username=key).exists():
                return f"no such person: {key}"
        else:
            return f"{ref!r} is not team:<slug>, project:<slug> or user:<id>"
    return None


def checked(body: Mapping[str, Any], existing: McpServer | None = None) -> dict[str, Any]:
    """The model's fields for `body` laid over `existing` (a new server's defaults where there
    is none): each field checked, `<set>` kept; Invalid naming every field that is wrong,
    NameTaken for a new server whose name is another's."""
    unknown = [key for key in body if key not in FIELDS]
    if unknown:
        raise Invalid({key: "no such field" for key in unknown})
    base = _stored(existing) if existing is not None else {"name": "", **EMPTY}
    if existing is None:
        # A new server's transport, where the body says none: http for a URL alone.
        base["transport"] = "http" if body.get("url") and not body.get("command") else "stdio"
    merged = {**base, **body}
    transport = merged["transport"]
    if transport != base["transport"] and transport in SHAPES:
        # Moved to the other shape: the old shape's fields not sent are left behind.
        for field in SHAPES["http" if transport == "stdio" else "stdio"]:
            if field not in body:
                merged[field] = EMPTY[field]
    problems: dict[str, str] = {}
    for field in SECRETS:
        stored = base[field] if isinstance(base[field], dict) else {}
        merged[field], problem = _kept_secrets(field, merged[field], stored)
        if problem is not None:
            problems[field] = problem
    shape = {field: merged[field] for field in ("command", "args", "cwd", "env", "url", "headers")}
    for field, problem in mcp_server_problems(merged["name"], transport, **shape).items():
        problems.setdefault(field, problem)
    if existing is not None and merged["name"] != existing.name:
        problems["name"] = "a server's name cannot change"
    for field in ("command", "cwd", "url"):
        limit = McpServer._meta.get_field(field).max_length or 0
        if isinstance(merged[field], str) and len(merged[field]) > limit:
            problems.setdefault(field, f"at most {limit} characters")
    if not isinstance(merged["description"], str):
        problems["description"] = "must be text"
    for field in ("enabled", "hostWide"):
        if not isinstance(merged[field], bool):
            problems[field] = "must be true or false"
    if (problem := _audience_problem(merged["offeredTo"])) is not None:
        problems["offeredTo"] = problem
    if problems:
        raise Invalid(problems)
    if existing is None:
        name_free(merged["name"])
    merged["offeredTo"] = list(dict.fromkeys(merged["offeredTo"]))
    merged["args"] = list(merged["args"])
    return {COLUMN.get(field, field): merged[field] for field in FIELDS}


def name_free(name: str) -> None:
    """NameTaken, saying whose, when a new server may not be called `name`."""
    if file_server(name) is not None:
        raise NameTaken(
            f"{name} is the name of an MCP server of the operator's AHPD_CONFIG mcpServers: "
            "a registry server cannot take it"
        )
    if McpServer.objects.filter(name=name).exists():
        raise NameTaken(f"an MCP server is named {name} already")


# -- writing ---------------------------------------------------------------------------------


def _changed(stored: McpServer | None, fields: Mapping[str, Any]) -> list[str]:
    if stored is None:
        return list(FIELDS)
    return [
        field
        for field in FIELDS
        if getattr(stored, COLUMN.get(field, field)) != fields[COLUMN.get(field, field)]
    ]


@transaction.atomic
def keep(target: McpServer, fields: Mapping[str, Any], *, by: Actor = SYSTEM) -> McpServer:
    """Save `target` (a new McpServer, or the row to change) as the checked `fields` say; on
    the audit trail with the fields that changed since it was kept and the server as shown
    (no secret)."""
    stored = McpServer.objects.filter(pk=target.pk).first() if target.pk else None
    changed = _changed(stored, fields)
    for column, value in fields.items():
        setattr(target, column, value)
    target.save()
    audit.record(
        "mcpServer.set",
        by,
        "mcpServer",
        target.name,
        made=stored is None,
        changed=changed,
        server=server_json(target),
    )
    return target


@transaction.atomic
def create(body: Mapping[str, Any], *, by: Actor = SYSTEM) -> dict[str, Any]:
    """A new registry server of `body`; Invalid, or NameTaken for a name taken."""
    return server_json(keep(McpServer(), checked(body), by=by))


@transaction.atomic
def update(name: str, body: Mapping[str, Any], *, by: Actor = SYSTEM) -> dict[str, Any]:
    """The fields `body` names laid over the server's; NoSuchServer, FileServer for one of
    the file's, Invalid."""
    row = McpServer.objects.select_for_update().filter(name=name).first()
    if row is None:
        _not_kept(name)
    assert row is not None
    return server_json(keep(row, checked(body, row), by=by))


@transaction.atomic
def remove(name: str, *, by: Actor = SYSTEM) -> None:
    deleted, _ = McpServer.objects.filter(name=name).delete()
    if not deleted:
        _not_kept(name)
    audit.record("mcpServer.removed", by, "mcpServer", name)


def _not_kept(name: str) -> None:
    if file_server(name) is not None:
        raise FileServer(
            f"{name} is an MCP server of the operator's AHPD_CONFIG mcpServers: "
            "it is changed in that file, not here"
        )
    raise NoSuchServer(f"no such MCP server: {name}")
