"""The baseline for bench/fanout.py: the least a WebSocket broadcast server can do.

It takes a dispatched action, stamps a serverSeq and origin, serializes the envelope once and
hands it to every subscriber with `websockets.broadcast` (a connection whose `initialize` named
any initialSubscriptions; a request with an id is answered `{"result": null}`). No validation, no
state, no replay, no bounds: what is left of ahpd's delivery path with everything ahpd adds taken
away. bench/broadcast_node.js does the same with Node's `ws`.
"""

from __future__ import annotations

import asyncio
import sys

import orjson
from websockets.asyncio.server import broadcast, serve
from websockets.exceptions import ConnectionClosed


async def main() -> None:
    subscribers: set = set()
    seq = 0

    async def handler(ws) -> None:
        nonlocal seq
        try:
            async for text in ws:
                message = orjson.loads(text)
                method = message.get("method")
                if method != "dispatchAction":
                    if method == "initialize" and message["params"].get("initialSubscriptions"):
                        subscribers.add(ws)
                    if "id" in message:
                        await ws.send(
                            orjson.dumps(
                                {"jsonrpc": "2.0", "id": message["id"], "result": None}
                            ).decode()
                        )
                    continue
                params = message["params"]
                seq += 1
                envelope = {
                    "channel": params["channel"],
                    "action": params["action"],
                    "serverSeq": seq,
                    "origin": {"clientId": "sender", "clientSeq": params["clientSeq"]},
                }
                frame = orjson.dumps({"jsonrpc": "2.0", "method": "action", "params": envelope})
                broadcast(subscribers, frame.decode())
        except ConnectionClosed:
            pass  # the bench drops its subscribers without a closing handshake
        finally:
            subscribers.discard(ws)

    async with serve(handler, "127.0.0.1", 0, max_size=None, ping_interval=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"baseline serving ws://127.0.0.1:{port}/", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
