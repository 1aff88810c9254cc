"""JSON-RPC 2.0 framing: one message per text frame, parsed strictly, answered with orjson."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .errors import ErrorCode, ProtocolError
from .limits import params_problem

RequestId = int | str | None


@dataclass(slots=True)
class Incoming:
    """A parsed request (has_id) or notification from a client."""

    id: RequestId
    has_id: bool
    method: str
    params: dict[str, Any]


@dataclass(slots=True)
class Response:
    """A client's answer to a request this host sent it: a result, or an error object."""

    id: RequestId
    result: Any = None
    error: dict[str, Any] | None = None


class FrameError(ProtocolError):
    """A frame that cannot be taken; answered with the id it carried, when it carried one."""

    def __init__(self, code: ErrorCode, message: str, request_id: RequestId = None) -> None:
        super().__init__(code, message)
        self.request_id = request_id


def parse(text: str | bytes) -> Incoming | Response:
    """Parse one client frame: a request or notification, or a client's answer to a request
    of this host's. Raises FrameError naming what is wrong."""
    try:
        message = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise FrameError(ErrorCode.PARSE_ERROR, f"Parse error: {exc}") from None
    if not isinstance(message, dict):
        raise FrameError(ErrorCode.INVALID_REQUEST, "Invalid request: a message must be an object")
    request_id = message.get("id")
    if isinstance(request_id, bool) or not (
        request_id is None or isinstance(request_id, int | str)
    ):
        raise FrameError(
            ErrorCode.INVALID_REQUEST, "Invalid request: id must be a number or a string"
        )
    if message.get("jsonrpc") != "2.0":
        raise FrameError(
            ErrorCode.INVALID_REQUEST, 'Invalid request: jsonrpc must be "2.0"', request_id
        )
    if "method" not in message and ("result" in message or "error" in message):
        error = message.get("error")
        return Response(
            request_id, message.get("result"), error if isinstance(error, dict) else None
        )
    method = message.get("method")
    if not isinstance(method, str) or not method:
        raise FrameError(
            ErrorCode.INVALID_REQUEST, "Invalid request: method must be a string", request_id
        )
    params = message.get("params", {})
    if not isinstance(params, dict):
        raise FrameError(
            ErrorCode.INVALID_PARAMS, "Invalid params: params must be an object", request_id
        )
    # Refused whole, before any of it reaches state: what the wire cannot say again or the
    # store cannot keep (limits.py).
    problem = params_problem(params, text)
    if problem is not None:
        raise FrameError(ErrorCode.INVALID_PARAMS, f"Invalid params: {problem}", request_id)
    return Incoming(request_id, "id" in message, method, params)


def encode(message: Incoming | Response) -> str:
    """A parsed message said again, as `parse` read it. Nothing is dropped: a message is kept
    as the JSON it came as, so keys this host does not model travel on (the protocol's
    round-trip corpus calls this the preserved form)."""
    if isinstance(message, Response):
        if message.error is not None:
            return dumps({"jsonrpc": "2.0", "id": message.id, "error": message.error})
        return result_frame(message.id, message.result)
    if message.has_id:
        return request_frame(message.id, message.method, message.params)
    return notification_frame(message.method, message.params)


def dumps(value: Any) -> str:
    """Serialize once, to the text a frame carries."""
    return orjson.dumps(value).decode()


def result_frame(request_id: RequestId, result: Any) -> str:
    return dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_frame(request_id: RequestId, error: ProtocolError) -> str:
    return dumps({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})


def request_frame(request_id: RequestId, method: str, params: Any) -> str:
    return dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def notification_frame(method: str, params: Any) -> str:
    return dumps({"jsonrpc": "2.0", "method": method, "params": params})
