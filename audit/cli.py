"""`ahpd audit`: the audit trail, newest first, narrowed as /api/audit/ is."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError

from hosts.management.ahpd.verbs import Shown, json_flag

from .listing import AuditFilter, record_json
from .models import AuditRecord

#: Records shown when --limit is not given.
DEFAULT_LIMIT = 100


def register(nouns: Any) -> None:
    audit = nouns.add_parser(
        "audit",
        help="the audit trail: who did what, to what, when and from where",
        description="the audit trail, newest first (what /api/audit/ lists)",
        parents=[json_flag()],
    )
    audit.add_argument("--act", help="only this act, e.g. token.minted")
    audit.add_argument("--by", help="only this principal's, e.g. user:alice")
    audit.add_argument("--via", help="only from here: socket, rest, admin, cli, schedule, system")
    audit.add_argument("--target-kind", help="only on this kind, e.g. token")
    audit.add_argument("--target-id", help="only on this, e.g. user:alice/laptop")
    audit.add_argument("--since", help="only at or after this moment (ISO 8601)")
    audit.add_argument("--until", help="only before this moment (ISO 8601)")
    audit.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, help=f"at most this many ({DEFAULT_LIMIT})"
    )
    audit.set_defaults(run=audit_list, database=True)


def audit_list(options: dict[str, Any]) -> Shown:
    asked = {
        "act": options.get("act"),
        "by": options.get("by"),
        "via": options.get("via"),
        "targetKind": options.get("target_kind"),
        "targetId": options.get("target_id"),
        "since": options.get("since"),
        "until": options.get("until"),
    }
    narrowed = AuditFilter({k: v for k, v in asked.items() if v}, AuditRecord.objects.all())
    if not narrowed.is_valid():
        said = "; ".join(
            f"--{name.replace('targetK', 'target-k').replace('targetI', 'target-i')}: "
            + " ".join(errors)
            for name, errors in narrowed.errors.items()
        )
        raise CommandError(said)
    if options["limit"] < 1:
        raise CommandError("--limit: at least 1")
    records = [record_json(r) for r in narrowed.qs[: options["limit"]]]
    lines = [
        f"{r['at']}  {r['by']}  {r['act']}  {r['targetKind']}:{r['targetId']}  via {r['via']}"
        + (f" from {r['address']}" if r["address"] else "")
        + (f"  {json.dumps(r['detail'])}" if r["detail"] else "")
        for r in records
    ]
    return Shown(records, lines or ["no audit records"])
