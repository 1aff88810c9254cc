"""/healthz: whether this server can do its work, for a load balancer or compose to ask.

No token: it says only whether the database and the channel layer answer, never what they
hold. 200 when both do, 503 naming what did not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.http import HttpRequest, JsonResponse

log = logging.getLogger(__name__)

#: How long either may take to answer before it counts as down.
TIMEOUT_S = 3.0


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


async def _channel_layer() -> None:
    connection_to = getattr(get_channel_layer(), "connection", None)
    if connection_to is None:
        return  # the in-memory layer lives in this process: it is up if this answers
    await connection_to(0).ping()


async def _check(name: str, probe: Awaitable[None]) -> str:
    try:
        await asyncio.wait_for(probe, TIMEOUT_S)
    except Exception as error:  # noqa: BLE001 - any failure is the answer
        log.warning("healthz: %s is down: %s", name, error or type(error).__name__)
        return f"down: {error or type(error).__name__}"
    return "ok"


async def healthz(request: HttpRequest) -> JsonResponse:
    checks = {
        "database": await _check("database", sync_to_async(_database)()),
        "channelLayer": await _check("channel layer", _channel_layer()),
    }
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503
    )
