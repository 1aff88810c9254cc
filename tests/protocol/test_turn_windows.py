"""Turn windows and the cursors that walk back from them (hosts/protocol/turn_windows.py)."""

from __future__ import annotations

import pytest

from hosts.protocol.errors import ProtocolError
from hosts.protocol.turn_windows import PAGE, page_before, window_size, windowed

TURNS = [{"id": f"t{n}", "state": "complete"} for n in range(7)]


def test_a_window_keeps_the_newest_turns_and_a_cursor_walks_back_page_by_page() -> None:
    state = windowed({"turns": TURNS, "title": "x"}, 2)
    assert [t["id"] for t in state["turns"]] == ["t5", "t6"]
    seen = state["turns"]
    cursor = state["turnsNextCursor"]
    while cursor is not None:
        page, cursor = page_before(TURNS, cursor, size=2)
        seen = page + seen
    assert seen == TURNS


def test_a_snapshot_with_no_view_has_every_turn_and_no_cursor_even_if_the_state_held_one() -> None:
    state = windowed({"turns": TURNS, "turnsNextCursor": "stale"}, None)
    assert state == {"turns": TURNS}


@pytest.mark.parametrize(
    ("view", "size"),
    [
        (None, None),
        ({}, None),
        ({"turns": 3}, 3),
        ({"turns": 3.0}, 3),
        ({"turns": 0}, PAGE),
        ({"turns": -2}, PAGE),
        ({"turns": 1.5}, PAGE),
        ({"turns": True}, PAGE),
    ],
)
def test_a_view_asks_for_a_count_or_gets_the_newest_page(view, size) -> None:
    assert window_size(view) == size


def test_a_cursor_naming_a_turn_the_chat_no_longer_holds_is_refused() -> None:
    cursor = windowed({"turns": TURNS}, 2)["turnsNextCursor"]
    with pytest.raises(ProtocolError) as refused:
        page_before(TURNS[:3], cursor)
    assert refused.value.code == -32602
