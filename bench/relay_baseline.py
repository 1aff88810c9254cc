"""The baseline for bench/turn.py: the same model stream relayed with nothing added.

Subscribers connect; a message `go <prompt>` from any client makes it stream one chat completion
from the model endpoint (with the `openai` package, as the host does) and broadcast every delta
as an envelope-shaped frame, serialized once, to every subscriber; then `{"done": true}`.
No sessions, no state, no coalescing, no replay, no bounds.
"""

from __future__ import annotations

import asyncio
import sys

import orjson
from openai import AsyncOpenAI
from websockets.asyncio.server import broadcast, serve
from websockets.exceptions import ConnectionClosed


async def main(base_url: str) -> None:
    clients: set = set()
    model = AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0)
    seq = 0

    async def relay(prompt: str) -> None:
        nonlocal seq
        stream = await model.chat.completions.create(
            model="fake", messages=[{"role": "user", "content": prompt}], stream=True
        )
        async for chunk in stream:
            if not chunk.choices or not chunk.choices[0].delta.content:
                continue
            seq += 1
            envelope = {
                "channel": "ahp-chat:/baseline",
                "action": {
                    "type": "chat/delta",
                    "turnId": "t",
                    "partId": "p",
                    "content": chunk.choices[0].delta.content,
                },
                "serverSeq": seq,
            }
            broadcast(
                clients,
                orjson.dumps({"jsonrpc": "2.0", "method": "action", "params": envelope}).decode(),
            )
        broadcast(clients, '{"done": true}')

    async def handler(ws) -> None:
        clients.add(ws)
        try:
            async for text in ws:
                if isinstance(text, str) and text.startswith("go "):
                    asyncio.create_task(relay(text[3:]))
        except ConnectionClosed:
            pass  # the bench drops its listeners without a closing handshake
        finally:
            clients.discard(ws)

    async with serve(handler, "127.0.0.1", 0, max_size=None, ping_interval=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"baseline serving ws://127.0.0.1:{port}/", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1]))
    except KeyboardInterrupt:
        sys.exit(0)
