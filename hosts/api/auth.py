"""Bearer tokens for the API: the deployment's connection token is root, a person's token is
that person, with their grants read fresh on every request."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.http import HttpRequest
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import (
    BaseAuthentication,
    SessionAuthentication,
    get_authorization_header,
)
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from ..edge import connection_token, control
from ..engine.principal import Principal, root
from ..store import person_for_token, person_signed_in

#: Where the token a request offered is noted, for the challenge of its 401.
_OFFERED = "_ahpd_offered_token"


def host_name() -> str:
    """The name `root:<host>` says: the engine's own."""
    from ..edge.runtime import host_settings

    return host_settings().host_name


@cache
def server_version() -> str:
    from ..edge.runtime import host_settings

    return host_settings().server_version


@dataclass(frozen=True)
class ApiUser:
    """What `request.user` is for a signed-in request: the principal, user-shaped for DRF."""

    principal: Principal

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False

    @property
    def username(self) -> str:
        return self.principal.ref

    @property
    def pk(self) -> str:
        return self.principal.ref

    def __str__(self) -> str:
        return self.principal.ref


def bearer_token(request: Request | HttpRequest) -> str | None:
    """The credentials of an `Authorization: Bearer ...` header; None for any other."""
    scheme, _, credentials = get_authorization_header(request).decode("latin1").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credentials.strip() or None


def principal_for(token: str) -> Principal | None:
    """Root for the deployment's connection token and for the server's control token (the
    management commands', hosts/edge/control.py), the person for theirs, None otherwise."""
    if (
        connection_token.connection_token() is not None and connection_token.admits(token)
    ) or control.admits(token):
        return root(host_name())
    return person_for_token(token)


class BearerAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>`, the same tokens as the socket's."""

    def authenticate(self, request: Request) -> tuple[ApiUser, str] | None:
        scheme = get_authorization_header(request).split(b" ", 1)[0].lower()
        if scheme != b"bearer":
            return None
        token = bearer_token(request)
        setattr(request._request, _OFFERED, token)
        if token is None:
            raise AuthenticationFailed("The bearer token is missing.")
        principal = principal_for(token)
        if principal is None:
            raise AuthenticationFailed("The token is not valid: it is unknown or revoked.")
        return ApiUser(principal), token

    def authenticate_header(self, request: Request) -> str:
        return connection_token.challenge(getattr(request._request, _OFFERED, None))


class AdminSiteSession(SessionAuthentication):
    """The admin site's sign-in, for the browsable API: the person with their grants now.

    DRF checks the CSRF token of every unsafe method a session cookie signs; a request with a
    Bearer token never reaches here (the token's class answers it first).
    """

    def authenticate(self, request: Request) -> tuple[ApiUser, None] | None:
        signed = super().authenticate(request)
        if signed is None:
            return None
        return ApiUser(person_signed_in(signed[0])), None


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "hosts.api.auth.BearerAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "The deployment's connection token, or a person's token.",
        }


class AdminSiteSessionScheme(OpenApiAuthenticationExtension):
    target_class = "hosts.api.auth.AdminSiteSession"
    name = "cookieAuth"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "The admin site's sign-in, for the browsable API (CSRF-checked).",
        }
