"""The admin's calls on the engine: a service asked through the engine client as the person
signed in, with their grants (as the socket and the REST API ask it), and a refusal, or an
engine that did not answer, said on the page rather than as an error page."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest

from .edge import engine_client
from .protocol.errors import ProtocolError
from .store import person_signed_in


def admin_does(request: HttpRequest, service: str, *, refused: str = "", **args: Any) -> Any:
    """The service's answer ({} for none), or None with why not said on the page after
    `refused` (the words that say nothing was done)."""
    principal = person_signed_in(request.user)  # type: ignore[arg-type]
    try:
        came_from = {"via": "admin", "address": request.META.get("REMOTE_ADDR") or ""}
        answer = engine_client.perform(service, principal, came_from=came_from, **args)
    except ProtocolError as error:
        messages.error(request, f"{refused}{error.message}")
        return None
    except engine_client.EngineUnavailable as error:
        messages.error(request, f"{refused}{error}")
        return None
    return {} if answer is None else answer
