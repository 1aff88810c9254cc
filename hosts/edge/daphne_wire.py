"""Writing WebSocket frames straight to the socket under daphne: the fan-out's hot path.

Through ASGI each message costs daphne's reply dispatch, autobahn's framing and Twisted's
buffered write, which registers the socket with the reactor and sends on the next turn: three
system calls and some hundred microseconds per subscriber per envelope, measured in
bench/fanout.py. A server-to-client text frame is a two-to-ten byte header and the payload, so
this writes it itself, straight to the socket, whenever Twisted holds nothing unsent for it (so
order is kept); what the socket does not take goes to Twisted's buffer as before. Anything that
is not plainly an open, uncompressed, plain-TCP autobahn connection is left to ASGI.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

_OPEN = 3  # autobahn's WebSocketProtocol.STATE_OPEN
_TEXT_FIN = 0x81


def frame_header(length: int) -> bytes:
    if length < 126:
        return bytes((_TEXT_FIN, length))
    if length < 1 << 16:
        return struct.pack("!BBH", _TEXT_FIN, 126, length)
    return struct.pack("!BBQ", _TEXT_FIN, 127, length)


#: What the encoded-frame cache holds at most, in bytes (a frame past it: see EncodedFrames).
FRAME_CACHE_BYTES = 4 * 1024 * 1024
#: And in frames.
FRAME_CACHE_COUNT = 256


class EncodedFrames:
    """Encodes each frame's text once for every subscriber it goes to.

    The engine hands the same str object to every subscriber in one pass, so frames are found
    by identity (the text is held with its bytes, so an id is never reused while cached). What
    is held is bounded, oldest out first, by `max_bytes` and `max_count`: a frame is wanted
    again only within the pass that fans it out, and a cache bounded by count alone held the
    last 256 answers and snapshots whatever they weighed (hundreds of MiB past clientQueueBytes
    and replayBytes, never given back). A frame bigger than `max_bytes` is held alone, until
    the loop's current pass is over.
    """

    def __init__(
        self, max_bytes: int = FRAME_CACHE_BYTES, max_count: int = FRAME_CACHE_COUNT
    ) -> None:
        self._cache: dict[int, tuple[str, bytes]] = {}
        self._bytes = 0
        self._max_bytes = max_bytes
        self._max_count = max_count
        self._large: tuple[str, bytes] | None = None

    @property
    def held_bytes(self) -> int:
        """What is held now: each frame's bytes and its text."""
        large = self._large
        return self._bytes + (len(large[0]) + len(large[1]) if large is not None else 0)

    def frame(self, text: str) -> bytes:
        hit = self._cache.get(id(text))
        if hit is not None and hit[0] is text:
            return hit[1]
        large = self._large
        if large is not None and large[0] is text:
            return large[1]
        payload = text.encode()
        data = frame_header(len(payload)) + payload
        # The text is held with its bytes (the engine may have let it go), so both count.
        size = len(data) + len(text)
        if size > self._max_bytes:
            self._hold_for_this_pass(text, data)
            return data
        cache = self._cache
        cache[id(text)] = (text, data)
        self._bytes += size
        while self._bytes > self._max_bytes or len(cache) > self._max_count:
            # Oldest first: a dict keeps insertion order.
            oldest = next(iter(cache))
            gone_text, gone = cache.pop(oldest)
            self._bytes -= len(gone) + len(gone_text)
        return data

    def _hold_for_this_pass(self, text: str, data: bytes) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no pass to hold it for
        if self._large is None:
            loop.call_soon(self._let_large_go)
        self._large = (text, data)

    def _let_large_go(self) -> None:
        self._large = None


FRAMES = EncodedFrames()


class DaphneWire:
    """The socket behind one daphne WebSocket connection, or unusable (`usable` False)."""

    __slots__ = ("protocol", "tcp", "sock")

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        tcp = getattr(protocol, "transport", None)
        sock = getattr(tcp, "socket", None)
        usable = (
            isinstance(sock, socket.socket)
            and hasattr(tcp, "_tempDataLen")
            and not getattr(tcp, "TLS", False)
            and getattr(protocol, "_perMessageCompress", None) is None
        )
        self.tcp = tcp if usable else None
        self.sock = sock if usable else None
        if self.sock is not None:
            # Frames are small and each one is wanted now: Nagle's algorithm would hold one
            # back behind the last until the client's delayed ACK, tens of milliseconds.
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def usable(self) -> bool:
        return self.sock is not None

    def held(self) -> int:
        """Bytes Twisted holds unsent for this socket."""
        tcp = self.tcp
        if tcp is None:
            return 0
        return len(tcp.dataBuffer) - tcp.offset + tcp._tempDataLen

    def forget_unsent(self) -> None:
        """The connection is gone: drop what Twisted still holds for it. A closed transport
        sits in a reference cycle with its protocol until the collector's next full pass,
        and with it everything a slow reader was owed (up to clientQueueBytes each)."""
        tcp = self.tcp
        if tcp is None:
            return
        tcp.dataBuffer = b""
        tcp.offset = 0
        tcp._tempDataBuffer = []
        tcp._tempDataLen = 0

    @property
    def open(self) -> bool:
        """Whether `write` writes now (the connection is open)."""
        tcp = self.tcp
        return (
            tcp is not None
            and self.sock is not None
            and self.protocol.state == _OPEN
            and not tcp.disconnecting
        )

    def write(self, data: bytes) -> bool:
        """Write whole frames; False when the connection is not open (nothing written)."""
        tcp, sock = self.tcp, self.sock
        if tcp is None or sock is None or self.protocol.state != _OPEN or tcp.disconnecting:
            return False
        if self.held():
            tcp.write(data)
            return True
        try:
            sent = sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            # The reactor will see the broken socket on its own and close the connection.
            return True
        if sent < len(data):
            tcp.write(data[sent:])
        return True
