"""Helpers shared by the per-channel reducers.

The reducers work on plain JSON-shaped values (dicts, lists, strings, numbers).
The TypeScript originals distinguish ``undefined`` from ``null``; on the wire
both end up as "no value", so here a key whose value would be ``None`` is left
out of the dicts the reducers build (see :func:`assign`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]
"""A JSON object as the reducers receive and return it."""

Action: TypeAlias = Mapping[str, Any]
"""A state action: a JSON object discriminated by its ``type`` key."""

Reducer: TypeAlias = Callable[..., Any]
"""Signature of every ``reduce_<kind>(state, action, *, now_ms)`` function."""

# ─── SessionStatus bit set (shared by sessions and chats) ────────────────────

STATUS_IDLE = 1
STATUS_ERROR = 2
STATUS_IN_PROGRESS = 8
STATUS_INPUT_NEEDED = 24  # InProgress | 16: input-needed implies in-progress
STATUS_IS_READ = 32
STATUS_IS_ARCHIVED = 64

#: Bits 0–4 hold the mutually exclusive activity; higher bits are flags
#: (IsRead, IsArchived) that survive every activity change.
STATUS_ACTIVITY_MASK = (1 << 5) - 1


def status_of(state: Mapping[str, Any]) -> int:
    """Return ``state["status"]`` as an int, treating a missing value as 0."""
    value = state.get("status")
    return value if isinstance(value, int) else 0


def with_status_flag(status: int, flag: int, on: bool) -> int:
    """Set (``on``) or clear a flag bit of a status value."""
    return status | flag if on else status & ~flag


def with_activity(status: int, activity: int) -> int:
    """Replace the activity bits of ``status``, keeping its orthogonal flags."""
    return (status & ~STATUS_ACTIVITY_MASK) | activity


# ─── Timestamps ──────────────────────────────────────────────────────────────

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_from_ms(epoch_ms: float) -> str:
    """Format epoch milliseconds like JavaScript's ``Date.prototype.toISOString``.

    Always UTC, always three fractional digits, always a trailing ``Z``.
    """
    moment = _EPOCH + timedelta(milliseconds=math.trunc(epoch_ms))
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_timestamp_ms(value: Any) -> int | None:
    """Parse an ISO 8601 timestamp into epoch milliseconds, or ``None``.

    Offsets are honoured; a timestamp without one is read as UTC so the result
    does not depend on the machine's time zone (JavaScript would use local time).
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - _EPOCH
    # Integer arithmetic: JavaScript Dates hold whole milliseconds, so any
    # sub-millisecond digits are dropped rather than rounded.
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def add_ms_to_timestamp(value: Any, duration_ms: float, *, fallback_ms: int) -> str:
    """Return ``value + duration_ms`` as a canonical UTC ISO string.

    Mirrors the protocol's ``addMillisecondsToTimestamp`` (which normalises any
    offset to ``Z``). Where the TypeScript would throw on an unparseable
    timestamp, this falls back to ``fallback_ms`` so a reducer never raises.
    """
    base = parse_timestamp_ms(value)
    if base is None:
        return iso_from_ms(fallback_ms)
    try:
        return iso_from_ms(base + duration_ms)
    except OverflowError:
        return iso_from_ms(fallback_ms)


# ─── Immutable dict / list helpers ───────────────────────────────────────────


def assign(obj: Mapping[str, Any], changes: Mapping[str, Any]) -> JsonObject:
    """Return a shallow copy of ``obj`` with ``changes`` applied.

    A change whose value is ``None`` deletes the key: this is how the
    TypeScript ``{ ...state, field: undefined }`` looks once serialised.
    """
    result = dict(obj)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def without(obj: Mapping[str, Any], *keys: str) -> JsonObject:
    """Return a shallow copy of ``obj`` without ``keys``."""
    return {key: value for key, value in obj.items() if key not in keys}


def compact(**fields: Any) -> JsonObject:
    """Build a dict from keyword fields, leaving out the ``None`` ones."""
    return {key: value for key, value in fields.items() if value is not None}


def pick(obj: Mapping[str, Any], *keys: str) -> JsonObject:
    """The ``keys`` of ``obj`` whose values are set, in the order named."""
    return {key: obj[key] for key in keys if obj.get(key) is not None}


def as_object(value: Any) -> JsonObject | None:
    """Return ``value`` if it is a JSON object, else ``None``."""
    return value if isinstance(value, dict) else None


def as_list(value: Any) -> list[Any]:
    """Return ``value`` if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def find_index(items: Sequence[Any], predicate: Callable[[Any], bool]) -> int:
    """Index of the first item matching ``predicate``, or -1."""
    for index, item in enumerate(items):
        if predicate(item):
            return index
    return -1


def key_equals(key: str, value: Any) -> Callable[[Any], bool]:
    """Predicate: the item is an object whose ``key`` equals ``value``."""
    return lambda item: isinstance(item, dict) and item.get(key) == value


def upsert(items: Sequence[Any], item: Any, key: str) -> list[Any]:
    """Replace the entry whose ``key`` matches ``item[key]`` in place, else append."""
    index = find_index(items, key_equals(key, item.get(key) if isinstance(item, dict) else None))
    result = list(items)
    if index < 0:
        result.append(item)
    else:
        result[index] = item
    return result


def remove_at(items: Sequence[Any], index: int) -> list[Any]:
    """Return a copy of ``items`` without the entry at ``index``."""
    return [item for position, item in enumerate(items) if position != index]


def replace_at(items: Sequence[Any], index: int, item: Any) -> list[Any]:
    """Return a copy of ``items`` with the entry at ``index`` replaced."""
    result = list(items)
    result[index] = item
    return result


# ─── Keyed lists of objects on a state ───────────────────────────────────────
#
# Many states hold a list of objects keyed by one of their fields (chats by
# ``resource``, files by ``id``, ...). These return ``state`` itself whenever
# nothing changes, so a no-op action leaves the state identical.


def with_item_set(state: JsonObject, field: str, item: Any, key: str) -> JsonObject:
    """``state[field]`` with ``item`` replacing the entry of the same ``key``, else appended.

    An ``item`` that is not an object changes nothing.
    """
    if not isinstance(item, dict):
        return state
    return {**state, field: upsert(as_list(state.get(field)), item, key)}


def with_item_removed(state: JsonObject, field: str, key: str, value: Any) -> JsonObject:
    """``state[field]`` without the first entry whose ``key`` is ``value``, if there is one."""
    items = as_list(state.get(field))
    index = find_index(items, key_equals(key, value))
    if index < 0:
        return state
    return {**state, field: remove_at(items, index)}


def with_item_changed(
    state: JsonObject,
    field: str,
    key: str,
    value: Any,
    change: Callable[[JsonObject], JsonObject],
) -> JsonObject:
    """``state[field]`` with its first entry whose ``key`` is ``value`` replaced by ``change``.

    An unknown ``value``, or ``change`` returning the entry itself, leaves ``state`` as is.
    """
    items = as_list(state.get(field))
    index = find_index(items, key_equals(key, value))
    if index < 0:
        return state
    updated = change(items[index])
    if updated is items[index]:
        return state
    return {**state, field: replace_at(items, index, updated)}
