"""The translation of ACP `session/update` payloads into TurnEvents reports, with no agent process.

The payloads are the `update` objects of `session/update` notifications as agents send them on
the wire (camelCase JSON), fed straight to `TurnUpdates`; what a recording TurnEvents received is
the whole answer.
"""

from __future__ import annotations

from typing import Any

from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, ToolCallUpdate

from hosts.backends.acp.permissions import ask_person
from hosts.backends.acp.turn import Turn
from hosts.backends.acp.updates import TurnUpdates
from hosts.backends.base import PermissionAnswer
from tests.support.recording_events import RecordingEvents


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "text": content}


def said(content: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": text(content)}


def thought(content: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_thought_chunk", "content": text(content)}


def started(call_id: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call", "toolCallId": call_id, **fields}


def progress(call_id: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, **fields}


def output(*parts: str) -> list[dict[str, Any]]:
    return [{"type": "content", "content": text(part)} for part in parts]


def report(*updates: dict[str, Any], model: str | None = None) -> RecordingEvents:
    events = RecordingEvents()
    translator = TurnUpdates(events, model=model)
    for update in updates:
        translator.apply(update)
    return events


def test_message_and_thought_chunks_become_text_and_reasoning_in_wire_order() -> None:
    events = report(thought("let me see"), said("Hello"), said(" world"), thought("done"))

    assert events.log == [
        ("reasoning", {"content": "let me see"}),
        ("text", {"content": "Hello"}),
        ("text", {"content": " world"}),
        ("reasoning", {"content": "done"}),
    ]


def test_the_translator_keeps_what_the_turn_said() -> None:
    translator = TurnUpdates(RecordingEvents())
    for update in (said("one"), thought("hm"), said(" two")):
        translator.apply(update)

    assert "".join(translator.said) == "one two"


def test_chunks_that_are_not_text_are_not_streamed() -> None:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    events = report(
        {"sessionUpdate": "agent_message_chunk", "content": image},
        {"sessionUpdate": "agent_message_chunk", "content": text("")},
        {"sessionUpdate": "agent_thought_chunk", "content": "not a block"},
    )

    assert events.log == []


def test_a_tool_call_is_started_then_runs_then_completes_with_its_text_output() -> None:
    events = report(
        started(
            "t1", title="Read notes.txt", kind="read", status="pending", rawInput={"path": "n"}
        ),
        progress("t1", status="in_progress"),
        progress("t1", status="completed", content=output("buy milk", "and eggs")),
    )

    assert events.log == [
        (
            "tool_call",
            {
                "call_id": "t1",
                "name": "Read notes.txt",
                "title": "Read notes.txt",
                "kind": "read",
                "partial_input": None,
            },
        ),
        (
            "tool_running",
            {"call_id": "t1", "title": "Read notes.txt", "tool_input": '{"path": "n"}'},
        ),
        (
            "tool_result",
            {
                "call_id": "t1",
                "success": True,
                "message": "Read notes.txt",
                "output": "buy milk\nand eggs",
                "error": None,
            },
        ),
    ]


def test_a_failed_call_reports_its_output_as_the_error_or_says_it_failed() -> None:
    events = report(
        started("a", title="Run make"),
        progress("a", status="failed", content=output("make: no rule")),
        started("b", title="Run ls"),
        progress("b", status="failed"),
    )

    results = [payload for method, payload in events.log if method == "tool_result"]
    assert [(r["success"], r["error"]) for r in results] == [
        (False, "make: no rule"),
        (False, "Run ls failed"),
    ]


def test_an_update_for_a_call_never_announced_starts_it() -> None:
    events = report(progress("ghost", title="Ghost", status="completed", content=output("boo")))

    assert events.kinds() == ["tool_call", "tool_result"]
    assert events.log[0][1]["name"] == "Ghost"
    assert events.log[1][1]["output"] == "boo"


def test_each_step_of_a_call_is_reported_once_however_often_the_agent_says_it() -> None:
    events = report(
        started("t", title="Edit", status="pending"),
        started("t", title="Edit", status="pending"),
        progress("t", status="in_progress"),
        progress("t", status="in_progress"),
        progress("t", status="completed"),
        progress("t", status="completed"),
        progress("t", status="in_progress"),
    )

    assert events.kinds() == ["tool_call", "tool_running", "tool_result"]


def test_a_later_title_input_and_output_are_what_the_call_reports() -> None:
    events = report(
        started("t", kind="execute"),
        progress("t", title="Run pytest", rawInput="pytest -q", status="in_progress"),
        progress("t", content=output("1 passed")),
        progress("t", content=[{"type": "diff", "path": "x", "newText": "y"}]),
        progress("t", status="completed"),
    )

    (call,) = [p for m, p in events.log if m == "tool_call"]
    assert (call["name"], call["title"], call["kind"]) == ("execute", None, "execute")
    assert [p for m, p in events.log if m == "tool_running"] == [
        {"call_id": "t", "title": "Run pytest", "tool_input": "pytest -q"}
    ]
    (result,) = [p for m, p in events.log if m == "tool_result"]
    # Content with no text (a diff) keeps the text output the call had.
    assert (result["message"], result["output"]) == ("Run pytest", "1 passed")


def test_a_call_with_neither_title_nor_kind_is_named_tool_and_one_without_an_id_is_dropped() -> (
    None
):
    events = report(started("t"), progress("", status="completed"), {"sessionUpdate": "tool_call"})

    assert events.log == [
        (
            "tool_call",
            {"call_id": "t", "name": "tool", "title": None, "kind": None, "partial_input": None},
        )
    ]


def test_a_usage_update_is_the_context_window_and_never_tokens_spent() -> None:
    events = report(
        {"sessionUpdate": "usage_update", "used": 1234, "size": 200_000},
        # A real agent sent this; it says nothing countable.
        {"sessionUpdate": "usage_update", "used": None, "size": 1000},
        model="fake-small",
    )

    assert events.log == [
        (
            "usage",
            {
                "input_tokens": None,
                "output_tokens": None,
                "model": "fake-small",
                "context": (1234, 200_000),
            },
        )
    ]


def costs(start: float | None, *updates: dict[str, Any]) -> list[Any]:
    events = RecordingEvents()
    translator = TurnUpdates(events)
    translator.cost_start = start
    for update in updates:
        translator.apply(update)
    return [payload.get("cost") for _, payload in events.log]


def cost(amount: Any, currency: Any = "USD") -> dict[str, Any]:
    return {
        "sessionUpdate": "usage_update",
        "used": 10,
        "size": 100,
        "cost": {"amount": amount, "currency": currency},
    }


def test_a_turns_cost_is_what_the_sessions_cumulative_cost_grew_by_since_it_began() -> None:
    assert costs(1.5, cost(1.75), cost(2.0)) == [(0.25, "USD"), (0.5, "USD")]
    # Another currency is said as it is (the meter does not count it as dollars).
    assert costs(0.0, cost(3, "eur")) == [(3.0, "EUR")]
    # A count the agent started again counts from nothing.
    assert costs(5.0, cost(0.5)) == [(0.5, "USD")]


def test_a_cost_is_not_said_where_the_turn_began_is_unknown_or_the_figure_is_not_one() -> None:
    # A loaded session that has said no cost yet: what this turn added is unknown.
    assert costs(None, cost(2.0)) == [None]
    bad = [cost("lots"), cost(-1), cost(True), cost(1, None), cost(float("nan"))]
    assert costs(0.0, *bad) == [None] * len(bad)


def test_plans_replayed_user_text_and_unknown_kinds_are_not_turn_events() -> None:
    # TurnEvents has no place for a plan; the session-level kinds are the chat's to read.
    events = report(
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "read", "priority": "high", "status": "in_progress"}],
        },
        {"sessionUpdate": "user_message_chunk", "content": text("earlier prompt")},
        {"sessionUpdate": "available_commands_update", "availableCommands": []},
        {"sessionUpdate": "something_new", "whatever": 1},
        {"content": text("no kind at all")},
    )

    assert events.log == []


