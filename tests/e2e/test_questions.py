"""The agent asks (issue 26.4), end to end: the host's agent loop's `ask_user` tool against the
local chat-completions server, two clients co-editing and answering over real sockets, the
answer reaching the model, and what is refused (a forged request, a bad answer, a member whose
session it is not)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sessions import ended, new_session, run_turn, turn
from tests.support.agents import local_agent, server_with_config
from tests.support.client import Client
from tests.support.fake_openai import FakeOpenAi
from tests.support.server import ServerProcess

SETUP = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import mint_token
user = get_user_model().objects.create_user(username="mia")
Membership.objects.create(user=user, role=Role.objects.get(name="member"), primary=True)
print(json.dumps({"mia": mint_token("mia", "tests").secret}))
"""


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-questions-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAi]:
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(model: FakeOpenAi, workdir: Path) -> Iterator[ServerProcess]:
    agents = [local_agent(model.url, display_name="Local model", model="fake-coder")]
    with server_with_config({"agents": agents}) as process:
        yield process


@pytest.fixture(scope="module")
def mia_token(server: ServerProcess) -> str:
    return str(server.shell_json(SETUP)["mia"])


async def two_clients(server: ServerProcess, connect: Any, workdir: Path) -> tuple:
    """`a` made a session; `b` watches it and its chat."""
    a = await connect(server.url)
    await a.initialize()
    uri, chat = await new_session(a, workdir)
    b = await connect(server.url)
    await b.initialize()
    await b.request("subscribe", {"channel": uri})
    await b.request("subscribe", {"channel": chat})
    return a, b, uri, chat


def of_type(channel: str, action_type: str, **fields: Any):
    return lambda e: (
        e["channel"] == channel
        and e["action"]["type"] == action_type
        and all(e["action"].get(k) == v for k, v in fields.items())
    )


async def asked(client: Client, chat: str) -> dict[str, Any]:
    """The request of the next chat/inputRequested `client` is told."""
    seen = await client.wait_action(of_type(chat, "chat/inputRequested"), timeout=30)
    request: dict[str, Any] = seen["action"]["request"]
    return request


def tool_messages(model: FakeOpenAi) -> list[str]:
    """What every tool message the model was sent said, in order, without repeats."""
    said: list[str] = []
    for body in model.requests:
        for m in body.get("messages", []):
            if m.get("role") == "tool" and m["content"] not in said:
                said.append(m["content"])
    return said


def draft(value: str, state: str = "draft") -> dict[str, Any]:
    return {"state": state, "value": {"kind": "selected", "value": value}}


async def test_a_second_client_co_edits_and_answers_and_the_answer_reaches_the_model(
    server, connect, workdir, model
):
    a, b, uri, chat = await two_clients(server, connect, workdir)
    start = turn("ask Which colour? | red | blue")
    await a.dispatch(chat, start)
    request = await asked(b, chat)
    assert request["_meta"] == {"purpose": "askUser"}
    assert request["message"] == "Which colour?"
    [question] = request["questions"]
    assert question["kind"] == "single-select" and question["required"] is True
    assert [o["id"] for o in question["options"]] == ["red", "blue"]
    entry_id = f"chatInput:{chat}:{request['id']}"
    needed = await a.wait_action(of_type(uri, "session/inputNeededSet"))
    assert needed["action"]["request"] == {
        "kind": "chatInput",
        "id": entry_id,
        "chat": chat,
        "request": request,
    }

    # b types; a sees the draft on the chat, and the session's entry holds it too.
    change = {
        "type": "chat/inputAnswerChanged",
        "requestId": request["id"],
        "questionId": "answer",
        "answer": draft("blue"),
    }
    echo = await b.dispatch_and_wait(chat, change)
    assert "rejectionReason" not in echo
    seen = await a.wait_action(lambda e: e["serverSeq"] == echo["serverSeq"])
    assert seen["origin"]["clientId"] == b.client_id
    refreshed = await a.wait_action(
        lambda e: (
            e["channel"] == uri
            and e["action"]["type"] == "session/inputNeededSet"
            and e["action"]["request"]["request"].get("answers")
        )
    )
    assert refreshed["action"]["request"]["request"]["answers"] == {"answer": draft("blue")}

    # A draft is no submitted answer: accepting a required question on it is refused.
    accept = {"type": "chat/inputCompleted", "requestId": request["id"], "response": "accept"}
    refusal = await b.dispatch_and_wait(chat, accept)
    assert refusal["rejectionReason"] == (
        f"Input request {request['id']}: required question answer has no submitted answer"
    )

    # Submitted, the completion carrying no answers of its own takes what was synced.
    await b.dispatch_and_wait(chat, {**change, "answer": draft("blue", "submitted")})
    echo = await b.dispatch_and_wait(chat, accept)
    assert "rejectionReason" not in echo
    await a.wait_action(of_type(uri, "session/inputNeededRemoved", id=entry_id))
    end = await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    assert "The person answered: blue" in tool_messages(model)
    for client in (a, b):
        await client.assert_conforms(chat)
        await client.assert_conforms(uri)
    parts = a.tracked[chat][0]["turns"][-1]["responseParts"]
    answered = next(p for p in parts if p["kind"] == "inputRequest")
    assert answered["response"] == "accept"
    assert answered["request"]["answers"] == {"answer": draft("blue", "submitted")}
    assert a.tracked[uri][0].get("inputNeeded", []) == []


