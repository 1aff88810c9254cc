"""Signing in to an MCP server over HTTP, as the MCP authorization spec has a client do it.

A server that answers 401 names its protected-resource metadata (RFC 9728) in its challenge
(`WWW-Authenticate: Bearer resource_metadata="<url>"`, else the well-known address beside the
server); that record is what a person signs in from, so the server's state says it
(`authRequired`, McpServerAuthRequiredState). The token a person's client then pushes with
`authenticate` for that resource is added to every request (`ResourceBearer`), read anew each
time, so a token withdrawn or run out is never sent again. A server whose metadata cannot be
found stays in error: a client told to sign in with nowhere to do it is worse off.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Generator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

log = logging.getLogger("ahpd.mcp")

#: How long the metadata may take to fetch.
METADATA_TIMEOUT_S = 10.0
#: The most of a metadata document read.
METADATA_LIMIT = 64 * 1024
_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')

TokenFor = Callable[[str], "str | None"]


class ResourceBearer(httpx2.Auth):
    """Adds the bearer token pushed for the server's protected resource to each request, once
    that resource is known (learned from the server's first challenge)."""

    def __init__(self, token_for: TokenFor) -> None:
        self._token_for = token_for
        #: The protected resource's id, as its metadata names it; None until discovered.
        self.resource: str | None = None
        #: Whether the last request went with a token (a 401 after one is an expiry).
        self.sent_token = False

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, Any, None]:
        token = self._token_for(self.resource) if self.resource is not None else None
        self.sent_token = bool(token)
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        yield request


def challenge_params(header: str | None) -> dict[str, str]:
    """The parameters of a Bearer challenge (resource_metadata, scope, error, ...)."""
    if not header:
        return {}
    scheme, _, rest = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return {}
    return {
        key.lower(): (quoted if quoted is not None and quoted != "" else bare or "").replace(
            '\\"', '"'
        )
        for key, quoted, bare in _PARAM.findall(rest)
    }


def metadata_addresses(server_url: str, challenge: dict[str, str]) -> list[str]:
    """Where the server's protected-resource metadata may be: the challenge's address, else
    the well-known ones (with the server's path, then at its origin), same origin only."""
    parts = urlsplit(server_url)
    origin = (parts.scheme, parts.netloc)
    named = challenge.get("resource_metadata")
    addresses = []
    if named and urlsplit(named)[:2] == origin:
        addresses.append(named)
    path = parts.path.rstrip("/")
    well_known = "/.well-known/oauth-protected-resource"
    if path:
        addresses.append(urlunsplit((*origin, well_known + path, "", "")))
    addresses.append(urlunsplit((*origin, well_known, "", "")))
    return addresses


async def discover(
    server_url: str, challenge_header: str | None, headers: dict[str, str]
) -> dict[str, Any] | None:
    """The server's protected-resource metadata, or None where none can be found or read.
    Only addresses on the server's own origin are asked (a challenge cannot send the host
    to fetch from elsewhere)."""
    challenge = challenge_params(challenge_header)
    async with httpx2.AsyncClient(
        headers={k: v for k, v in headers.items() if k.lower() != "authorization"},
        timeout=METADATA_TIMEOUT_S,
        follow_redirects=False,
    ) as client:
        for address in metadata_addresses(server_url, challenge):
            try:
                response = await client.get(address)
            except httpx2.HTTPError as error:
                log.info("MCP sign-in: %s could not be read: %s", address, error)
                continue
            if response.status_code != 200 or len(response.content) > METADATA_LIMIT:
                continue
            try:
                metadata = response.json()
            except ValueError:
                continue
            if isinstance(metadata, dict) and isinstance(metadata.get("resource"), str):
                return metadata
    return None


def requirement(
    metadata: dict[str, Any], challenge_header: str | None, *, expired: bool
) -> dict[str, Any]:
    """The McpAuthRequirement a person signs in from: why, the resource's record, and the
    scopes the challenge asks for."""
    needed: dict[str, Any] = {"reason": "expired" if expired else "required", "resource": metadata}
    challenge = challenge_params(challenge_header)
    scopes = challenge.get("scope", "").split()
    if challenge.get("error") == "insufficient_scope":
        needed["reason"] = "insufficientScope"
    if scopes:
        needed["requiredScopes"] = scopes
    return needed
