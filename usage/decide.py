"""The policy rows, checked and decided: softov/ahpd's docs/POLICY.md, with limits enforced.

Pure Python over plain rows (`Row`), so the four steps are tested without a database:

1. a person holding `*:*` is allowed at once (the caller decides that, it holds the grants);
2. the candidates are the active rows of the kind whose scope holds the person (with the
   request's team and project) and whose match holds the request;
3. any candidate that denies refuses, naming its row;
4. no candidate refuses, naming the kind and what was asked.

Beyond the reference, an allowing row whose limit is spent no longer allows: every scope
that has allowing candidates must have one with room (a person's, a team's and a project's
budget each bind), and the row of each scope that pays is chosen by the pay order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from functools import cache
from typing import Any

from hosts.protocol.limits import figure_problem

from .periods import PERIODS

KINDS = ("agent", "model", "computer")
EFFECTS = ("allow", "deny")
LIMIT_POOLS = ("shared", "each")
#: The measures a limit may count in, by the kind of its row.
MEASURES: dict[str, tuple[str, ...]] = {
    "model": ("usd", "tokens", "calls"),
    "agent": ("usd", "tokens", "turns", "hours"),
    "computer": ("hours", "sessions"),
}
#: The value types a match may name, by the kind of its row.
MATCH_TYPES: dict[str, tuple[str, ...]] = {
    "model": ("model", "proxy"),
    "agent": ("model", "agent", "computer"),
    "computer": ("computer",),
}
#: The most a limit's amount may be: what a row's spend is kept in (PolicySpend.amount, 24
#: digits with 8 after the point) holds, below 10**16.
AMOUNT_MAX = Decimal(10**16) - Decimal("0.00000001")
FIELDS = ("scope", "kind", "effect", "match", "limits", "pool", "cap", "from", "until")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class PolicyError(ValueError):
    """A row that cannot be kept; the message names the row and what is wrong, and
    `problems` says it field by field (`{"kind": ["kind must be one of ..."]}`)."""

    def __init__(self, message: str, problems: Mapping[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.problems: dict[str, list[str]] = dict(problems or {})


@dataclass(frozen=True, slots=True)
class Limit:
    amount: Decimal
    measure: str
    period: str
    pool: str


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    scope: str = "all"
    kind: str = "agent"
    effect: str = "allow"
    match: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    limits: tuple[Limit, ...] = ()
    pool: str = ""
    cap: bool = False
    starts: datetime | None = None
    ends: datetime | None = None
    #: When the store made it: the pay order's last word between two extra rows.
    created: datetime | None = None

    def active(self, now: datetime) -> bool:
        return (self.starts is None or self.starts <= now) and (
            self.ends is None or now < self.ends
        )


@dataclass(frozen=True, slots=True)
class Ask:
    """What is asked: by whom (`user:<id>`), in which team and project (slugs or ""), and
    the values of the request (`agent`, `model` where the turn named one)."""

    person: str
    team: str
    project: str
    values: Mapping[str, str]

    def said(self) -> str:
        """The request in a refusal's words: `agent local with model fake`."""
        agent = self.values.get("agent", "")
        model = self.values.get("model")
        return f"agent {agent}" + (f" with model {model}" if model else "")


@dataclass(frozen=True, slots=True)
class Decision:
    #: Why it is refused, naming the row (or the kind and what was asked); None: allowed.
    refusal: str | None
    #: The allowing candidates, grouped by scope, each group in pay order.
    payers: tuple[tuple[Row, ...], ...] = ()


# -- reading a row -----------------------------------------------------------------------------


