"""The engine's usage meter over the ORM (hosts/engine/meter.py's port), and the `usage:` and
`policy:` schemes it serves over the resource family.

Every call runs on the engine's database executor (hosts/store/engine_database.py), never on
the loop, nor on the thread a request holds.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from django.conf import settings

from hosts.engine.meter import Admission, Use, Work
from hosts.engine.principal import Principal
from hosts.protocol.errors import ErrorCode, ProtocolError, invalid_params
from hosts.store.acts import Actor
from hosts.store.engine_database import db_call

from . import ledger, policy_rows, reading
from .decide import PolicyError


class DjangoMeter:
    def __init__(self) -> None:
        self.per_report = settings.AHPD_USAGE_PER == "report"

    async def check_session(self, work: Work) -> str | None:
        return await db_call(ledger.check_session)(work)

    async def admit_turn(self, work: Work) -> Admission:
        return await db_call(ledger.admit_turn)(work)

    async def record(self, use: Use) -> str | None:
        return await db_call(ledger.write_record)(use)

    async def resource(
        self, principal: Principal, method: str, uri: str, data: Any = None, **options: Any
    ) -> dict[str, Any]:
        return await db_call(serve)(principal, method, uri, data or {})


def _json(value: Any) -> dict[str, Any]:
    return {"data": json.dumps(value), "encoding": "utf-8", "contentType": "application/json"}


def serve(principal: Principal, method: str, uri: str, params: dict[str, Any]) -> dict[str, Any]:
    """One resource call on a `usage:` or `policy:` URI, in the protocol's answer shape."""
    try:
        parts = urlsplit(uri)
        if parts.scheme == "usage":
            return _usage(principal, method, parts.netloc, parts.path, parse_qs(parts.query))
        return _policy(principal, method, unquote(parts.netloc), parts.path, params)
    except reading.Refused as exc:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, str(exc)) from None
    except (reading.BadQuery, PolicyError) as exc:
        raise invalid_params(f"{method}: {exc}") from None
    except policy_rows.NoSuchPolicy:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {uri}") from None
    except policy_rows.PolicyExists:
        raise ProtocolError(ErrorCode.ALREADY_EXISTS, f"Resource already exists: {uri}") from None


def _only(method: str, allowed: tuple[str, ...], uri: str) -> None:
    if method not in allowed:
        raise invalid_params(f"{method}: {uri} is read with {' or '.join(allowed)}")


def _usage(
    principal: Principal, method: str, netloc: str, path: str, query: dict[str, list[str]]
) -> dict[str, Any]:
    def arg(name: str) -> str | None:
        return query.get(name, [None])[0]

    where = f"usage://{netloc}{path}"
    if method not in ("resourceRead", "resourceList"):
        raise ProtocolError(
            ErrorCode.PERMISSION_DENIED, f"{where}: usage is written by the meter, never edited"
        )
    if not netloc:
        pools = reading.readable(principal)
        if method == "resourceList":
            return {"entries": [{"name": p, "type": "file"} for p in pools]}
        return _json({"pools": pools})
    _only(method, ("resourceRead",), where)
    if netloc == "groups" and not path:
        return _json(reading.groups_json(principal, arg("by"), arg("from"), arg("until")))
    if netloc == "limits" and not path:
        if not settings.AHPD_POLICIES_OWN_LIMITS:
            raise ProtocolError(
                ErrorCode.PERMISSION_DENIED,
                "usage://limits is off (AHPD_POLICIES_OWN_LIMITS): read policy://<id>/limits",
            )
        return _json({"limits": policy_rows.limits_for(principal)})
    pool = unquote(netloc)
    reading.require_pool(principal, pool)
    if not path or path == "/":
        return _json(reading.pool_json(pool))
    if path in ("/day", "/week", "/month"):
        period = path[1:]
        return _json({"pool": pool, period: reading.pool_json(pool)[period]})
    if path == "/range":
        return _json(reading.range_json(pool, arg("from"), arg("until")))
    if path == "/records":
        return _json(reading.records_json(pool, arg("from"), arg("until")))
    raise ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {where}")


def _policy(
    principal: Principal, method: str, policy_id: str, path: str, params: dict[str, Any]
) -> dict[str, Any]:
    where = f"policy://{policy_id}{path}"
    needed = "policy:write" if method in ("resourceWrite", "resourceDelete") else "policy:read"
    if not principal.may(needed):
        raise reading.Refused(f"{principal.ref} may not {needed} here")
    if not policy_id:
        if method == "resourceList":
            rows = policy_rows.all_rows()
            return {"entries": [{"name": row["id"], "type": "file"} for row in rows]}
        _only(method, ("resourceRead", "resourceList"), where)
        return _json({"policies": policy_rows.all_rows()})
    if path == "/limits":
        _only(method, ("resourceRead",), where)
        return _json(policy_rows.limits_json(policy_rows.row_of_id(policy_id), ""))
    if path not in ("", "/"):
        raise ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {where}")
    if method == "resourceRead":
        return _json(policy_rows.one_row(policy_id))
    if method == "resourceWrite":
        body = _body(params, where)
        policy_rows.write_row(
            policy_id, body, create_only=params.get("createOnly") is True, by=_from(principal)
        )
        return {}
    if method == "resourceDelete":
        policy_rows.delete_row(policy_id, by=_from(principal))
        return {}
    raise invalid_params(f"{method}: {where} is read, written and deleted, not listed")


def _from(principal: Principal) -> Actor:
    return Actor(principal.ref, "socket")


def _body(params: dict[str, Any], where: str) -> Any:
    data = params.get("data")
    if not isinstance(data, str):
        raise invalid_params(f"resourceWrite: {where} needs data, the row as JSON")
    if params.get("encoding") == "base64":
        try:
            data = base64.b64decode(data, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise invalid_params(f"resourceWrite: {where}: data is not base64 UTF-8") from None
    try:
        return json.loads(data)
    except ValueError as exc:  # JSONDecodeError, and a number too long to read
        raise invalid_params(f"resourceWrite: {where}: the row is not JSON: {exc}") from None
