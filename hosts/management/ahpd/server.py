"""The running server, reached over its REST API as root with its control token, which it
wrote into its data directory at start (hosts/edge/control.py): what only its process knows
(connections, running turns) is asked of it, never guessed from the database."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urljoin

from django.core.management.base import CommandError

from hosts.edge import control
from hosts.edge.control import Running

#: No proxy: the server is on this machine, whatever http_proxy says.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class NotRunning(CommandError):
    """No server serves this data directory, or it does not answer."""


def serving() -> Running:
    record = control.running()
    if record is None:
        raise NotRunning(
            f"the server is not running (no live record in {control.record_path()}): "
            "start it with make run"
        )
    return record


def call(method: str, path: str, body: Any = None) -> Any:
    """`method` on `/api/<path>` of the running server, as root; the answer's JSON."""
    record = serving()
    return _request(record, method, urljoin(record.api_base, "api/" + path), body)


def listing(path: str) -> list[Any]:
    """Every row of a REST list: a bare list, or pages of `results` followed by `next`."""
    record = serving()
    url: str | None = urljoin(record.api_base, "api/" + path)
    found: list[Any] = []
    while url:
        page = _request(record, "GET", url, None)
        if isinstance(page, list):
            return found + page
        found += page.get("results", [])
        url = page.get("next")
    return found


def _request(record: Running, method: str, url: str, body: Any) -> Any:
    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {record.control}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        },
    )
    try:
        with _OPENER.open(request, timeout=30) as response:
            text = response.read()
    except urllib.error.HTTPError as error:
        raise CommandError(f"the server refused {method} {url}: {_detail(error)}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise NotRunning(
            f"the server is not running: nothing answers at {record.api_base} ({reason})"
        ) from None
    return json.loads(text) if text else None


def _detail(error: urllib.error.HTTPError) -> str:
    try:
        answer = json.loads(error.read())
    except ValueError:
        return f"HTTP {error.code}"
    if isinstance(answer, dict) and "detail" in answer:
        return str(answer["detail"])
    return f"HTTP {error.code}: {json.dumps(answer)}"