def _instant(value: Any, where: str, *, end: bool) -> datetime | None:
    """An ISO instant, or a bare YYYY-MM-DD standing for the whole day (its start for `from`,
    the next day's start for `until`)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise PolicyError(f"{where} must be an ISO date or instant")
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime.combine(day + timedelta(days=1 if end else 0), time(), UTC)
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise PolicyError(f"{where} must be an ISO date or instant, not {value!r}") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def check_id(policy_id: str) -> str:
    if not _ID.fullmatch(policy_id):
        said = f"policy id {policy_id!r}: letters, digits, '.', '_' and '-', at most 100"
        raise PolicyError(said, {"id": [said]})
    return policy_id


def parse_row(policy_id: str, body: Mapping[str, Any]) -> Row:
    """The row a JSON body says, every field checked; PolicyError naming every field that is
    wrong (its `problems`, by field), not only the first."""
    where = f"policy {check_id(policy_id)}"
    problems: dict[str, list[str]] = {}

    def wrong(name: str, said: str) -> None:
        problems.setdefault(name, []).append(said)

    for name in sorted(set(body) - set(FIELDS) - {"id"}):
        wrong(name, f"unknown field {name!r}")
    kind = body.get("kind", "agent")
    if kind not in KINDS:
        wrong("kind", f"kind must be one of {', '.join(KINDS)}")
    effect = body.get("effect", "allow")
    if effect not in EFFECTS:
        wrong("effect", "effect must be allow or deny")
    scope = body.get("scope", "all")
    if not isinstance(scope, str) or not _scope_ok(scope):
        wrong("scope", f"scope must be all, user:<id>, team:<t> or project:<t>:<p>, not {scope!r}")
    match = body.get("match", {}) or {}
    values: dict[str, tuple[str, ...]] = {}
    if not isinstance(match, dict):
        wrong("match", "match must be an object of value lists")
        match = {}
    for key, listed in match.items():
        if kind in KINDS and key not in MATCH_TYPES[kind]:
            wrong("match", f"a {kind} row cannot match on {key!r}")
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list) or not all(isinstance(v, str) and v for v in listed):
            wrong("match", f"match.{key} must be a list of strings")
        else:
            values[key] = tuple(listed)
    limits_in = body.get("limits", []) or []
    limits: list[Limit] = []
    if not isinstance(limits_in, list):
        wrong("limits", "limits must be a list")
        limits_in = []
    for i, item in enumerate(limits_in):
        try:
            limits.append(_limit(item, f"limits[{i}]", kind if kind in KINDS else "agent"))
        except PolicyError as exc:
            wrong("limits", str(exc))
    pool = body.get("pool", "") or ""
    if not isinstance(pool, str):
        wrong("pool", "pool must be a string")
    cap = body.get("cap", False)
    if not isinstance(cap, bool):
        wrong("cap", "cap must be true or false")
    starts = ends = None
    try:
        starts = _instant(body.get("from"), "from", end=False)
    except PolicyError as exc:
        wrong("from", str(exc))
    try:
        ends = _instant(body.get("until"), "until", end=True)
    except PolicyError as exc:
        wrong("until", str(exc))
    if starts is not None and ends is not None and starts >= ends:
        wrong("from", "from must be before until")
    if problems:
        said = "; ".join(text for texts in problems.values() for text in texts)
        raise PolicyError(f"{where}: {said}", problems)
    return Row(policy_id, scope, kind, effect, values, tuple(limits), pool, cap, starts, ends)


def _scope_ok(scope: str) -> bool:
    kind, _, rest = scope.partition(":")
    if scope == "all":
        return True
    if kind in ("user", "team"):
        return bool(rest) and ":" not in rest
    if kind == "project":
        team, _, project = rest.partition(":")
        return bool(team) and bool(project) and ":" not in project
    return False


def _limit(item: Any, where: str, kind: str) -> Limit:
    if not isinstance(item, dict):
        raise PolicyError(f"{where} must be an object")
    amount = figure(item.get("amount"), f"{where}: amount")
    measure = item.get("measure")
    if measure not in MEASURES[kind]:
        raise PolicyError(
            f"{where}: measure {measure!r} is not a measure of {kind} rows: "
            + ", ".join(MEASURES[kind])
        )
    period = item.get("period")
    if period not in PERIODS:
        raise PolicyError(f"{where}: period must be one of {', '.join(PERIODS)}")
    pool = item.get("pool")
    if pool not in LIMIT_POOLS:
        raise PolicyError(f"{where}: pool must be shared or each")
    return Limit(amount, measure, period, pool)


def figure(value: Any, where: str, most: Decimal = AMOUNT_MAX) -> Decimal:
    """The amount a row may keep (limits.figure_problem), or PolicyError naming `where`.
    Every way a row is written (the `policy:` scheme, REST, the admin, the command line)
    reads its figures here, before anything is kept."""
    if (problem := figure_problem(value, most)) is not None:
        raise PolicyError(f"{where} {problem}")
    return Decimal(str(value))


# -- deciding ----------------------------------------------------------------------------------


@cache
def _pattern(glob: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in glob.split("*")), re.DOTALL)


def glob_matches(glob: str, value: str) -> bool:
    """`*` is any run of characters, the value matched whole; nothing else is special."""
    return _pattern(glob).fullmatch(value) is not None


def holds(row: Row, ask: Ask) -> bool:
    """Whether the row's scope holds the person, with the request's team and project."""
    kind, _, rest = row.scope.partition(":")
    if row.scope == "all":
        return True
    if kind == "user":
        return ask.person == row.scope
    if kind == "team":
        return bool(ask.team) and rest == ask.team
    return bool(ask.project) and rest == f"{ask.team}:{ask.project}"


def matches(row: Row, ask: Ask) -> bool:
    """Values of one type are alternatives; of different types, all must hold. A type the
    request did not name is skipped by an allow and fails a deny."""
    for key, globs in row.match.items():
        value = ask.values.get(key)
        if value is None:
            if row.effect == "deny":
                return False
            continue
        if not any(glob_matches(g, value) for g in globs):
            return False
    return True


def pay_order(rows: Iterable[Row], order: str) -> list[Row]:
    """Seed 004's payOrder: ending, the row that ends soonest first; regular, the rows with no
    until first; extra, the rows with an until first, "the newest from first": the latest
    `from` leads (a row with no `from` has been valid all along, so it is the oldest), and
    of two rows valid from the same instant the one made later."""
    far = datetime.max.replace(tzinfo=UTC)
    oldest = datetime.min.replace(tzinfo=UTC)
    listed = list(rows)
    if order == "regular":
        return sorted(listed, key=lambda r: (r.ends is not None, r.ends or far))
    if order == "extra":
        return sorted(
            listed,
            key=lambda r: (
                r.ends is None,
                -(r.starts or oldest).timestamp(),
                -(r.created or oldest).timestamp(),
            ),
        )
    return sorted(listed, key=lambda r: r.ends or far)


def decide(rows: Iterable[Row], ask: Ask, now: datetime, order: str = "ending") -> Decision:
    """Steps 2 to 4 over `rows` of the ask's kind (step 1 is the caller's)."""
    candidates = [r for r in rows if r.active(now) and holds(r, ask) and matches(r, ask)]
    for row in candidates:
        if row.effect == "deny":
            return Decision(f"{row.id} refuses {ask.said()}")
    if not candidates:
        return Decision(f"no policy allows {ask.said()}")
    scopes: dict[str, list[Row]] = {}
    for row in candidates:
        scopes.setdefault(row.scope, []).append(row)
    return Decision(None, tuple(tuple(pay_order(g, order)) for g in scopes.values()))


def row_json(row: Row) -> dict[str, Any]:
    """A row as `policy://<id>` reads it."""
    out: dict[str, Any] = {
        "id": row.id,
        "scope": row.scope,
        "kind": row.kind,
        "effect": row.effect,
        "match": {k: list(v) for k, v in row.match.items()},
        "limits": [
            {
                "amount": float(limit.amount) if limit.amount % 1 else int(limit.amount),
                "measure": limit.measure,
                "period": limit.period,
                "pool": limit.pool,
            }
            for limit in row.limits
        ],
    }
    if row.pool:
        out["pool"] = row.pool
    if row.cap:
        out["cap"] = True
    if row.starts is not None:
        out["from"] = row.starts.isoformat().replace("+00:00", "Z")
    if row.ends is not None:
        out["until"] = row.ends.isoformat().replace("+00:00", "Z")
    return out