# -- permission questions, which go through the same bookkeeping ----------------------------------

OPTIONS = [
    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
    PermissionOption(option_id="always", name="Always", kind="allow_always"),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
]


def question(call_id: str = "w") -> ToolCallUpdate:
    return ToolCallUpdate(
        tool_call_id=call_id,
        title="Write out.txt",
        kind="edit",
        status="pending",
        raw_input={"path": "out.txt"},
    )


async def test_an_approval_picks_the_persons_option_and_makes_the_call_run() -> None:
    events = RecordingEvents(
        decide=lambda call_id, title, options: PermissionAnswer(True, "always")
    )
    turn = Turn(events)

    response = await ask_person(turn, question(), OPTIONS)
    turn.updates.apply(progress("w", status="in_progress"))

    assert response.outcome == AllowedOutcome(outcome="selected", option_id="always")
    assert events.kinds() == ["tool_call", "permission"]
    assert events.log[1][1] == {
        "call_id": "w",
        "title": "Write out.txt",
        "tool_input": '{"path": "out.txt"}',
        "options": ["yes", "always", "no"],
    }


async def test_a_refusal_picks_a_reject_option_and_the_call_is_never_said_running() -> None:
    events = RecordingEvents(decide=lambda call_id, title, options: PermissionAnswer(False))
    turn = Turn(events)

    response = await ask_person(turn, question(), OPTIONS)
    turn.updates.apply(progress("w", status="in_progress"))
    turn.updates.apply(progress("w", status="failed", content=output("refused")))

    assert response.outcome == AllowedOutcome(outcome="selected", option_id="no")
    assert events.kinds() == ["tool_call", "permission", "tool_result"]


async def test_an_approval_the_agent_offered_no_option_for_is_a_cancel() -> None:
    events = RecordingEvents()
    rejects_only = [OPTIONS[2]]

    response = await ask_person(Turn(events), question(), rejects_only)

    assert response.outcome == DeniedOutcome(outcome="cancelled")


async def test_a_question_outside_a_turn_or_after_a_cancel_asks_nobody() -> None:
    events = RecordingEvents()
    cancelled = Turn(events)
    cancelled.cancelled.set()

    for turn in (None, cancelled):
        response = await ask_person(turn, question(), OPTIONS)
        assert response.outcome == DeniedOutcome(outcome="cancelled")
    assert events.log == []
