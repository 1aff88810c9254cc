"""`ahpd usage [pool]` and `ahpd policy list|show|set|rm`: the operator's view of the same
figures and rows the `usage:` and `policy:` schemes serve (the operator reads every pool)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError

from hosts.management.ahpd.verbs import Shown, json_flag, noun, verb
from hosts.store.acts import of_command_line

from . import policy_rows, reading
from .decide import PolicyError


def register(nouns: Any) -> None:
    usage = nouns.add_parser(
        "usage",
        help="the pools charged, or one pool's day, week and month",
        description="the pools charged, or one pool's day, week and month (AHPD_USAGE_TIMEZONE)",
        parents=[json_flag()],
    )
    usage.add_argument("pool", nargs="?", help="user:<id>, team:<t> or project:<t>:<p>")
    usage.set_defaults(run=usage_show, database=True)

    policy = noun(nouns, "policy", "policies: who may use which agent and model, and how much")
    verb(policy, "list", "every policy row, in the order kept", policy_list)
    show = verb(policy, "show", "one row", policy_show)
    show.add_argument("id", help="the row's id")
    put = verb(policy, "set", "make a row, or merge JSON fields over the one there", policy_set)
    put.add_argument("id", help="the row's id (its address, policy://<id>)")
    put.add_argument("row", help='the row as JSON: {"scope": "all", "effect": "allow", ...}')
    rm = verb(policy, "rm", "take a row away", policy_rm)
    rm.add_argument("id", help="the row's id")


def _money(total: dict[str, Any]) -> str:
    """Dollars, and what had no price: records with no cost are `unpriced`, never $0."""
    usd, unpriced = f"${total['usd']:.4f}", total["unpriced"]
    if not unpriced:
        return usd
    if unpriced >= total["records"]:
        return "unpriced"
    return f"{usd} (+{unpriced} unpriced)"


def _line(pool: dict[str, Any]) -> str:
    def said(total: dict[str, Any]) -> str:
        return f"{total['records']} turns {total['tokens']} tokens {_money(total)}"

    return (
        f"{pool['pool']}  today {said(pool['day'])}  this week {said(pool['week'])}"
        f"  this month {said(pool['month'])}"
    )


def usage_show(options: dict[str, Any]) -> Shown:
    if options.get("pool"):
        try:
            named = reading.check_pool(options["pool"])
        except reading.BadQuery as exc:
            raise CommandError(str(exc)) from None
        # A name mistyped is said so, not shown as a row of zeros.
        if (unknown := reading.unknown_pool(named)) is not None:
            raise CommandError(unknown)
        pool = reading.pool_json(named)
        return Shown(pool, [_line(pool)])
    pools = [reading.pool_json(p) for p in reading.readable_by_operator()]
    return Shown(pools, [_line(p) for p in pools] or ["no usage recorded yet"])


def policy_list(options: dict[str, Any]) -> Shown:
    rows = policy_rows.all_rows()
    return Shown(rows, [json.dumps(r) for r in rows] or ["no policies"])


def policy_show(options: dict[str, Any]) -> Shown:
    try:
        row = policy_rows.one_row(options["id"])
    except policy_rows.NoSuchPolicy as exc:
        raise CommandError(str(exc)) from None
    return Shown(row, [json.dumps(row)])


def policy_set(options: dict[str, Any]) -> Shown:
    try:
        body = json.loads(options["row"])
        row = policy_rows.write_row(options["id"], body, by=of_command_line())
    except PolicyError as exc:
        raise CommandError(str(exc)) from None
    except ValueError as exc:  # JSONDecodeError, and a number too long to read
        raise CommandError(f"the row is not JSON: {exc}") from None
    return Shown(row, [json.dumps(row)])


def policy_rm(options: dict[str, Any]) -> Shown:
    try:
        policy_rows.delete_row(options["id"], by=of_command_line())
    except policy_rows.NoSuchPolicy as exc:
        raise CommandError(str(exc)) from None
    return Shown({"id": options["id"], "removed": True})
