"""Client input is checked at the protocol layer, each refusal naming what was wrong."""

from __future__ import annotations

import pytest

from hosts.protocol import validation
from hosts.protocol.errors import ErrorCode, ProtocolError

USER = {"text": "hi", "origin": {"kind": "user"}}


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (
            {"type": "session/titleChanged", "title": 3},
            "session/titleChanged: title must be a string",
        ),
        (
            {"type": "session/isReadChanged", "isRead": 1},
            "session/isReadChanged: isRead must be a boolean",
        ),
        (
            {"type": "session/configChanged", "config": []},
            "session/configChanged: config must be an object",
        ),
        (
            {"type": "root/configChanged", "config": {}, "replace": "yes"},
            "root/configChanged: replace must be a boolean",
        ),
        (
            {"type": "chat/turnStarted", "turnId": "", "startedAt": "x", "message": USER},
            "chat/turnStarted: turnId must be a non-empty string",
        ),
        (
            {
                "type": "chat/turnStarted",
                "turnId": "t",
                "startedAt": "x",
                "message": {**USER, "origin": {"kind": "agent"}},
            },
            "chat/turnStarted: a client may only send a message whose origin is the user",
        ),
        (
            {"type": "chat/turnCancelled", "turnId": "t", "duration": True},
            "chat/turnCancelled: duration is required",
        ),
        (
            {"type": "chat/toolCallConfirmed", "toolCallId": "c", "approved": "yes"},
            "chat/toolCallConfirmed: approved must be a boolean",
        ),
        (
            {"type": "chat/pendingMessageSet", "kind": "later", "id": "q"},
            "chat/pendingMessageSet: kind must be queued or steering, with an id",
        ),
        ({"type": "chat/truncated", "turnId": 4}, "chat/truncated: turnId must be a string"),
    ],
)
def test_an_action_of_the_wrong_shape_is_refused_naming_the_field(action, reason):
    assert validation.action_problem(action) == reason


