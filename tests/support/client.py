"""An AHP client for the end-to-end tests, over a real WebSocket.

Every frame the server sends is validated against the protocol's schemas as it arrives (the
schema check is not a sample: a test that received a bad frame fails), and every state channel
the client subscribed to is tracked by reducing the actions it receives onto the snapshot it
started from, so `assert_conforms` can compare that with a fresh snapshot.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import websockets

from hosts.protocol.reducers import reduce
from tests.schema_check import check_server_frame
from tests.support.server import TOKEN

STATE_KINDS = {
    "ahp-root": "root",
    "ahp-session": "session",
    "ahp-chat": "chat",
    "ahp-terminal": "terminal",
    "ahp-automations": "automation",
    "ahp-automation-run": "automationRun",
}


def state_kind(uri: str) -> str | None:
    """The kind of state a channel holds: a changeset nested under its session's URI is a
    changeset's, whatever the session's scheme; else its scheme says."""
    if "/changeset/" in uri:
        return "changeset"
    if uri.endswith("/annotations"):
        return "annotations"
    return STATE_KINDS.get(uri.partition(":")[0])


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error['code']}: {error['message']}")
        self.code: int = error["code"]
        self.message: str = error["message"]
        self.data: Any = error.get("data")


def drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


class Client:
    def __init__(self, ws: websockets.ClientConnection, client_id: str) -> None:
        self.ws = ws
        self.client_id = client_id
        self.frames: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []
        self.notifications: list[tuple[str, dict[str, Any]]] = []
        self.last_seq = 0
        self._ids = itertools.count(1)
        self._seqs = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._arrived = asyncio.Condition()
        self._errors_without_id: list[dict[str, Any]] = []
        #: Frames that failed the schema check; a client fixture fails its test on any.
        self.schema_failures: list[str] = []
        # channel -> [state, fromSeq] for conformance
        self.tracked: dict[str, list[Any]] = {}
        #: What answers the host's own requests to this client (its files); None: -32601.
        self.serves: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None
        #: The host's requests to this client, as asked: (method, params).
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        client_id: str | None = None,
        token: str | None = TOKEN,
        headers: dict[str, str] | None = None,
    ) -> Client:
        base = url.split("?", 1)[0]
        target = base if token is None else f"{base}?tkn={token}"
        ws = await websockets.connect(
            target, additional_headers=headers, max_size=None, ping_interval=None
        )
        return cls(ws, client_id or f"client-{next(_client_numbers)}")

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()

    def assert_schema_clean(self) -> None:
        assert not self.schema_failures, "frames off the protocol's schema:\n" + "\n".join(
            self.schema_failures
        )

    # -- reading -----------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for text in self.ws:
                frame = orjson.loads(text)
                await self._take(frame)
        except websockets.ConnectionClosed:
            pass
        finally:
            for _, future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("connection closed"))
            async with self._arrived:
                self._arrived.notify_all()

    async def _take(self, frame: dict[str, Any]) -> None:
        request_id = frame.get("id")
        method = self._pending[request_id][0] if request_id in self._pending else None
        try:
            check_server_frame(frame, method)
        except AssertionError as exc:
            self.schema_failures.append(f"{exc}\n  frame: {frame}")
        self.frames.append(frame)
        if "method" in frame and "id" in frame:
            self.asked.append((frame["method"], frame["params"]))
            asyncio.get_running_loop().create_task(self._answer(frame))
        elif "method" in frame:
            params = frame["params"]
            if frame["method"] == "action":
                self.actions.append(params)
                self.last_seq = max(self.last_seq, params["serverSeq"])
                self._track(params)
            else:
                self.notifications.append((frame["method"], params))
        elif request_id in self._pending:
            method, future = self._pending.pop(request_id)
            if "error" in frame:
                future.set_exception(RpcError(frame["error"]))
            else:
                # Taken here, in the order frames came: an action right behind the answer is
                # reduced onto its snapshot, not dropped before the requester wakes.
                self._took(method, frame["result"])
                future.set_result(frame["result"])
        elif "error" in frame:
            self._errors_without_id.append(frame["error"])
        async with self._arrived:
            self._arrived.notify_all()

    async def _answer(self, frame: dict[str, Any]) -> None:
        """Answer a request of the host's, as VS Code's client filesystem would."""
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": frame["id"]}
        try:
            if self.serves is None:
                raise RpcError({"code": -32601, "message": f"Method not found: {frame['method']}"})
            reply["result"] = await self.serves(frame["method"], frame["params"])
        except RpcError as error:
            reply["error"] = {"code": error.code, "message": error.message}
        await self.ws.send(orjson.dumps(reply).decode())

    def _track(self, envelope: dict[str, Any]) -> None:
        entry = self.tracked.get(envelope["channel"])
        if entry is None or "rejectionReason" in envelope or envelope["serverSeq"] <= entry[1]:
            return
        kind = state_kind(envelope["channel"])
        assert kind is not None
        entry[0] = reduce(kind, entry[0], envelope["action"], now_ms=0)

    def _remember_snapshot(self, snapshot: dict[str, Any]) -> None:
        resource = snapshot["resource"]
        if state_kind(resource) is not None:
            self.tracked[resource] = [copy.deepcopy(snapshot["state"]), snapshot["fromSeq"]]

    # -- requests ----------------------------------------------------------------------

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 20
    ) -> Any:
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (method, future)
        await self.send_raw(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        )
        return await asyncio.wait_for(future, timeout)

    def _took(self, method: str, result: Any) -> None:
        """What an answer tells about the channels watched: their snapshots."""
        if method == "initialize":
            for snapshot in result["snapshots"]:
                self._remember_snapshot(snapshot)
            self.last_seq = max(self.last_seq, result["serverSeq"])
        elif method == "subscribe" and result.get("snapshot"):
            self._remember_snapshot(result["snapshot"])
        elif method == "reconnect" and "channels" in result:
            # Per-channel cursors: each channel's own snapshot, or its own replay reduced on.
            for recovery in result["channels"]:
                if recovery["kind"] == "snapshot":
                    self._remember_snapshot(recovery["snapshot"])
                elif recovery["kind"] == "replay":
                    for envelope in recovery["actions"]:
                        self._track(envelope)
        elif method == "reconnect" and result["type"] == "snapshot":
            for snapshot in result["snapshots"]:
                self._remember_snapshot(snapshot)

    async def send_raw(self, message: Any) -> None:
        await self.ws.send(
            orjson.dumps(message).decode() if not isinstance(message, str | bytes) else message
        )

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send_raw({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(
        self,
        versions: list[str] | None = None,
        subscriptions: list[str] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        params = {
            "channel": "ahp-root://",
            "protocolVersions": versions or ["1.0.0"],
            "clientId": self.client_id,
            "clientInfo": {"name": "ahpd-tests", "version": "1"},
            "initialSubscriptions": subscriptions if subscriptions is not None else ["ahp-root://"],
            **extra,
        }
        result: dict[str, Any] = await self.request("initialize", params)
        return result

    async def dispatch(self, channel: str, action: dict[str, Any]) -> int:
        seq = next(self._seqs)
        await self.notify(
            "dispatchAction", {"channel": channel, "clientSeq": seq, "action": action}
        )
        return seq

    async def dispatch_and_wait(
        self, channel: str, action: dict[str, Any], timeout: float = 10
    ) -> dict[str, Any]:
        """Dispatch and return the envelope that answers it (its echo or its refusal)."""
        seq = await self.dispatch(channel, action)
        return await self.wait_action(
            lambda e: (
                (e.get("origin") or {}).get("clientSeq") == seq
                and e["origin"]["clientId"] == self.client_id
            ),
            timeout,
        )

    # -- waiting -----------------------------------------------------------------------

    async def wait_for(self, found: Callable[[], Any], timeout: float = 10) -> Any:
        async def wait() -> Any:
            async with self._arrived:
                while True:
                    value = found()
                    if value:
                        return value
                    if self._reader.done():
                        raise ConnectionError("connection closed while waiting")
                    await self._arrived.wait()

        return await asyncio.wait_for(wait(), timeout)

    async def wait_action(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10
    ) -> dict[str, Any]:
        return await self.wait_for(
            lambda: next((a for a in self.actions if predicate(a)), None), timeout
        )

    async def wait_error_without_id(self, timeout: float = 10) -> dict[str, Any]:
        return await self.wait_for(
            lambda: self._errors_without_id[-1] if self._errors_without_id else None, timeout
        )

    async def settle(self) -> None:
        """Round-trip a ping: every frame the server sent before its answer has arrived."""
        await self.request("ping", {"channel": "ahp-root://"})

    @property
    def closed(self) -> bool:
        return self._reader.done()

    # -- conformance -------------------------------------------------------------------

    async def assert_conforms(self, channel: str) -> None:
        """The tracked state (snapshot + every action since) equals a fresh snapshot."""
        await self.settle()
        tracked = self.tracked[channel][0]
        result = await self.request("subscribe", {"channel": channel})
        fresh = result["snapshot"]["state"]
        assert drop_nulls(tracked) == drop_nulls(fresh)


_client_numbers = itertools.count(1)
