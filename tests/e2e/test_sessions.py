"""Sessions, chats and turns end to end, with the OpenAI-compatible backend against a local
server speaking the chat-completions stream (tests/support/fake_openai.py)."""

from __future__ import annotations

import base64
import json
import os
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support.agents import local_agent, server_with_config
from tests.support.client import Client, RpcError
from tests.support.fake_openai import FakeOpenAi
from tests.support.server import REPO

ROOT = "ahp-root://"
PRESENCE_GRACE_MS = 400


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-work-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def model():
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(model, workdir):
    agents = [
        local_agent(model.url, display_name="Local model", model="fake-coder"),
        local_agent(model.url, "other", "Another model", "fake-other"),
    ]
    with server_with_config(
        {"agents": agents}, AHPD_PRESENCE_GRACE_MS=str(PRESENCE_GRACE_MS)
    ) as process:
        yield process


def message(text: str) -> dict:
    return {"text": text, "origin": {"kind": "user"}}


def turn(text: str) -> dict:
    return {
        "type": "chat/turnStarted",
        "turnId": str(uuid.uuid4()),
        "startedAt": "2026-11-30T10:00:00.000Z",
        "message": message(text),
    }


async def new_session(client: Client, workdir: Path, provider: str = "local") -> tuple[str, str]:
    uri = f"ahp-session:/{uuid.uuid4()}"
    assert (
        await client.request(
            "createSession",
            {
                "channel": uri,
                "provider": provider,
                "workingDirectories": [workdir.as_uri()],
                "activeClient": {"clientId": client.client_id, "tools": []},
            },
        )
        is None
    )
    snapshot = (await client.request("subscribe", {"channel": uri}))["snapshot"]
    chat = snapshot["state"]["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    return uri, chat


def ended(chat: str, turn_id: str):
    endings = ("chat/turnComplete", "chat/turnCancelled", "chat/error")
    return lambda e: (
        e["channel"] == chat
        and e["action"]["type"] in endings
        and e["action"].get("turnId") == turn_id
    )


async def start_streaming(
    client: Client, chat: str, text: str, watcher: Client | None = None
) -> dict:
    """Start a turn and wait until its text streams (as `watcher` sees it, if given)."""
    action = turn(text)
    await client.dispatch(chat, action)
    await (watcher or client).wait_action(
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/delta"
            and e["action"]["turnId"] == action["turnId"]
        ),
        timeout=30,
    )
    return action


async def run_turn(client: Client, chat: str, text: str) -> dict:
    action = turn(text)
    await client.dispatch_and_wait(chat, action)
    return await client.wait_action(ended(chat, action["turnId"]), timeout=30)


async def fork_at(client: Client, session: str, chat: str, turn_id: str) -> str:
    """A new chat in `session` forked from `chat` at `turn_id`; its URI."""
    fork = f"ahp-chat:/{uuid.uuid4()}"
    await client.request(
        "createChat",
        {
            "channel": session,
            "chat": fork,
            "source": {"kind": "fork", "chat": chat, "turnId": turn_id},
        },
    )
    return fork


async def test_root_state_lists_the_configured_agents(server, connect):
    client = await connect(server.url)
    result = await client.initialize()
    agents = result["snapshots"][0]["state"]["agents"]
    assert [a["provider"] for a in agents] == ["local", "other"]
    assert agents[0]["displayName"] == "Local model"
    assert agents[0]["models"][0]["id"] == "fake-coder"


async def test_a_fresh_session_is_provisional_until_its_first_message(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir)
    state = client.tracked[uri][0]
    assert state["lifecycle"] == "creating"
    assert state["activeClients"] == [{"clientId": client.client_id, "tools": []}]
    assert [c["resource"] for c in state["chats"]] == [chat]
    listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
    assert uri not in [s["resource"] for s in listed]

    end = await run_turn(client, chat, "hello there")
    assert end["action"]["type"] == "chat/turnComplete"
    assert end["action"]["duration"] >= 0
    added = await client.wait_for(
        lambda: next(
            (
                p
                for m, p in client.notifications
                if m == "root/sessionAdded" and p["summary"]["resource"] == uri
            ),
            None,
        )
    )
    assert added["summary"]["provider"] == "local"
    await client.wait_action(
        lambda e: e["channel"] == uri and e["action"]["type"] == "session/ready"
    )
    listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
    row = next(s for s in listed if s["resource"] == uri)
    assert row["title"] == "hello there"
    await client.assert_conforms(chat)
    await client.assert_conforms(uri)
    turns = client.tracked[chat][0]["turns"]
    assert turns[-1]["state"] == "complete"
    parts = turns[-1]["responseParts"]
    assert [p["kind"] for p in parts] == ["reasoning", "markdown"]
    assert parts[1]["content"] == "echo: hello there"


