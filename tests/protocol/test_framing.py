"""JSON-RPC framing, as pure functions."""

from __future__ import annotations

import pytest

from hosts.protocol import jsonrpc
from hosts.protocol.errors import ErrorCode


def test_a_request_and_a_notification_are_told_apart():
    request = jsonrpc.parse('{"jsonrpc":"2.0","id":3,"method":"ping","params":{}}')
    note = jsonrpc.parse('{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"x"}}')
    assert request is not None and request.has_id and request.id == 3
    assert note is not None and not note.has_id


def test_a_client_response_carries_nothing_to_dispatch():
    assert jsonrpc.parse('{"jsonrpc":"2.0","id":1,"result":null}') is None


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("nope", ErrorCode.PARSE_ERROR),
        ("[]", ErrorCode.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', ErrorCode.INVALID_REQUEST),
        ('{"id":1,"method":"ping"}', ErrorCode.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":1,"method":"ping","params":3}', ErrorCode.INVALID_PARAMS),
    ],
)
def test_malformed_frames_raise_the_right_code(text, code):
    with pytest.raises(jsonrpc.FrameError) as raised:
        jsonrpc.parse(text)
    assert raised.value.code == code
