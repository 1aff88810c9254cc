"""The address clients are told to connect to, wherever it is printed or minted.

`AHPD_PUBLIC_URL` when the operator gives one (behind a proxy, a port mapping, a container);
else the address the server listens on, a wildcard bind (0.0.0.0, ::) shown as loopback, the
one address of it that surely reaches the machine the server runs on. Asked with no address
(a token minted by the API or a management command), that is the running server's, as it
wrote it down at start (control.py): AHPD_PORT=0 has a port only once the server listens.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from django.conf import settings

from . import control
from .control import WILDCARDS


def public_base(bound_host: str | None = None, bound_port: int | None = None) -> str:
    """`ws://host:port/` (or the public URL, ending in a slash)."""
    public: str | None = settings.AHPD_PUBLIC_URL
    if public:
        return public if public.endswith("/") else public + "/"
    if bound_host is None and bound_port is None and (serving := control.running()):
        return serving.public
    host = str(bound_host if bound_host is not None else settings.AHPD_HOST)
    port = bound_port if bound_port is not None else settings.AHPD_PORT
    if host in WILDCARDS:
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"ws://{shown}:{port}/"


def with_token(base: str, secret: str | None) -> str:
    """The URL a client connects to with this token (`?tkn=`); the bare URL for none."""
    return base + f"?tkn={quote(secret, safe='')}" if secret else base


def vscode_address(base: str) -> str:
    """What VS Code's `chat.remoteAgentHosts` takes as `address`: the URL's host and port."""
    return urlsplit(base).netloc
