"""Typed readers for command params: each bad value is refused -32602 naming its field."""

from __future__ import annotations

from typing import Any

from ...protocol.errors import invalid_params


def required_str(params: dict[str, Any], method: str, name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str):
        raise invalid_params(f"{method}: {name} must be a string")
    return value


def optional_str_list(params: dict[str, Any], method: str, name: str) -> list[str]:
    value = params.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_params(f"{method}: {name} must be a list of URI strings")
    return value


def required_str_list(params: dict[str, Any], method: str, name: str) -> list[str]:
    if name not in params:
        raise invalid_params(f"{method}: {name} is required")
    return optional_str_list(params, method, name)


def required_int(params: dict[str, Any], method: str, name: str) -> int:
    value = params.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise invalid_params(f"{method}: {name} must be an integer")
    return int(value)
