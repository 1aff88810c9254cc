"""Serving the host with daphne: the connection token checked at the upgrade, and the
listening socket.

Daphne can only refuse a WebSocket upgrade with 403 (ASGI's denial-response extension is not
implemented there), and a client told 403 cannot tell a missing token from a forbidden path.
So the token is checked where the handshake is read, and refused 401 with a bearer challenge;
a web page elsewhere (its Origin, or in no-token mode its Host) is refused 403 before that.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

# daphne.server installs Twisted's asyncio reactor on import; it must come before anything
# imports twisted.internet.reactor.
import daphne.server  # isort: skip
from daphne.server import Server  # isort: skip
from autobahn.twisted.websocket import ConnectionDeny
from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from twisted.internet import reactor, threads

from . import connection_token

log = logging.getLogger("ahpd.connections")


class TokenCheckingWebSocketProtocol(WebSocketProtocol):
    """daphne's WebSocket protocol with the connection token checked at the upgrade."""

    def onConnect(self, request: Any) -> Any:
        if request.path not in ("", "/"):
            raise ConnectionDeny(404, "Not Found")
        # A web page elsewhere is refused before its token is looked at: it learns nothing.
        refused = connection_token.upgrade_refusal(request.headers)
        if refused is not None:
            log.warning("refused a connection from %s: %s", request.peer, refused)
            raise ConnectionDeny(403, "Forbidden")
        token = connection_token.token_from_query(request.params, request.headers)
        if connection_token.admits(token):
            return super().onConnect(request)
        if token is None:
            return self._refuse(request, token)
        # A person's token is admitted too; who it is, is the database's to say.
        decided = threads.deferToThread(connection_token.person_admitted, token)
        decided.addCallback(
            lambda admitted: (
                super(TokenCheckingWebSocketProtocol, self).onConnect(request)
                if admitted
                else self._refuse(request, token)
            )
        )
        return decided

    def _refuse(self, request: Any, token: str | None) -> Any:
        self._challenge = connection_token.challenge(token)
        log.info(
            "refused a connection from %s: %s token",
            request.peer,
            "no" if token is None else "wrong",
        )
        raise ConnectionDeny(401, "Unauthorized")

    def failHandshake(self, reason: str, code: int = 400, responseHeaders: Any = None) -> None:
        headers = list(responseHeaders or [])
        if code == 401:
            headers.append(
                (
                    "WWW-Authenticate",
                    getattr(self, "_challenge", connection_token.CHALLENGE_MISSING),
                )
            )
        headers.append(("Access-Control-Allow-Origin", "*"))
        headers.append(("Content-Length", "0"))
        super().failHandshake(reason, code, headers)


class TokenCheckingWebSocketFactory(WebSocketFactory):
    """daphne's factory, with a connection failed by a close frame rather than a drop.

    autobahn fails a connection (a message over the size limit, a protocol error, bad UTF-8)
    by dropping its TCP connection unless told otherwise; then a client cannot tell a frame
    too big (1009) from a network fault, and retries the same frame.
    """

    protocol = TokenCheckingWebSocketProtocol

    def resetProtocolOptions(self) -> None:
        super().resetProtocolOptions()
        self.failByDrop = False


class AhpdServer(Server):
    """daphne's server, keeping why it could not listen (daphne logs it and exits 0)."""

    listen_failure: BaseException | None = None

    def listen_error(self, failure: Any) -> None:
        error = failure.value
        self.listen_failure = getattr(error, "socketError", None) or error
        self.stop()


def reactor_loop() -> asyncio.AbstractEventLoop:
    """The asyncio loop daphne's reactor runs, which daphne installed as this module was
    imported: the engine must live on it, since consumers and views reach it from there."""
    loop: asyncio.AbstractEventLoop = reactor._asyncioEventloop
    return loop


def build_server(
    application: Any, host: str, port: int, ready: Callable[[Server], None], max_frame_bytes: int
) -> AhpdServer:
    # daphne makes its factory by this name as it runs.
    daphne.server.WebSocketFactory = TokenCheckingWebSocketFactory  # type: ignore[misc]
    interface = host.strip("[]").replace(":", r"\:")
    server: AhpdServer
    server = AhpdServer(
        application=application,
        endpoints=[f"tcp:port={port}:interface={interface}"],
        # serve stops on SIGTERM and SIGINT itself, the engine before the reactor.
        signal_handlers=False,
        verbosity=1,
        websocket_handshake_timeout=10,
        # A message over it (inflated, if compressed) is closed 1009; daphne's default 1 MiB
        # is below what a client may send (an attachment, a file written).
        websocket_max_message_size=max_frame_bytes,
        websocket_max_frame_size=max_frame_bytes,
        ready_callable=lambda: ready(server),
    )
    return server
