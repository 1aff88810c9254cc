"""`ahpd mcp list|show|add|update|remove`: the team's MCP servers, asked of the running server
over its REST API (/api/mcp-servers/, as root with its control token: hosts/management/ahpd/
server.py), so the command line checks, keeps and records a server as the API and the admin do
(registry.py), and shows what they show: a secret is `<set>`, never itself.

A secret need not be typed on the command line, where `ps` and the shell's history would keep
it: `--env NAME` with no `=` takes the value of NAME from this command's own environment.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from django.core.management.base import CommandError

from hosts.management.ahpd.server import call, listing
from hosts.management.ahpd.verbs import Shown, noun, verb

SET = "<set>"


def register(nouns: Any) -> None:
    mcp = noun(nouns, "mcp", "MCP servers: the team's registry, beside AHPD_CONFIG's")
    verb(
        mcp,
        "list",
        "every MCP server: AHPD_CONFIG's, then the registry's",
        mcp_list,
        database=False,
    )
    show = verb(mcp, "show", "one MCP server", mcp_show, database=False)
    show.add_argument("name", help="its name")
    add = verb(
        mcp,
        "add",
        "a registry MCP server (a stdio command or an http URL)",
        mcp_add,
        database=False,
    )
    add.add_argument("name", help="letters, digits, - and _: the name the agent sees")
    _shape_arguments(add)
    add.add_argument("--disabled", action="store_true", help="kept, offered to nobody")
    add.add_argument("--host-wide", action="store_true", help="offered to every session")
    add.add_argument(
        "--offer",
        action="append",
        default=[],
        metavar="REF",
        help="offered to team:<slug>, project:<slug> or user:<id> (again for more)",
    )
    update = verb(
        mcp, "update", "change the fields named, the rest kept", mcp_update, database=False
    )
    update.add_argument("name", help="its name")
    _shape_arguments(update)
    update.add_argument("--no-args", action="store_true", help="run the command with none")
    update.add_argument(
        "--unset-env", action="append", default=[], metavar="NAME", help="drop a variable"
    )
    update.add_argument(
        "--unset-header", action="append", default=[], metavar="NAME", help="drop a header"
    )
    switch = update.add_mutually_exclusive_group()
    switch.add_argument(
        "--enable", dest="enabled", action="store_const", const=True, help="offer it again"
    )
    switch.add_argument(
        "--disable",
        dest="enabled",
        action="store_const",
        const=False,
        help="keep it, offered to nobody",
    )
    wide = update.add_mutually_exclusive_group()
    wide.add_argument(
        "--host-wide",
        dest="host_wide",
        action="store_const",
        const=True,
        help="offered to every session",
    )
    wide.add_argument(
        "--not-host-wide",
        dest="host_wide",
        action="store_const",
        const=False,
        help="offered only to those named",
    )
    update.add_argument("--offer", action="append", default=[], metavar="REF", help="offer it")
    update.add_argument(
        "--unoffer", action="append", default=[], metavar="REF", help="offer it no more"
    )
    remove = verb(mcp, "remove", "remove a registry MCP server", mcp_remove, database=False)
    remove.add_argument("name", help="its name")


def _shape_arguments(parser: Any) -> None:
    parser.add_argument("--command", help="stdio: what is run")
    parser.add_argument(
        "--arg", action="append", default=[], metavar="ARG", help="stdio: one argument"
    )
    parser.add_argument("--cwd", help="stdio: where it runs")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="stdio: a variable; NAME alone takes its value from this command's environment",
    )
    parser.add_argument("--url", help="http: its http(s) URL")
    parser.add_argument(
        "--header", action="append", default=[], metavar="NAME=VALUE", help="http: a header"
    )
    parser.add_argument("--description", help="what it is for, shown to operators")


def _path(name: str) -> str:
    return f"mcp-servers/{quote(name, safe='')}/"


def _line(server: dict[str, Any]) -> str:
    offered = ["everyone"] * bool(server["hostWide"]) + list(server["offeredTo"])
    where = server["command"] if server["transport"] == "stdio" else server["url"]
    return (
        f"{server['name']}  source={server['source']}  {server['transport']}={where or '-'}  "
        f"{'enabled' if server['enabled'] else 'disabled'}  "
        f"offered={','.join(offered) or 'nobody'}"
    )


def _lines(server: dict[str, Any]) -> list[str]:
    lines = [_line(server)]
    for key in ("args", "cwd", "env", "headers", "description"):
        value = server[key]
        if value:
            shown = (
                ", ".join(f"{k}={v}" for k, v in value.items())
                if isinstance(value, dict)
                else (" ".join(value) if isinstance(value, list) else value)
            )
            lines.append(f"  {key}: {shown}")
    return lines


def mcp_list(options: dict[str, Any]) -> Shown:
    servers = listing("mcp-servers/")
    return Shown(servers, [_line(server) for server in servers] or ["no MCP servers"])


def mcp_show(options: dict[str, Any]) -> Shown:
    server = call("GET", _path(options["name"]))
    return Shown(server, _lines(server))


def _pairs(items: list[str], what: str, from_environment: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            if not from_environment:
                raise CommandError(f"--{what} takes NAME=VALUE, not {key!r}")
            if key not in os.environ:
                raise CommandError(f"--{what} {key}: no {key} in this command's environment")
            value = os.environ[key]
        out[key] = value
    return out


def _shape(options: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key in ("command", "cwd", "url", "description"):
        if options.get(key) is not None:
            body[key] = options[key]
    if options["arg"]:
        body["args"] = list(options["arg"])
    return body


def mcp_add(options: dict[str, Any]) -> Shown:
    body = {"name": options["name"], **_shape(options)}
    if options["env"]:
        body["env"] = _pairs(options["env"], "env", True)
    if options["header"]:
        body["headers"] = _pairs(options["header"], "header", False)
    body["enabled"] = not options["disabled"]
    body["hostWide"] = options["host_wide"]
    body["offeredTo"] = list(dict.fromkeys(options["offer"]))
    server = call("POST", "mcp-servers/", body)
    return Shown(server, _lines(server))


def mcp_update(options: dict[str, Any]) -> Shown:
    name = options["name"]
    body = _shape(options)
    if options["no_args"]:
        body["args"] = []
    kept = None
    for key, given, unset, from_environment in (
        ("env", options["env"], options["unset_env"], True),
        ("headers", options["header"], options["unset_header"], False),
    ):
        if not (given or unset):
            continue
        kept = kept or call("GET", _path(name))
        # What is kept stays `<set>` (the server keeps its value); what is named replaces it.
        values = {**kept[key], **_pairs(given, key.rstrip("s"), from_environment)}
        for item in unset:
            if item not in values:
                raise CommandError(f"{name} has no {key} {item!r}")
            del values[item]
        body[key] = values
    if options["enabled"] is not None:
        body["enabled"] = options["enabled"]
    if options["host_wide"] is not None:
        body["hostWide"] = options["host_wide"]
    if options["offer"] or options["unoffer"]:
        kept = kept or call("GET", _path(name))
        offered = [ref for ref in kept["offeredTo"] if ref not in options["unoffer"]]
        body["offeredTo"] = list(dict.fromkeys([*offered, *options["offer"]]))
    if not body:
        raise CommandError("nothing to change: name a field (-h says which)")
    server = call("PATCH", _path(name), body)
    return Shown(server, _lines(server))


def mcp_remove(options: dict[str, Any]) -> Shown:
    call("DELETE", _path(options["name"]))
    return Shown({"name": options["name"], "removed": True}, [f"{options['name']} removed"])
