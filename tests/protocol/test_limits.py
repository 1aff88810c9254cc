"""The one place a client frame is held to what the wire can say again and the store keep."""

from __future__ import annotations

import pytest

from hosts.protocol import jsonrpc
from hosts.protocol.errors import ErrorCode
from hosts.protocol.limits import MAX_DEPTH


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def frame(params: str, request_id: int = 7) -> str:
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"ping","params":{params}}}'


def test_params_as_deep_as_the_limit_are_taken():
    # params is level 1, so its value may nest MAX_DEPTH - 1 more.
    assert jsonrpc.parse(frame(f'{{"x":{nested(MAX_DEPTH - 1)}}}')) is not None


def test_params_one_level_deeper_are_refused_naming_the_path():
    with pytest.raises(jsonrpc.FrameError) as refused:
        jsonrpc.parse(frame(f'{{"x":{{"y":{nested(MAX_DEPTH - 1)}}}}}'))
    assert refused.value.code == ErrorCode.INVALID_PARAMS
    assert refused.value.request_id == 7
    assert "params.x.y" in refused.value.message
    assert f"deeper than {MAX_DEPTH} levels" in refused.value.message


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ('{"title":"a\\u0000b"}', "params.title holds a NUL"),
        ('{"a":[1,{"b":["ok","\\u0000"]}]}', "params.a[1].b[1] holds a NUL"),
        ('{"a":{"k\\u0000":1}}', "params.a has a key with a NUL"),
    ],
)
def test_a_nul_anywhere_is_refused_naming_where(params, path):
    with pytest.raises(jsonrpc.FrameError) as refused:
        jsonrpc.parse(frame(params))
    assert path in refused.value.message


def test_an_escaped_backslash_before_u0000_is_no_nul():
    incoming = jsonrpc.parse(frame('{"title":"a\\\\u0000b"}'))
    assert incoming is not None and incoming.params["title"] == "a\\u0000b"


@pytest.mark.parametrize("meta", ["[1]", '"x"', "5", "null"])
def test_a_meta_that_is_not_an_object_is_refused(meta):
    with pytest.raises(jsonrpc.FrameError) as refused:
        jsonrpc.parse(frame(f'{{"action":{{"_meta":{meta}}}}}'))
    assert "params.action._meta must be an object" in refused.value.message


def test_non_finite_numbers_never_parse():
    for number in ("NaN", "Infinity", "1e400"):
        with pytest.raises(jsonrpc.FrameError) as refused:
            jsonrpc.parse(frame(f'{{"x":{number}}}'))
        assert refused.value.code == ErrorCode.PARSE_ERROR
