"""The session catalogue: newest first, kept ordered as sessions move, paged by keyset."""

from __future__ import annotations

import pytest

from hosts.engine.sessions.catalogue import BadCursor, Catalogue, decode_cursor, encode_cursor


def catalogue(*rows: tuple[str, int]) -> Catalogue:
    held = Catalogue()
    for uri, modified in rows:
        held.put(uri, modified)
    return held


def test_sessions_are_listed_newest_first_then_by_uri():
    held = catalogue(("a", 1), ("b", 3), ("c", 2), ("d", 3))
    assert list(held) == ["d", "b", "c", "a"]


def test_a_touched_session_moves_to_the_front_and_a_dropped_one_goes():
    held = catalogue(("a", 1), ("b", 2))
    held.put("a", 5)
    held.drop("b")
    held.drop("nobody")
    assert list(held) == ["a"] and len(held) == 1


def test_pages_follow_one_another_with_nothing_missed_or_repeated():
    held = catalogue(*((f"s{i:02}", i) for i in range(10)))
    first, more = held.page(None, 4)
    assert first == ["s09", "s08", "s07", "s06"]
    second, more = held.page(more, 4)
    assert second == ["s05", "s04", "s03", "s02"]
    last, more = held.page(more, 4)
    assert last == ["s01", "s00"] and more is None


def test_a_session_added_while_a_client_pages_shifts_nothing_under_it():
    held = catalogue(*((f"s{i:02}", i) for i in range(6)))
    first, more = held.page(None, 3)
    held.put("new", 100)
    rest, _ = held.page(more, 10)
    assert first + rest == ["s05", "s04", "s03", "s02", "s01", "s00"]


def test_a_cursor_says_its_key_back_and_one_not_issued_here_is_refused():
    key = (1234, "ahp-session:/x:y")
    assert decode_cursor(encode_cursor(key)) == key
    for bad in ("nonsense", 7, "b2Zmc2V0OjEw", ""):
        with pytest.raises(BadCursor):
            decode_cursor(bad)