def test_well_formed_actions_and_unchecked_types_pass():
    assert (
        validation.action_problem(
            {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": USER}
        )
        is None
    )
    assert validation.action_problem({"type": "chat/draftChanged"}) is None


def refused(call) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(ProtocolError) as error:
        call()
    assert error.value.code == ErrorCode.INVALID_PARAMS
    return error.value.message


def test_working_directories_are_one_file_uri_at_the_most():
    assert validation.working_directories(None, "m") == []
    assert validation.working_directories(["file:///w"], "m") == ["file:///w"]
    assert refused(lambda: validation.working_directories("file:///w", "m")) == (
        "m: workingDirectories must be a list of URI strings"
    )
    assert "must be a file: URI" in refused(lambda: validation.working_directories(["/w"], "m"))
    assert "one directory" in refused(
        lambda: validation.working_directories(["file:///a", "file:///b"], "m")
    )


def test_an_active_client_is_the_callers_own_with_a_tools_list():
    assert validation.active_client({"clientId": "c"}, "m", "c") == {"tools": [], "clientId": "c"}
    assert "this client's id (c)" in refused(
        lambda: validation.active_client({"clientId": "d"}, "m", "c")
    )
    assert "tools must be a list" in refused(
        lambda: validation.active_client({"clientId": "c", "tools": 1}, "m", "c")
    )


def test_a_completion_offset_lies_in_its_text():
    assert validation.completion_request({"text": "ab", "offset": 2, "kind": "userMessage"}) == (
        "ab",
        2,
    )
    assert "offset" in refused(
        lambda: validation.completion_request({"text": "ab", "offset": 3, "kind": "userMessage"})
    )
    assert "kind" in refused(lambda: validation.completion_request({"text": "ab", "offset": 0}))


@pytest.mark.parametrize("value", [1e20, 2**53, -(2**53), 1.5, True, "1"])
def test_an_integer_no_client_can_hold_exactly_is_refused(value):
    from hosts.protocol.validation import required_int

    with pytest.raises(ProtocolError) as refused:
        required_int({"clientSeq": value}, "dispatchAction", "clientSeq")
    assert "clientSeq" in refused.value.message


def test_the_largest_safe_integer_and_a_whole_float_are_integers():
    from hosts.protocol.validation import required_int

    assert required_int({"n": 2**53 - 1}, "m", "n") == 2**53 - 1
    assert required_int({"n": 3.0}, "m", "n") == 3


_CALL = {"turnId": "t", "toolCallId": "c"}
_RESULT = {"success": True, "pastTenseMessage": "Ran"}


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (
            {
                "type": "chat/inputAnswerChanged",
                "requestId": "r",
                "questionId": "q",
                "answer": {"state": "submitted", "value": {"kind": "number", "value": True}},
            },
            "chat/inputAnswerChanged: answer.value.value must be a number for a number answer",
        ),
        (
            {
                "type": "chat/inputAnswerChanged",
                "requestId": "r",
                "questionId": "q",
                "answer": {"state": "draft", "value": {"kind": "selected-many", "value": "a"}},
            },
            "chat/inputAnswerChanged: answer.value.value must be a list of strings "
            "(the options chosen) for a selected-many answer",
        ),
        (
            {
                "type": "chat/inputAnswerChanged",
                "requestId": "r",
                "questionId": "q",
                "answer": {"state": "draft", "value": {"kind": "text"}},
            },
            "chat/inputAnswerChanged: answer.value.value is required",
        ),
        (
            {
                "type": "chat/inputAnswerChanged",
                "requestId": "r",
                "questionId": "q",
                "answer": {"state": "skipped", "freeformValues": "why"},
            },
            "chat/inputAnswerChanged: answer.freeformValues must be a list of strings",
        ),
        (
            {"type": "chat/inputAnswerChanged", "questionId": "q"},
            "chat/inputAnswerChanged: requestId must be a non-empty string",
        ),
        (
            {"type": "chat/inputCompleted", "requestId": "r", "response": "accept", "answers": []},
            "chat/inputCompleted: answers must be an object keyed by question id",
        ),
        (
            {"type": "chat/toolCallComplete", **_CALL, "result": {"success": True}},
            "chat/toolCallComplete: result.pastTenseMessage must be a string or {markdown: string}",
        ),
        (
            {
                "type": "chat/toolCallComplete",
                **_CALL,
                "result": {**_RESULT, "content": [{"type": "text"}]},
            },
            "chat/toolCallComplete: result.content[0].text must be a string",
        ),
        (
            {"type": "chat/toolCallComplete", **_CALL, "result": {**_RESULT, "error": "bad"}},
            "chat/toolCallComplete: result.error must be an object with a string message",
        ),
        (
            {
                "type": "chat/toolCallComplete",
                **_CALL,
                "result": _RESULT,
                "requiresResultConfirmation": "yes",
            },
            "chat/toolCallComplete: requiresResultConfirmation must be a boolean",
        ),
        (
            {"type": "chat/toolCallComplete", "toolCallId": "c", "result": _RESULT},
            "chat/toolCallComplete: turnId must be a non-empty string",
        ),
        (
            {"type": "chat/toolCallContentChanged", **_CALL, "content": {"type": "text"}},
            "chat/toolCallContentChanged: content must be a list of ToolResultContent",
        ),
        (
            {"type": "chat/toolCallResultConfirmed", **_CALL, "approved": "no"},
            "chat/toolCallResultConfirmed: approved must be a boolean",
        ),
    ],
)
def test_answers_and_a_clients_tool_call_actions_are_refused_naming_the_field(action, reason):
    assert validation.action_problem(action) == reason


@pytest.mark.parametrize(
    "action",
    [
        # No answer clears the draft; a value of a kind the protocol does not list is taken.
        {"type": "chat/inputAnswerChanged", "requestId": "r", "questionId": "q"},
        {
            "type": "chat/inputAnswerChanged",
            "requestId": "r",
            "questionId": "q",
            "answer": {"state": "draft", "value": {"kind": "colour", "value": {"r": 1}}},
        },
        {"type": "chat/inputCompleted", "requestId": "r", "response": "decline"},
        {
            "type": "chat/toolCallComplete",
            **_CALL,
            "result": {**_RESULT, "pastTenseMessage": {"markdown": "**Ran**"}},
        },
        {"type": "chat/toolCallContentChanged", **_CALL, "content": []},
    ],
)
def test_well_formed_answers_and_tool_call_actions_pass(action):
    assert validation.action_problem(action) is None