@pytest.mark.parametrize(
    ("response", "told"),
    [
        ("decline", "The person declined to answer. Go on without it, or stop if you cannot."),
        ("cancel", "The question was cancelled before the person answered."),
    ],
)
async def test_a_declined_or_cancelled_question_is_told_to_the_model(
    server, connect, workdir, model, response, told
):
    a, b, uri, chat = await two_clients(server, connect, workdir)
    start = turn(f"ask Shall I {response}?")
    await a.dispatch(chat, start)
    request = await asked(a, chat)
    echo = await b.dispatch_and_wait(
        chat, {"type": "chat/inputCompleted", "requestId": request["id"], "response": response}
    )
    assert "rejectionReason" not in echo
    end = await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    assert told in tool_messages(model)
    await a.assert_conforms(chat)
    await a.assert_conforms(uri)
    assert a.tracked[uri][0].get("inputNeeded", []) == []


async def test_a_question_open_when_the_turn_is_stopped_goes_and_its_asker_is_told_cancel(
    server, connect, workdir, model
):
    a, b, uri, chat = await two_clients(server, connect, workdir)
    start = turn("ask Are you there?")
    await a.dispatch(chat, start)
    request = await asked(a, chat)
    entry_id = f"chatInput:{chat}:{request['id']}"
    await a.wait_action(of_type(uri, "session/inputNeededSet"))
    stop = {"type": "chat/turnCancelled", "turnId": start["turnId"], "duration": 5}
    assert "rejectionReason" not in await a.dispatch_and_wait(chat, stop)
    await b.wait_action(of_type(uri, "session/inputNeededRemoved", id=entry_id))
    # Too late to answer: the request is in no running turn any more.
    late = await b.dispatch_and_wait(
        chat, {"type": "chat/inputCompleted", "requestId": request["id"], "response": "accept"}
    )
    assert late["rejectionReason"] == f"No open input request {request['id']} in this chat"
    # The asker was answered `cancel`: the conversation the next turn sends says so.
    await run_turn(a, chat, "still there?")
    told = [m for m in model.requests[-1]["messages"] if m.get("role") == "tool"]
    assert told[-1]["content"] == "The question was cancelled before the person answered."
    for client in (a, b):
        await client.assert_conforms(chat)
        await client.assert_conforms(uri)
    stopped = a.tracked[chat][0]["turns"][-2]
    assert stopped["state"] == "cancelled"
    part = next(p for p in stopped["responseParts"] if p["kind"] == "inputRequest")
    assert "response" not in part


BAD_ANSWERS = [
    (
        {"answer": {"state": "submitted"}},
        "chat/inputAnswerChanged: answer.value is required for a submitted answer "
        "(a ChatInputAnswerValue)",
    ),
    (
        {"answer": {"state": "draft", "value": {"kind": "selected", "value": 3}}},
        "chat/inputAnswerChanged: answer.value.value must be a string (the option chosen) "
        "for a selected answer",
    ),
    (
        {"answer": {"state": "drafted", "value": {"kind": "text", "value": "x"}}},
        "chat/inputAnswerChanged: answer.state must be one of draft, submitted, skipped",
    ),
    ({"questionId": ""}, "chat/inputAnswerChanged: questionId must be a non-empty string"),
    ({"questionId": "colour"}, "Input request {request} has no question colour"),
    ({"requestId": "forged"}, "No open input request forged in this chat"),
]


