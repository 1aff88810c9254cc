"""Chat snapshots as tail windows of their turns (`view.turns`), and the cursors that page back.

The host holds every turn of a chat; a subscribe that names `view.turns` is answered with the
newest turns only and, while older ones are left behind, a `turnsNextCursor`. `fetchTurns`
walks back from that cursor a page at a time. A cursor names the oldest turn a window (or a
page) holds, so it reads the same for every connection: the host keeps no record of which
window a connection was given.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .errors import invalid_params

#: The turns a window or a page holds when a view asks for no usable count.
PAGE = 50

_PREFIX = "turns-before:"


def cursor_before(turn_id: str) -> str:
    """The opaque cursor for the turns older than `turn_id`."""
    return _PREFIX + base64.urlsafe_b64encode(turn_id.encode()).decode().rstrip("=")


def turn_before(cursor: Any) -> str:
    """The turn id a cursor of this host's names; -32602 for any other value."""
    if not isinstance(cursor, str):
        raise invalid_params("fetchTurns: cursor must be a string")
    encoded = cursor.removeprefix(_PREFIX)
    try:
        if encoded == cursor or not encoded:
            raise ValueError(cursor)
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        return raw.decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid_params(f"fetchTurns: a cursor this host did not issue: {cursor}") from None


def window_size(view: Any) -> int | None:
    """How many turns a subscribe's `view` asks for: None (every turn) when it names no
    `turns`; a positive integer as asked; any other count the newest PAGE."""
    if view is None:
        return None
    if not isinstance(view, dict):
        raise invalid_params("subscribe: view must be an object")
    turns = view.get("turns")
    if turns is None:
        return None
    if isinstance(turns, bool) or not isinstance(turns, int | float) or turns != int(turns):
        return PAGE
    return int(turns) if turns >= 1 else PAGE


def windowed(state: dict[str, Any], size: int | None) -> dict[str, Any]:
    """A chat state as a snapshot gives it: every turn and no cursor (`size` None), or the
    newest `size` turns and a cursor while older ones are left."""
    shown = {key: value for key, value in state.items() if key != "turnsNextCursor"}
    turns = state.get("turns")
    if size is None or not isinstance(turns, list) or len(turns) <= size:
        return shown
    kept = turns[-size:]
    shown["turns"] = kept
    shown["turnsNextCursor"] = cursor_before(str(kept[0].get("id")))
    return shown


def page_before(
    turns: list[dict[str, Any]], cursor: Any, size: int = PAGE
) -> tuple[list[dict[str, Any]], str | None]:
    """The page of turns a cursor asks for (oldest first) and the cursor past it, if older
    turns remain. A cursor naming no turn the chat holds is refused -32602."""
    turn_id = turn_before(cursor)
    index = next((i for i, turn in enumerate(turns) if turn.get("id") == turn_id), -1)
    if index < 0:
        raise invalid_params(f"fetchTurns: a cursor this host did not issue: {cursor}")
    page = turns[max(0, index - size) : index]
    if index - size <= 0 or not page:
        return page, None
    return page, cursor_before(str(page[0].get("id")))