async def test_the_clients_turn_is_said_back_with_its_origin(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    action = turn("echo me")
    echo = await client.dispatch_and_wait(chat, action)
    assert "rejectionReason" not in echo
    assert echo["action"]["turnId"] == action["turnId"]
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)


async def test_a_tool_call_approved_runs_and_one_refused_does_not(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    for approved, name in ((True, "approved.txt"), (False, "refused.txt")):
        action = turn(f"write {name} hello")
        turn_id = action["turnId"]
        await client.dispatch(chat, action)
        ready = await client.wait_action(
            lambda e: (
                e["channel"] == chat
                and e["action"]["type"] == "chat/toolCallReady"
                and e["action"]["turnId"] == turn_id  # noqa: B023 (awaited in this iteration)
            ),
            timeout=30,
        )
        assert "confirmed" not in ready["action"]
        call_id = ready["action"]["toolCallId"]
        needed = await client.wait_action(
            lambda e: (
                e["action"]["type"] == "session/inputNeededSet"
                and e["action"]["request"]["turnId"] == turn_id  # noqa: B023
            )
        )
        assert needed["action"]["request"]["kind"] == "toolConfirmation"
        answer = {
            "type": "chat/toolCallConfirmed",
            "turnId": action["turnId"],
            "toolCallId": call_id,
            "approved": approved,
        }
        answer.update({"confirmed": "user-action"} if approved else {"reason": "denied"})
        echo = await client.dispatch_and_wait(chat, answer)
        assert "rejectionReason" not in echo
        end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
        assert end["action"]["type"] == "chat/turnComplete"
        assert (workdir / name).exists() is approved
    await client.assert_conforms(chat)


async def test_answering_a_call_that_is_not_waiting_is_refused(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    refusal = await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": "t",
            "toolCallId": "nope",
            "approved": True,
            "confirmed": "user-action",
        },
    )
    assert refusal["rejectionReason"] == "Tool call nope is not waiting for confirmation"


async def test_a_stop_ends_the_turn_for_every_client_at_once(server, connect, workdir):
    a = await connect(server.url)
    await a.initialize()
    uri, chat = await new_session(a, workdir)
    b = await connect(server.url)
    await b.initialize()
    await b.request("subscribe", {"channel": chat})
    action = await start_streaming(a, chat, "slow", watcher=b)
    stop = {"type": "chat/turnCancelled", "turnId": action["turnId"], "duration": 10}
    echo = await a.dispatch_and_wait(chat, stop)
    assert "rejectionReason" not in echo
    seen_by_b = await b.wait_action(lambda e: e["serverSeq"] == echo["serverSeq"])
    assert seen_by_b["action"]["type"] == "chat/turnCancelled"
    await a.settle()
    endings = [e for e in a.actions if ended(chat, action["turnId"])(e)]
    assert len(endings) == 1
    # Nothing more is said for the stopped turn.
    after = [
        e
        for e in b.actions
        if e["serverSeq"] > echo["serverSeq"]
        and e["channel"] == chat
        and e["action"].get("turnId") == action["turnId"]
    ]
    assert after == []
    await a.assert_conforms(chat)
    await b.assert_conforms(chat)
    # The chat takes its next turn.
    assert (await run_turn(a, chat, "again"))["action"]["type"] == "chat/turnComplete"


