"""JSON-RPC and AHP error codes, and the exception a handler raises to answer with one."""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SESSION_NOT_FOUND = -32001
    PROVIDER_NOT_FOUND = -32002
    SESSION_ALREADY_EXISTS = -32003
    TURN_IN_PROGRESS = -32004
    UNSUPPORTED_PROTOCOL_VERSION = -32005
    AUTH_REQUIRED = -32007
    NOT_FOUND = -32008
    PERMISSION_DENIED = -32009
    ALREADY_EXISTS = -32010
    CONFLICT = -32011


class ProtocolError(Exception):
    """Raised by a command handler; becomes a JSON-RPC error response."""

    def __init__(self, code: ErrorCode, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": int(self.code), "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def invalid_params(message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID_PARAMS, message)
