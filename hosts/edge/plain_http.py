"""Plain HTTP at the site's root: on the WebSocket's path, 426 for a request whose token would
be admitted, 401 otherwise; and /favicon.ico, which a browser asks for on every admin and API
page (answered, not a 404 logged as a warning each time)."""

from __future__ import annotations

from pathlib import Path

from django.http import HttpRequest, HttpResponse

from . import connection_token

#: ahpd's icon, a prompt: also a static file (/static/ahpd/favicon.ico).
ICON = (Path(__file__).resolve().parents[1] / "static" / "ahpd" / "favicon.ico").read_bytes()


def websocket_door(request: HttpRequest) -> HttpResponse:
    headers = {k.lower(): v for k, v in request.headers.items()}
    token = connection_token.token_from(request.META.get("QUERY_STRING", ""), headers)
    if connection_token.admits(token) or (
        token is not None and connection_token.person_admitted(token)
    ):
        response = HttpResponse(
            "This is an Agent Host Protocol endpoint: connect with a WebSocket.\n",
            status=426,
            content_type="text/plain",
        )
        response["Upgrade"] = "websocket"
        response["Connection"] = "Upgrade"
    else:
        response = HttpResponse(
            "A connection token is required.\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = connection_token.challenge(token)
    response["Access-Control-Allow-Origin"] = "*"
    return response


def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(ICON, content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response
