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


def test_a_client_answer_is_a_response_not_a_request():
    # A client answering a request of the host's (its own files): nothing to dispatch.
    assert jsonrpc.parse('{"jsonrpc":"2.0","id":"ahpd-1","result":{"data":"x"}}') == (
        jsonrpc.Response("ahpd-1", {"data": "x"})
    )
    failed = jsonrpc.parse('{"jsonrpc":"2.0","id":2,"error":{"code":-32008,"message":"gone"}}')
    assert failed == jsonrpc.Response(2, None, {"code": -32008, "message": "gone"})


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
