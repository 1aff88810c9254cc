"""The API's way to the engine: a service run as the request's principal through the engine
client, its refusal answered in the engine's words with the HTTP status its code maps to.
Every app's views call the engine through here (hosts/admin_engine_calls.py is the admin's)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from rest_framework import exceptions, status
from rest_framework.request import Request

from ..edge import engine_client
from ..engine.host import Host
from ..engine.principal import Principal
from ..protocol.errors import ErrorCode, ProtocolError
from ..store.acts import of_request
from .auth import ApiUser

T = TypeVar("T")


def principal_of(request: Request) -> Principal:
    """Who a request the API's authentication let in is (hosts/api/auth.py)."""
    user = request.user
    assert isinstance(user, ApiUser)
    return user.principal


_STATUS = {
    ErrorCode.SESSION_NOT_FOUND: status.HTTP_404_NOT_FOUND,
    ErrorCode.NOT_FOUND: status.HTTP_404_NOT_FOUND,
    ErrorCode.PROVIDER_NOT_FOUND: status.HTTP_400_BAD_REQUEST,
    ErrorCode.INVALID_PARAMS: status.HTTP_400_BAD_REQUEST,
    ErrorCode.PERMISSION_DENIED: status.HTTP_403_FORBIDDEN,
    ErrorCode.TURN_IN_PROGRESS: status.HTTP_409_CONFLICT,
}


class EngineRefused(exceptions.APIException):
    """The engine's refusal, in its words, with the HTTP status its code maps to."""

    def __init__(self, error: ProtocolError) -> None:
        super().__init__(detail=error.message)
        self.status_code = _STATUS.get(error.code, status.HTTP_400_BAD_REQUEST)


class EngineDidNotAnswer(exceptions.APIException):
    """The engine did not answer within the engine client's timeout: 503, saying so."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE


def _came_from(request: Request) -> dict[str, str]:
    """Where the call came in, for the engine's audit trail (services/calls.py)."""
    actor = of_request(request, "rest")
    return {"via": actor.via, "address": actor.address}


def engine_does(request: Request, service: str, **args: Any) -> Any:
    """Run a service as the request's principal through the engine client, on the engine that
    holds its session; a refusal is answered in the engine's words, with the HTTP status its
    code maps to, and an engine that did not answer in time as 503."""
    principal = principal_of(request)
    try:
        return engine_client.perform(service, principal, came_from=_came_from(request), **args)
    except ProtocolError as error:
        raise EngineRefused(error) from None
    except engine_client.EngineUnavailable as error:
        raise EngineDidNotAnswer(str(error)) from None


def engine_reads(work: Callable[[Host], Awaitable[T]], *, what: str) -> T:
    """What `work` reads of the engine (running turns, root config), on its loop; an engine
    that did not answer in time, or runs in another process, is 503 saying so."""
    try:
        return engine_client.read(work, what=what)
    except engine_client.EngineUnavailable as error:
        raise EngineDidNotAnswer(str(error)) from None
