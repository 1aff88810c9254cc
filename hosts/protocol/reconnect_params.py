"""reconnect's params, in either of the shapes a client sends them.

AHP 1.0.0 names one connection-wide `lastSeenServerSeq` beside `subscriptions: URI[]`. The
protocol's change `20261002-per-channel-replay-cursors` gives each subscription its own cursor
instead, `subscriptions: ChannelReplayCursor[]` (`{channel, lastSeenServerSeq}`), answered with
`channels: ChannelRecovery[]`: a fast channel's progress can no longer skip a slower one's
undelivered actions. Both are read here, and refused -32602 naming what is wrong before anything
reaches state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import invalid_params
from .limits import MAX_SAFE_INTEGER
from .validation import required_int, required_str

_SHAPES = (
    "a list of URI strings beside lastSeenServerSeq, "
    "or a list of {channel, lastSeenServerSeq} cursors"
)


@dataclass(frozen=True, slots=True)
class ReplayCursor:
    """One channel's checkpoint: the serverSeq the client last applied on it (0 for none)."""

    channel: str
    last_seen: int


@dataclass(frozen=True, slots=True)
class ReconnectRequest:
    client_id: str
    #: The channels named, in the order the client named them.
    channels: tuple[str, ...]
    #: AHP 1.0.0's connection-wide watermark; None when each channel has its own cursor.
    last_seen: int | None
    #: The per-channel cursors, in `channels`' order; None in AHP 1.0.0's shape.
    cursors: tuple[ReplayCursor, ...] | None


def _cursor(entry: Mapping[str, Any], index: int) -> ReplayCursor:
    where = f"reconnect: subscriptions[{index}]"
    channel = entry.get("channel")
    if not isinstance(channel, str) or not channel:
        raise invalid_params(f"{where}.channel must be a channel URI string")
    last_seen = entry.get("lastSeenServerSeq")
    if (
        isinstance(last_seen, bool)
        or not isinstance(last_seen, int | float)
        or not 0 <= last_seen <= MAX_SAFE_INTEGER
        or last_seen != int(last_seen)
    ):
        raise invalid_params(
            f"{where}.lastSeenServerSeq must be an integer from 0 to 2^53 - 1 "
            "(0 for a channel with no baseline yet)"
        )
    return ReplayCursor(channel, int(last_seen))


def parse_reconnect(params: Mapping[str, Any]) -> ReconnectRequest:
    """Read reconnect's params in whichever shape they come, refusing -32602 naming the field."""
    client_id = required_str(params, "reconnect", "clientId")
    if "subscriptions" not in params:
        raise invalid_params(f"reconnect: subscriptions is required: {_SHAPES}")
    entries = params["subscriptions"]
    if not isinstance(entries, list):
        raise invalid_params(f"reconnect: subscriptions must be {_SHAPES}")
    uris = [entry for entry in entries if isinstance(entry, str)]
    cursors = [entry for entry in entries if isinstance(entry, dict)]
    if len(uris) + len(cursors) != len(entries):
        raise invalid_params(f"reconnect: subscriptions must be {_SHAPES}")
    if uris and cursors:
        raise invalid_params(
            "reconnect: subscriptions mixes URI strings and {channel, lastSeenServerSeq} "
            "cursors; send one shape"
        )
    # An empty list is AHP 1.0.0's when it comes with a watermark, the per-channel one without.
    if uris or (not cursors and "lastSeenServerSeq" in params):
        if "lastSeenServerSeq" not in params:
            raise invalid_params(
                "reconnect: lastSeenServerSeq is required beside a list of URI strings "
                "(or give each subscription its own {channel, lastSeenServerSeq})"
            )
        last_seen = required_int(params, "reconnect", "lastSeenServerSeq")
        return ReconnectRequest(client_id, tuple(uris), last_seen, None)
    parsed = tuple(_cursor(entry, index) for index, entry in enumerate(cursors))
    seen: set[str] = set()
    for cursor in parsed:
        if cursor.channel in seen:
            raise invalid_params(
                f"reconnect: subscriptions names {cursor.channel} twice; a channel has one cursor"
            )
        seen.add(cursor.channel)
    return ReconnectRequest(client_id, tuple(c.channel for c in parsed), None, parsed)