async def test_a_turn_sent_while_another_runs_takes_its_place_and_runs_next(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    first = turn("write replaced.txt never")
    await client.dispatch(chat, first)
    await client.wait_action(
        lambda e: (
            e["action"]["type"] == "chat/toolCallReady" and e["action"]["turnId"] == first["turnId"]
        ),
        timeout=30,
    )
    second = turn("hello again")
    echo = await client.dispatch_and_wait(chat, second)
    assert "rejectionReason" not in echo
    # The replaced turn's question can never be answered: it is declined, the turn runs on
    # (its actions name it) and the one that took its place runs next.
    end = await client.wait_action(ended(chat, second["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    assert not (workdir / "replaced.txt").exists()
    await client.assert_conforms(chat)
    state = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    assert [t["id"] for t in state["turns"]] == [second["turnId"]]


async def test_a_stop_of_the_turn_that_took_the_place_drops_the_one_behind_it(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    first = await start_streaming(client, chat, "slow")
    second = turn("never run")
    await client.dispatch_and_wait(chat, second)
    stop = {"type": "chat/turnCancelled", "turnId": second["turnId"], "duration": 1}
    assert "rejectionReason" not in await client.dispatch_and_wait(chat, stop)
    assert (await run_turn(client, chat, "after"))["action"]["type"] == "chat/turnComplete"
    state = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    assert first["turnId"] not in [t["id"] for t in state["turns"]]
    [stopped] = [t for t in state["turns"] if t["id"] == second["turnId"]]
    assert stopped["state"] == "cancelled" and stopped["responseParts"] == []
    await client.assert_conforms(chat)


async def test_two_clients_on_one_session_see_the_same_stream(server, connect, workdir):
    a = await connect(server.url)
    await a.initialize()
    uri, chat = await new_session(a, workdir)
    b = await connect(server.url)
    await b.initialize()
    await b.request("subscribe", {"channel": chat})
    end = await run_turn(a, chat, "shared words here")
    await b.wait_action(lambda e: e["serverSeq"] == end["serverSeq"])
    seq_a = [e["serverSeq"] for e in a.actions if e["channel"] == chat]
    seq_b = [e["serverSeq"] for e in b.actions if e["channel"] == chat]
    assert [s for s in seq_a if s in seq_b] == seq_b[-len([s for s in seq_a if s in seq_b]) :]
    await a.assert_conforms(chat)
    await b.assert_conforms(chat)


async def test_a_queued_message_set_while_idle_starts_a_turn(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/pendingMessageSet",
            "kind": "queued",
            "id": "q1",
            "message": message("from the queue"),
        },
    )
    started = await client.wait_action(
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/turnStarted"
            and e["action"].get("queuedMessageId") == "q1"
        )
    )
    await client.wait_action(ended(chat, started["action"]["turnId"]), timeout=30)
    await client.assert_conforms(chat)


async def test_steering_with_no_turn_running_runs_as_a_turn_of_its_own(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/pendingMessageSet",
            "kind": "steering",
            "id": "s1",
            "message": message("steer me"),
        },
    )
    started = await client.wait_action(
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/turnStarted"
            and e["action"].get("queuedMessageId") == "s1"
        )
    )
    await client.wait_action(ended(chat, started["action"]["turnId"]), timeout=30)
    await client.assert_conforms(chat)


async def test_steering_goes_into_the_running_turn(server, connect, workdir, model):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    action = turn("write steered.txt content")
    await client.dispatch(chat, action)
    ready = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallReady",
        timeout=30,
    )
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/pendingMessageSet",
            "kind": "steering",
            "id": "steer-1",
            "message": message("and also say steered"),
        },
    )
    await client.wait_action(
        lambda e: (
            e["action"]["type"] == "chat/pendingMessageRemoved" and e["action"]["id"] == "steer-1"
        )
    )
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": action["turnId"],
            "toolCallId": ready["action"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
        },
    )
    end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    sent = json.dumps(model.requests[-1]["messages"])
    assert "and also say steered" in sent
    await client.assert_conforms(chat)


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"provider": "nobody"}, -32002),
        ({"provider": "local", "activeClient": {"clientId": "someone-else", "tools": []}}, -32602),
        ({"provider": "local", "workingDirectories": ["/not/a/uri"]}, -32602),
    ],
)
async def test_create_session_refusals(server, connect, params, code):
    client = await connect(server.url)
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.request("createSession", {"channel": f"ahp-session:/{uuid.uuid4()}", **params})
    assert refused.value.code == code