async def test_malformed_and_forged_answers_are_refused_naming_what_was_wrong(
    server, connect, workdir, mia_token
):
    a, b, uri, chat = await two_clients(server, connect, workdir)
    start = turn("ask What now? | stop | go")
    await a.dispatch(chat, start)
    request = await asked(a, chat)
    good = {
        "type": "chat/inputAnswerChanged",
        "requestId": request["id"],
        "questionId": "answer",
        "answer": draft("go"),
    }
    for change, words in BAD_ANSWERS:
        refusal = await b.dispatch_and_wait(chat, {**good, **change})
        assert refusal["rejectionReason"] == words.format(request=request["id"])
    completions = [
        (
            {"response": "maybe"},
            "chat/inputCompleted: response must be one of accept, decline, cancel",
        ),
        (
            {"response": "accept", "answers": {"answer": {"state": "submitted", "value": "go"}}},
            "chat/inputCompleted: answers['answer'].value is required for a submitted answer "
            "(a ChatInputAnswerValue)",
        ),
        (
            {"response": "accept", "answers": {"answer": {"state": "skipped"}}},
            f"Input request {request['id']}: required question answer has no submitted answer",
        ),
        (
            {"response": "accept", "requestId": "forged"},
            "No open input request forged in this chat",
        ),
    ]
    for completion, words in completions:
        action = {"type": "chat/inputCompleted", "requestId": request["id"], **completion}
        refusal = await b.dispatch_and_wait(chat, action)
        assert refusal["rejectionReason"] == words

    # Another member, in a session that is not theirs, may not answer it.
    mia = await connect(server.url, token=mia_token)
    await mia.initialize()
    refusal = await mia.dispatch_and_wait(chat, good)
    assert refusal["rejectionReason"].startswith("user:mia may not others:work here")

    # Nothing of it moved anything, and every connection is still up: the request is open
    # with no answers, and a good answer goes through.
    for client in (a, b):
        await client.assert_conforms(chat)
        await client.assert_conforms(uri)
    open_part = next(
        p for p in a.tracked[chat][0]["activeTurn"]["responseParts"] if p["kind"] == "inputRequest"
    )
    assert "answers" not in open_part["request"] and "response" not in open_part
    accept = {
        "type": "chat/inputCompleted",
        "requestId": request["id"],
        "response": "accept",
        "answers": {"answer": draft("go", "submitted")},
    }
    assert "rejectionReason" not in await b.dispatch_and_wait(chat, accept)
    end = await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    assert "items" in await mia.request("listSessions", {"channel": "ahp-root://"})


async def test_a_client_arriving_mid_question_reads_the_draft_from_the_sessions_list(
    server, connect, workdir
):
    a, b, uri, chat = await two_clients(server, connect, workdir)
    start = turn("ask Name the branch")
    await a.dispatch(chat, start)
    request = await asked(a, chat)
    typed = {"state": "draft", "value": {"kind": "text", "value": "feat/ask"}}
    change = {
        "type": "chat/inputAnswerChanged",
        "requestId": request["id"],
        "questionId": "answer",
        "answer": typed,
    }
    assert "rejectionReason" not in await b.dispatch_and_wait(chat, change)
    await a.wait_action(
        lambda e: (
            e["channel"] == uri
            and e["action"]["type"] == "session/inputNeededSet"
            and e["action"]["request"]["request"].get("answers")
        )
    )
    # A client that was not there reads the question, answers and all, from the session.
    c = await connect(server.url)
    await c.initialize()
    snapshot = (await c.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    [entry] = snapshot["inputNeeded"]
    assert entry["kind"] == "chatInput" and entry["chat"] == chat
    assert entry["request"]["answers"] == {"answer": typed}
    # And answers it without subscribing to the chat, as the entry says it may.
    done = {
        "type": "chat/inputCompleted",
        "requestId": request["id"],
        "response": "accept",
        "answers": {"answer": {**typed, "state": "submitted"}},
    }
    assert "rejectionReason" not in await c.dispatch_and_wait(chat, done)
    end = await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    await a.assert_conforms(uri)
