"""What the wire and the store can carry, checked once for every client frame before anything
it holds reaches state.

A value the host takes is said again inside bigger frames (an envelope, a snapshot, a
reconnect's replay) and kept in the database, so a frame is refused whole, -32602 naming the
path of what cannot be said or kept, when it holds:

- containers nested deeper than `MAX_DEPTH` (orjson parses 1,024 levels and serializes 254:
  a value taken at 300 would make every later snapshot of its channel unsayable);
- a NUL character (U+0000) in a string or a key, which PostgreSQL cannot keep in text or jsonb
  (refused on SQLite too, so both stores hold the same);
- a `_meta` that is not an object (every `_meta` the protocol declares is one).

Non-finite numbers never get this far (orjson refuses NaN and Infinity when it parses), and a
number that must be an integer is held to `MAX_SAFE_INTEGER` where it is read
(validation.required_int). Sizes the store's columns bound are `MAX_URI_LENGTH` and
`MAX_ID_LENGTH`, checked where such a value is read. A frame's size is bounded at the socket
(AHPD_MAX_FRAME_BYTES).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

#: Containers a client's params may nest (the params object itself is level 1). What a client
#: sends is said again at most ten levels deeper, far below what orjson serializes (254).
MAX_DEPTH = 64

#: The largest integer a number that must be one may be (JavaScript's Number.MAX_SAFE_INTEGER:
#: what every client can hold exactly, and far inside what orjson serializes).
MAX_SAFE_INTEGER = 2**53 - 1

#: A session's or a chat's URI, as the store keeps it (a 512-character key).
MAX_URI_LENGTH = 512
#: A turn's id, as the store keeps it.
MAX_ID_LENGTH = 256

_NUL_ESCAPE = "\\u0000"


def figure_problem(value: Any, most: Decimal) -> str | None:
    """Why `value` is no figure a row may keep (a policy's amount, a price): what is wrong
    with it, for the caller to name the field, or None for a finite number from 0 to `most`.
    JSON as Python reads it takes NaN, Infinity and 1e400 (infinity), which no decimal can
    compare and no column keep."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return f"must be a number, 0 or more, not {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, not {value!r}"
    if value < 0:
        return f"must be a number, 0 or more, not {value!r}"
    # An int is compared before anything writes it out: Python refuses to spell a huge one.
    if value > most:
        return f"is more than {most}, the most it can be"
    return None


def params_problem(params: dict[str, Any], text: str | bytes) -> str | None:
    """Why a frame's params cannot be taken (the path of what is wrong), or None.

    `text` is the frame they were parsed from: JSON writes a NUL only as the escape \\u0000,
    so a frame without one is not walked for it.
    """
    raw = text if isinstance(text, str) else text.decode(errors="replace")
    return _problem(params, "params", 1, _NUL_ESCAPE in raw)


def _problem(value: Any, path: str, depth: int, nul: bool) -> str | None:
    if depth > MAX_DEPTH:
        return f"{path} nests deeper than {MAX_DEPTH} levels"
    if isinstance(value, dict):
        for key, item in value.items():
            if nul and "\x00" in key:
                return f"{path} has a key with a NUL character (U+0000)"
            where = f"{path}.{key}"
            if key == "_meta" and not isinstance(item, dict):
                return f"{where} must be an object"
            if isinstance(item, dict | list):
                reason = _problem(item, where, depth + 1, nul)
            elif nul and isinstance(item, str) and "\x00" in item:
                reason = f"{where} holds a NUL character (U+0000)"
            else:
                continue
            if reason is not None:
                return reason
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                reason = _problem(item, f"{path}[{index}]", depth + 1, nul)
            elif nul and isinstance(item, str) and "\x00" in item:
                reason = f"{path}[{index}] holds a NUL character (U+0000)"
            else:
                continue
            if reason is not None:
                return reason
    return None


def sayable_problem(value: Any, path: str) -> str | None:
    """Why a value from elsewhere (the store, another process) cannot be held, or None: the
    same rule a client's frame is held to, applied from depth 1."""
    return _problem(value, path, 1, True)