async def test_a_session_uri_held_for_another_agent_is_already_exists(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, _ = await new_session(client, workdir)
    assert await client.request("createSession", {"channel": uri, "provider": "local"}) is None
    with pytest.raises(RpcError) as refused:
        await client.request("createSession", {"channel": uri, "provider": "other"})
    assert refused.value.code == -32003


async def test_list_sessions_pages_only_when_asked(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    for _ in range(3):
        _, chat = await new_session(client, workdir)
        await run_turn(client, chat, "listed")
    everything = (await client.request("listSessions", {"channel": ROOT}))["items"]
    assert "nextCursor" not in (await client.request("listSessions", {"channel": ROOT}))
    modified = [s["modifiedAt"] for s in everything]
    assert modified == sorted(modified, reverse=True)
    first = await client.request("listSessions", {"channel": ROOT, "limit": 2})
    assert len(first["items"]) == 2
    second = await client.request(
        "listSessions", {"channel": ROOT, "limit": 2, "cursor": first["nextCursor"]}
    )
    assert [s["resource"] for s in first["items"] + second["items"]] == [
        s["resource"] for s in everything
    ][: 2 + len(second["items"])]
    with pytest.raises(RpcError) as refused:
        await client.request("listSessions", {"channel": ROOT, "cursor": "bogus!"})
    assert refused.value.code == -32602


async def test_resolve_session_config_answers_the_backends_schema(server, connect):
    client = await connect(server.url)
    await client.initialize()
    result = await client.request(
        "resolveSessionConfig",
        {"channel": ROOT, "provider": "local", "config": {"permissionMode": "acceptEdits"}},
    )
    assert "permissionMode" in result["schema"]["properties"]
    assert result["values"]["permissionMode"] == "acceptEdits"


async def test_dispose_session_removes_it_for_everyone(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir)
    await run_turn(client, chat, "soon gone")
    assert await client.request("disposeSession", {"channel": uri}) is None
    await client.wait_for(
        lambda: any(
            m == "root/sessionRemoved" and p["session"] == uri for m, p in client.notifications
        )
    )
    with pytest.raises(RpcError) as refused:
        await client.request("subscribe", {"channel": uri})
    assert refused.value.code == -32001
    listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
    assert uri not in [s["resource"] for s in listed]


async def test_sessions_chats_and_turns_come_back_after_a_restart(server, connect, workdir, model):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir)
    await run_turn(client, chat, "remember the word banana")
    await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        listed = (await again.request("listSessions", {"channel": ROOT}))["items"]
        assert uri in [s["resource"] for s in listed]
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert state["turns"][0]["message"]["text"] == "remember the word banana"
        await again.request("subscribe", {"channel": uri})
        before = len(model.requests)
        end = await run_turn(again, chat, "what was the word")
        assert end["action"]["type"] == "chat/turnComplete"
        sent = json.dumps(model.requests[before]["messages"])
        assert "remember the word banana" in sent
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_create_chat_adds_a_chat_that_runs_its_first_message(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, default = await new_session(client, workdir)
    await run_turn(client, default, "first in default")
    chat = f"ahp-chat:/{uuid.uuid4()}"
    assert (
        await client.request(
            "createChat",
            {
                "channel": uri,
                "chat": chat,
                "title": "  Side work  ",
                "initialMessage": message("hello side"),
            },
        )
        is None
    )
    added = await client.wait_action(
        lambda e: e["channel"] == uri and e["action"]["type"] == "session/chatAdded"
    )
    assert added["action"]["summary"]["resource"] == chat
    assert added["action"]["summary"]["title"] == "Side work"
    # The first message was said as the chat was made, before anybody could subscribe to it.
    state = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    if state.get("activeTurn"):
        await client.wait_action(ended(chat, state["activeTurn"]["id"]), timeout=30)
    state = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    assert state["turns"][-1]["message"]["text"] == "hello side"
    assert state["turns"][-1]["state"] == "complete"
    await client.assert_conforms(uri)
    await client.assert_conforms(chat)

    with pytest.raises(RpcError) as refused:
        await client.request("createChat", {"channel": uri, "chat": chat})
    assert (refused.value.code, refused.value.message) == (-32010, f"Chat already exists: {chat}")

    assert await client.request("disposeChat", {"channel": chat}) is None
    await client.wait_action(
        lambda e: e["channel"] == uri and e["action"]["type"] == "session/chatRemoved"
    )
    with pytest.raises(RpcError):
        await client.request("subscribe", {"channel": chat})
    # The default chat is kept whatever asks.
    assert await client.request("disposeChat", {"channel": default}) is None
    assert (await client.request("subscribe", {"channel": default}))["snapshot"]["state"]["turns"]


async def test_a_fork_carries_the_turns_through_to_the_named_one(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, default = await new_session(client, workdir)
    first = await run_turn(client, default, "one")
    await run_turn(client, default, "two")
    fork = await fork_at(client, uri, default, first["action"]["turnId"])
    state = (await client.request("subscribe", {"channel": fork}))["snapshot"]["state"]
    assert [t["message"]["text"] for t in state["turns"]] == ["one"]
    assert state["title"] == "Forked: one"
    assert state["origin"]["kind"] == "fork"


async def test_a_chat_uri_of_another_scheme_is_refused_in_the_references_words(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, _ = await new_session(client, workdir)
    with pytest.raises(RpcError) as refused:
        await client.request("createChat", {"channel": uri, "chat": "other:/x"})
    assert refused.value.message == "Chat URI must use the ahp-chat scheme: other:/x"


async def test_at_completions_offer_the_files_under_the_working_directory(server, connect, workdir):
    (workdir / "src").mkdir(exist_ok=True)
    (workdir / "src" / "wanted_module.py").write_text("x = 1\n")
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    text = "look at @wanted"
    result = await client.request(
        "completions", {"channel": chat, "kind": "userMessage", "text": text, "offset": len(text)}
    )
    [item] = [i for i in result["items"] if "wanted_module" in i["insertText"]]
    assert item["insertText"] == "@src/wanted_module.py "
    assert item["attachment"]["uri"] == (workdir / "src" / "wanted_module.py").as_uri()
    assert (item["rangeStart"], item["rangeEnd"]) == (8, len(text))


async def test_the_default_chat_cannot_be_archived_on_its_own(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    refusal = await client.dispatch_and_wait(
        chat, {"type": "chat/isArchivedChanged", "isArchived": True}
    )
    assert refusal["rejectionReason"] == (
        "Only a known independently manageable non-default chat can be archived."
    )


def removed(session: str, client_id: str):
    return lambda e: (
        e["channel"] == session
        and e["action"]["type"] == "session/activeClientRemoved"
        and e["action"]["clientId"] == client_id
    )


async def test_a_client_that_unsubscribes_leaves_the_session(server, connect, workdir):
    a = await connect(server.url)
    await a.initialize()
    uri, chat = await new_session(a, workdir)
    watcher = await connect(server.url)
    await watcher.initialize()
    await watcher.request("subscribe", {"channel": uri})
    await a.notify("unsubscribe", {"channel": chat})
    await a.notify("unsubscribe", {"channel": uri})
    gone = await watcher.wait_action(removed(uri, a.client_id))
    assert "origin" not in gone
    await watcher.assert_conforms(uri)
    assert watcher.tracked[uri][0]["activeClients"] == []


async def test_a_dropped_client_leaves_after_the_grace_unless_it_comes_back(
    server, connect, workdir
):
    watcher = await connect(server.url)
    await watcher.initialize()
    sessions = []
    for _ in range(2):
        a = await connect(server.url)
        await a.initialize()
        uri, chat = await new_session(a, workdir)
        await watcher.request("subscribe", {"channel": uri})
        sessions.append((a, uri, chat))
    (gone_client, gone_uri, _), (back_client, back_uri, back_chat) = sessions
    # The one that comes back drops first, so its grace ends before the other's: once the
    # other's removal is seen, the one that came back has been judged too.
    await back_client.close()
    await gone_client.close()
    again = await connect(server.url, client_id=back_client.client_id)
    await again.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": back_client.client_id,
            "lastSeenServerSeq": back_client.last_seq,
            "subscriptions": [back_uri, back_chat],
        },
    )
    await watcher.wait_action(removed(gone_uri, gone_client.client_id), timeout=10)
    # The grace has passed for both; only the one that did not come back was taken out.
    await watcher.settle()
    assert not [e for e in watcher.actions if removed(back_uri, back_client.client_id)(e)]
    await watcher.assert_conforms(back_uri)
    assert watcher.tracked[back_uri][0]["activeClients"][0]["clientId"] == back_client.client_id


async def test_a_read_session_reads_unread_when_a_turn_ends(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir)
    await run_turn(client, chat, "first")
    await client.dispatch_and_wait(uri, {"type": "session/isReadChanged", "isRead": True})
    await client.dispatch_and_wait(chat, {"type": "chat/isReadChanged", "isRead": True})
    await run_turn(client, chat, "second")
    await client.assert_conforms(uri)
    await client.assert_conforms(chat)
    assert not client.tracked[uri][0]["status"] & 32
    assert not client.tracked[chat][0]["status"] & 32


async def test_a_truncation_rewinds_the_conversation_for_clients_store_and_model(
    server, connect, workdir, model
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    first = await run_turn(client, chat, "keep this one")
    await run_turn(client, chat, "drop this one")
    echo = await client.dispatch_and_wait(
        chat, {"type": "chat/truncated", "turnId": first["action"]["turnId"]}
    )
    assert "rejectionReason" not in echo
    await client.assert_conforms(chat)
    assert [t["message"]["text"] for t in client.tracked[chat][0]["turns"]] == ["keep this one"]
    before = len(model.requests)
    await run_turn(client, chat, "after the rewind")
    sent = json.dumps(model.requests[before]["messages"])
    assert "keep this one" in sent and "drop this one" not in sent
    await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert [t["message"]["text"] for t in state["turns"]] == [
            "keep this one",
            "after the rewind",
        ]
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_session_disposed_while_its_turn_runs_stays_gone_after_a_restart(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir)
    await start_streaming(client, chat, "slow")
    assert await client.request("disposeSession", {"channel": uri}) is None
    await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        listed = (await again.request("listSessions", {"channel": ROOT}))["items"]
        assert uri not in [s["resource"] for s in listed]
        with pytest.raises(RpcError):
            await again.request("subscribe", {"channel": uri})
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_attachments_reach_the_model_inlined_or_as_images(server, connect, model, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    (workdir / "plan.md").write_text("step one, step two")
    pipe = workdir / f"pipe-{uuid.uuid4().hex[:6]}"
    os.mkfifo(pipe)
    png = bytes([0x89, 0x50, 0x4E, 0x47, 0, 1, 2, 3])
    action = turn("what do these say?")
    action["message"]["attachments"] = [
        {"type": "resource", "uri": (workdir / "plan.md").as_uri(), "label": "plan.md"},
        {
            "type": "embeddedResource",
            "label": "dot.png",
            "data": base64.b64encode(png).decode(),
            "contentType": "image/png",
        },
        {"type": "resource", "uri": "file:///etc/passwd", "label": "passwd"},
        {"type": "resource", "uri": pipe.as_uri(), "label": "pipe"},
    ]
    await client.dispatch_and_wait(chat, action)
    end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    [asked] = [m for m in model.requests[-1]["messages"] if m["role"] == "user"][-1:]
    text, image = asked["content"]
    assert text["text"].startswith("what do these say?")
    assert '<attachment name="plan.md"' in text["text"] and "step one, step two" in text["text"]
    # Outside the fence: named, never read.
    assert "[attached: passwd (file:///etc/passwd), not read by the host]" in text["text"]
    assert "root:" not in text["text"]
    # A named pipe is never opened to be waited on: named, and the turn goes on.
    assert f"[attached: pipe ({pipe.as_uri()}), not read by the host]" in text["text"]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png).decode()
    kept = client.tracked[chat][0]["turns"][-1]["message"]["attachments"]
    assert [a["label"] for a in kept] == ["plan.md", "dot.png", "passwd", "pipe"]


async def test_a_session_naming_no_folder_works_in_the_first_served_folder(server, connect):
    # This module's server serves the checkout, then the temporary directory (AHPD_PATHS).
    client = await connect(server.url)
    await client.initialize()
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "local", "activeClient": {"clientId": client.client_id}},
    )
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert state["workingDirectories"] == [REPO.as_uri()]
