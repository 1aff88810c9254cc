"""subscribe, unsubscribe and the dispatchAction pipeline, over a real socket."""

from __future__ import annotations

import uuid

import pytest

from tests.support.client import RpcError

ROOT = "ahp-root://"


def config_push(**values: object) -> dict[str, object]:
    return {"type": "root/configChanged", "config": values}


def fresh() -> str:
    return uuid.uuid4().hex


async def two_watchers(server, connect):
    a = await connect(server.url)
    b = await connect(server.url)
    await a.initialize()
    await b.initialize()
    return a, b


async def test_subscribe_answers_a_snapshot_taken_at_the_current_server_seq(server, connect):
    client = await connect(server.url)
    init = await client.initialize(subscriptions=[])
    result = await client.request("subscribe", {"channel": ROOT})
    assert result["snapshot"]["resource"] == ROOT
    assert result["snapshot"]["fromSeq"] >= init["serverSeq"]


@pytest.mark.parametrize("spelling", ["ahp-root:", "ahp-root:///"])
async def test_the_root_is_answered_as_ahp_root_whatever_spelling_asked(server, connect, spelling):
    client = await connect(server.url)
    await client.initialize(subscriptions=[])
    result = await client.request("subscribe", {"channel": spelling})
    assert result["snapshot"]["resource"] == ROOT


@pytest.mark.parametrize("uri", ["ahp-session:/nope", "ahp-chat:/nope", "ahp-terminal:/nope"])
async def test_a_channel_nobody_has_is_refused_minus_32001(server, connect, uri):
    client = await connect(server.url)
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.request("subscribe", {"channel": uri})
    assert refused.value.code == -32001
    assert refused.value.message == f"Resource not found: {uri}"


async def test_an_accepted_action_goes_to_every_watcher_with_the_senders_origin(server, connect):
    a, b = await two_watchers(server, connect)
    value = fresh()
    echo = await a.dispatch_and_wait(ROOT, config_push(**{"x-test": value}))
    assert "rejectionReason" not in echo
    assert echo["origin"]["clientId"] == a.client_id
    seen_by_b = await b.wait_action(lambda e: e["serverSeq"] == echo["serverSeq"])
    assert seen_by_b == echo
    await a.assert_conforms(ROOT)
    await b.assert_conforms(ROOT)
    snapshot = (await b.request("subscribe", {"channel": ROOT}))["snapshot"]
    assert snapshot["state"]["config"]["values"]["x-test"] == value


async def test_server_seq_strictly_increases_across_envelopes(server, connect):
    a, b = await two_watchers(server, connect)
    seqs = []
    for _ in range(5):
        seqs.append(
            (await a.dispatch_and_wait(ROOT, config_push(**{"x-seq": fresh()})))["serverSeq"]
        )
    assert seqs == sorted(seqs) and len(set(seqs)) == 5


async def test_a_push_that_changes_nothing_is_said_back_to_its_sender_alone(server, connect):
    a, b = await two_watchers(server, connect)
    push = config_push(**{"x-same": fresh()})
    first = await a.dispatch_and_wait(ROOT, push)
    await b.wait_action(lambda e: e["serverSeq"] == first["serverSeq"])
    # The sender waits for its echo as for any dispatch; nobody else is moved by a window
    # mirroring its settings.
    again = await a.dispatch_and_wait(ROOT, push)
    assert "rejectionReason" not in again
    assert again["serverSeq"] > first["serverSeq"] and again["action"] == push
    marker = await a.dispatch_and_wait(ROOT, config_push(**{"x-after": fresh()}))
    await b.wait_action(lambda e: e["serverSeq"] == marker["serverSeq"])
    assert again["serverSeq"] not in [e["serverSeq"] for e in b.actions]
    await a.assert_conforms(ROOT)
    await b.assert_conforms(ROOT)


async def test_the_echo_of_a_push_that_changes_nothing_is_replayed_to_its_sender_alone(
    server, connect
):
    a, b = await two_watchers(server, connect)
    push = config_push(**{"x-replayed": fresh()})
    await a.dispatch_and_wait(ROOT, push)
    start = a.last_seq
    again = await a.dispatch_and_wait(ROOT, push)
    await b.settle()
    answers = []
    for client_id in (a.client_id, b.client_id):
        back = await connect(server.url, client_id=client_id)
        answers.append(
            await back.request(
                "reconnect",
                {"clientId": client_id, "lastSeenServerSeq": start, "subscriptions": [ROOT]},
            )
        )
    mine, theirs = answers
    assert mine["type"] == theirs["type"] == "replay"
    assert again["serverSeq"] in [e["serverSeq"] for e in mine["actions"]]
    assert again["serverSeq"] not in [e["serverSeq"] for e in theirs["actions"]]


