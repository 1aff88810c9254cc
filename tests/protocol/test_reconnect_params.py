"""reconnect's two shapes of params, told apart and checked before anything reaches state."""

from __future__ import annotations

import pytest

from hosts.protocol.errors import ProtocolError
from hosts.protocol.reconnect_params import ReplayCursor, parse_reconnect

ROOT = "ahp-root://"


def test_uris_beside_a_watermark_are_the_1_0_0_shape():
    request = parse_reconnect({"clientId": "c", "lastSeenServerSeq": 4, "subscriptions": [ROOT]})
    assert (request.channels, request.last_seen, request.cursors) == ((ROOT,), 4, None)


def test_an_empty_list_beside_a_watermark_is_the_1_0_0_shape():
    request = parse_reconnect({"clientId": "c", "lastSeenServerSeq": 4, "subscriptions": []})
    assert (request.last_seen, request.cursors) == (4, None)


def test_cursors_are_the_per_channel_shape_and_keep_their_order():
    request = parse_reconnect(
        {
            "clientId": "c",
            "subscriptions": [
                {"channel": "ahp-session:/s", "lastSeenServerSeq": 9},
                {"channel": ROOT, "lastSeenServerSeq": 3.0},
            ],
        }
    )
    assert request.last_seen is None
    assert request.channels == ("ahp-session:/s", ROOT)
    assert request.cursors == (ReplayCursor("ahp-session:/s", 9), ReplayCursor(ROOT, 3))


def test_a_watermark_beside_cursors_is_not_read():
    request = parse_reconnect(
        {
            "clientId": "c",
            "lastSeenServerSeq": 100,
            "subscriptions": [{"channel": ROOT, "lastSeenServerSeq": 3}],
        }
    )
    assert request.last_seen is None and request.cursors == (ReplayCursor(ROOT, 3),)


@pytest.mark.parametrize("value", [True, 1.5, 2**53, "3", None])
def test_a_cursor_that_is_not_a_safe_non_negative_integer_is_refused(value):
    with pytest.raises(ProtocolError) as refused:
        parse_reconnect(
            {"clientId": "c", "subscriptions": [{"channel": ROOT, "lastSeenServerSeq": value}]}
        )
    assert refused.value.code == -32602
    assert "subscriptions[0].lastSeenServerSeq" in str(refused.value)
