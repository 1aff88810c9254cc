"""Which pages may open the socket: the upgrade's Origin and Host rules (pure, no Django).

A browser lets any web page open a WebSocket to any address, carrying the page's Origin, so
the token alone does not keep a page elsewhere out once it has the token (and without a
token, nothing would). Editors and scripts send no Origin, and VS Code's own windows and
webviews send non-web ones (`vscode-file://`, `vscode-webview://`): those are no web page.
A web (http or https) origin is let in only when it is this server itself (its host and port
are the Host the request came with), a loopback name, or one the operator allowed. Without a
token, the Host must be a loopback name too: a page whose own name was rebound to 127.0.0.1
(DNS rebinding) sends its own name as Host.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection
from urllib.parse import urlsplit

#: (scheme, host, port): a web origin with its port made explicit, the host lower-cased.
WebOrigin = tuple[str, str, int]

DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """localhost, 127.0.0.0/8 or ::1 (bracketed or not); a host name, no port."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def split_host(header: str) -> tuple[str, int | None]:
    """A Host header's name (lower-cased, brackets gone) and port; ValueError if malformed."""
    parts = urlsplit("//" + header.strip())
    name = parts.hostname
    if not name or parts.path or parts.query or parts.fragment or parts.username is not None:
        raise ValueError(f"not a host: {header!r}")
    return name, parts.port


def web_origin(text: str) -> WebOrigin | None:
    """The http(s) origin `text` names; None for a non-web scheme (`vscode-file://...`).

    ValueError for what is no origin at all, `null` (an opaque origin: a sandboxed frame or a
    file page) included, and for an http(s) URL with more than scheme, host and port.
    """
    scheme, sep, _ = text.partition("://")
    if not sep or not scheme:
        raise ValueError(f"not an origin: {text!r}")
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS:
        return None
    parts = urlsplit(text.strip())
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"not an origin: {text!r}") from None
    if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"not an origin: {text!r}")
    if parts.username is not None:
        raise ValueError(f"not an origin: {text!r}")
    return scheme, parts.hostname, port if port is not None else DEFAULT_PORTS[scheme]


def parse_allowed(raw: str) -> frozenset[WebOrigin]:
    """AHPD_ALLOWED_ORIGINS: comma-separated http(s) origins; ValueError naming a bad one."""
    allowed: set[WebOrigin] = set()
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        try:
            origin = web_origin(item)
        except ValueError:
            origin = None
        if origin is None:
            raise ValueError(
                f"{item!r} is not an http(s) origin (scheme://host[:port]); non-web origins "
                "need no allowing"
            )
        allowed.add(origin)
    return frozenset(allowed)


def refusal(
    origin: str | None,
    host: str | None,
    *,
    allowed: Collection[WebOrigin],
    loopback_only: bool,
) -> str | None:
    """Why an upgrade with this Origin and Host header is refused, or None to let it in."""
    try:
        host_name, host_port = split_host(host) if host is not None else (None, None)
    except ValueError:
        host_name = host_port = None
    if loopback_only and (host_name is None or not is_loopback(host_name)):
        return f"Host {host!r} is not a loopback name, and there is no connection token"
    if origin is None:
        return None
    try:
        parsed = web_origin(origin)
    except ValueError:
        return f"Origin {origin!r} is a web page's and not this server's"
    if parsed is None:
        return None
    scheme, origin_host, origin_port = parsed
    if is_loopback(origin_host) or parsed in allowed:
        return None
    if host_name == origin_host and (host_port or DEFAULT_PORTS[scheme]) == origin_port:
        return None
    return f"Origin {origin!r} is not this server's (Host {host!r}) nor in AHPD_ALLOWED_ORIGINS"