async def test_a_refused_action_takes_the_next_server_seq_and_changes_nothing(server, connect):
    a, b = await two_watchers(server, connect)
    before = (await a.request("subscribe", {"channel": ROOT}))["snapshot"]
    refusal = await a.dispatch_and_wait(ROOT, config_push(clientQueueBytes=10))
    assert refusal["rejectionReason"] == (
        "clientQueueBytes must be 0 (no limit) or at least 1048576 bytes"
    )
    assert refusal["serverSeq"] > before["fromSeq"]
    assert await b.wait_action(lambda e: e["serverSeq"] == refusal["serverSeq"])
    after = (await a.request("subscribe", {"channel": ROOT}))["snapshot"]
    assert after["state"] == before["state"]
    await b.assert_conforms(ROOT)


@pytest.mark.parametrize(
    "action_type", ["root/agentsChanged", "root/activeSessionsChanged", "x/unknown"]
)
async def test_an_action_a_client_may_not_send_is_refused_server_only(server, connect, action_type):
    a, _ = await two_watchers(server, connect)
    refusal = await a.dispatch_and_wait(ROOT, {"type": action_type, "agents": []})
    assert refusal["rejectionReason"] == f"Server-only action: {action_type}"


async def test_an_action_of_another_channel_kind_is_refused(server, connect):
    a, _ = await two_watchers(server, connect)
    refusal = await a.dispatch_and_wait(ROOT, {"type": "session/titleChanged", "title": "t"})
    assert "rejectionReason" in refusal


@pytest.mark.parametrize(
    ("channel", "action", "reason"),
    [
        (
            "ahp-session:/ghost",
            {"type": "session/titleChanged", "title": "x"},
            "Session not found: ahp-session:/ghost",
        ),
        (
            "ahp-session:/ghost",
            {"type": "session/activeClientSet", "activeClient": {"clientId": "c", "tools": []}},
            "No agent for session: ahp-session:/ghost",
        ),
        (
            "ahp-chat:/ghost",
            {"type": "chat/isReadChanged", "isRead": True},
            "Only a known chat can change its read state.",
        ),
        (
            "ahp-chat:/ghost",
            {"type": "chat/isArchivedChanged", "isArchived": True},
            "Only a known independently manageable non-default chat can be archived.",
        ),
        (
            "ahp-chat:/ghost",
            {"type": "chat/workingDirectorySet", "directory": "file:///tmp"},
            "Unsupported action: chat/workingDirectorySet",
        ),
    ],
)
async def test_an_action_naming_nothing_here_is_refused_in_the_references_words(
    server, connect, channel, action, reason
):
    a, _ = await two_watchers(server, connect)
    refusal = await a.dispatch_and_wait(channel, action)
    assert refusal["rejectionReason"] == reason
    assert refusal["channel"] == channel


@pytest.mark.parametrize("action_type", ["session/isReadChanged", "session/isArchivedChanged"])
async def test_a_read_or_archive_toggle_on_an_unknown_session_is_dropped(
    server, connect, action_type
):
    a, _ = await two_watchers(server, connect)
    key = "isRead" if action_type.endswith("isReadChanged") else "isArchived"
    seq = await a.dispatch("ahp-session:/ghost", {"type": action_type, key: True})
    await a.settle()
    assert not [e for e in a.actions if (e.get("origin") or {}).get("clientSeq") == seq]


async def test_another_chat_action_on_an_unknown_chat_is_said_back_and_kept_nowhere(
    server, connect
):
    a, _ = await two_watchers(server, connect)
    draft = {"type": "chat/draftChanged", "draft": {"text": "hi", "origin": {"kind": "user"}}}
    echo = await a.dispatch_and_wait("ahp-chat:/ghost", draft)
    assert "rejectionReason" not in echo
    assert echo["channel"] == "ahp-chat:/ghost"
    with pytest.raises(RpcError):
        await a.request("subscribe", {"channel": "ahp-chat:/ghost"})


async def test_one_subscription_per_channel_per_connection(server, connect):
    a, b = await two_watchers(server, connect)
    await b.request("subscribe", {"channel": ROOT})
    await b.request("subscribe", {"channel": ROOT})
    echo = await a.dispatch_and_wait(ROOT, config_push(**{"x-once": fresh()}))
    await b.settle()
    assert len([e for e in b.actions if e["serverSeq"] == echo["serverSeq"]]) == 1


async def test_unsubscribe_stops_delivery_to_that_connection_only(server, connect):
    a, b = await two_watchers(server, connect)
    c = await connect(server.url)
    await c.initialize()
    await b.notify("unsubscribe", {"channel": ROOT})
    await b.settle()
    echo = await a.dispatch_and_wait(ROOT, config_push(**{"x-unsub": fresh()}))
    await c.wait_action(lambda e: e["serverSeq"] == echo["serverSeq"])
    await b.settle()
    assert not [e for e in b.actions if e["serverSeq"] == echo["serverSeq"]]


async def test_the_sender_is_told_of_its_refusal_even_when_it_watches_no_such_channel(
    server, connect
):
    a = await connect(server.url)
    await a.initialize(subscriptions=[])
    refusal = await a.dispatch_and_wait(ROOT, config_push(replayBytes=5))
    assert "replayBytes" in refusal["rejectionReason"]
