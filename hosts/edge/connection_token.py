"""The connection token: where it comes from, and whether a request carries it."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from urllib.parse import parse_qs

from django.conf import settings

from ahpsite.env import EnvError

from .origins import is_loopback, refusal

TOKEN_FILE_NAME = "connection-token"
#: RFC 6750 challenges, one for a request with no token and one for a wrong token.
CHALLENGE_MISSING = 'Bearer realm="ahpd"'
CHALLENGE_INVALID = 'Bearer realm="ahpd", error="invalid_token"'


@cache
def connection_token() -> str | None:
    """The deployment's token: given, read from a file, or made once in the data directory.

    None only when AHPD_WITHOUT_CONNECTION_TOKEN=1, which a non-loopback bind refuses.
    """
    if settings.AHPD_WITHOUT_CONNECTION_TOKEN:
        if not is_loopback(settings.AHPD_HOST):
            raise EnvError(
                "AHPD_WITHOUT_CONNECTION_TOKEN=1 is allowed on a loopback address only, "
                f"and AHPD_HOST is {settings.AHPD_HOST}"
            )
        return None
    if settings.AHPD_CONNECTION_TOKEN:
        return str(settings.AHPD_CONNECTION_TOKEN)
    if settings.AHPD_CONNECTION_TOKEN_FILE:
        path = Path(settings.AHPD_CONNECTION_TOKEN_FILE).expanduser()
        token = path.read_text().strip()
        if not token:
            raise EnvError(f"AHPD_CONNECTION_TOKEN_FILE {str(path)!r} is empty")
        return token
    path = Path(settings.AHPD_DATA_DIR) / TOKEN_FILE_NAME
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(32) + "\n")
    path.chmod(0o600)
    return path.read_text().strip()


def upgrade_refusal(headers: Mapping[str, str]) -> str | None:
    """Why an upgrade with these headers (names lower-cased) is no client's but a web page's
    elsewhere, or None (origins.py has the rules)."""
    return refusal(
        headers.get("origin"),
        headers.get("host"),
        allowed=settings.AHPD_ALLOWED_ORIGINS,
        loopback_only=bool(settings.AHPD_WITHOUT_CONNECTION_TOKEN),
    )


def token_from(query_string: bytes | str, headers: Mapping[str, str]) -> str | None:
    """The token a request offers: `?tkn=` (what VS Code sends) or an Authorization bearer."""
    if isinstance(query_string, bytes):
        query_string = query_string.decode("latin1")
    return token_from_query(parse_qs(query_string), headers)


def token_from_query(query: Mapping[str, list[str]], headers: Mapping[str, str]) -> str | None:
    """The same, from a query already parsed and headers with lower-cased names."""
    values = query.get("tkn")
    if values:
        return values[0]
    authorization = headers.get("authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return None


def admits(token: str | None) -> bool:
    expected = connection_token()
    if expected is None:
        return True
    if token is None:
        return False
    return hmac.compare_digest(token.encode(), expected.encode())


def person_admitted(token: str) -> bool:
    """Whether a token is a person's live token (a database read: call it off the loop)."""
    from django.db import close_old_connections

    from ..store import person_for_token

    close_old_connections()
    return person_for_token(token) is not None


def challenge(token: str | None) -> str:
    return CHALLENGE_MISSING if token is None else CHALLENGE_INVALID
