"""A bare WebSocket client for the benchmarks, so the clients cost as little as they can.

With dozens of subscribers in one process, a full client library spends more time per frame
than the servers under test do, and the figures would measure the clients. This one does the
upgrade, sends (masked) text frames, and parses unmasked server frames by hand.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import struct
import time
from collections.abc import Callable
from urllib.parse import urlsplit


class RawSocket(asyncio.Protocol):
    """Calls `on_message(payload, arrival)` for every text frame, in order; answers pings."""

    def __init__(self, on_message: Callable[[bytes, float], None]) -> None:
        self.on_message = on_message
        self.buffer = bytearray()
        self.upgraded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    @classmethod
    async def open(cls, url: str, on_message: Callable[[bytes, float], None]) -> RawSocket:
        parts = urlsplit(url)
        loop = asyncio.get_running_loop()
        _, sock = await loop.create_connection(lambda: cls(on_message), parts.hostname, parts.port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        key = base64.b64encode(os.urandom(16)).decode()
        assert sock.transport is not None
        sock.transport.write(
            (
                f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        await sock.upgraded
        return sock

    def send_text(self, text: str) -> None:
        self._send(0x81, text.encode())

    def _send(self, head_byte: int, payload: bytes) -> None:
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        n = len(payload)
        if n < 126:
            head = bytes((head_byte, 0x80 | n))
        elif n < 1 << 16:
            head = struct.pack("!BBH", head_byte, 0xFE, n)
        else:
            head = struct.pack("!BBQ", head_byte, 0xFF, n)
        assert self.transport is not None
        self.transport.write(head + mask + masked)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        buf = self.buffer
        buf += data
        if not self.upgraded.done():
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            if not buf.startswith(b"HTTP/1.1 101"):
                self.upgraded.set_exception(RuntimeError(bytes(buf[:end]).decode()))
                return
            del buf[: end + 4]
            self.upgraded.set_result(None)
        while len(buf) >= 2:
            length = buf[1] & 0x7F
            offset = 2
            if length == 126:
                if len(buf) < 4:
                    return
                length, offset = struct.unpack_from("!H", buf, 2)[0], 4
            elif length == 127:
                if len(buf) < 10:
                    return
                length, offset = struct.unpack_from("!Q", buf, 2)[0], 10
            if len(buf) < offset + length:
                return
            opcode = buf[0] & 0x0F
            payload = bytes(buf[offset : offset + length])
            del buf[: offset + length]
            if opcode == 0x9:
                # Daphne pings a connection now and then, and closes one that does not answer:
                # a run longer than its interval would lose every client.
                self._send(0x8A, payload)
            elif opcode in (0x0, 0x1, 0x2):
                self.on_message(payload, now)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.abort()
