"""The turns a chat kept, given to a new agent session: the text, and the agent receiving it."""

from __future__ import annotations

import json
from dataclasses import replace

from hosts.backends.acp import AcpChat
from hosts.backends.acp.history import INTRO, earlier_conversation
from tests.support.fake_acp import CONFIG, OpenChat, turn
from tests.support.recording_events import RecordingEvents


def test_the_kept_turns_are_given_oldest_first_each_said_by_its_side() -> None:
    text = earlier_conversation(
        [
            {"user": "first question", "assistant": "first answer"},
            {"user": "second\nquestion", "assistant": "second answer"},
        ]
    )

    assert text == (
        f"{INTRO}\n\n<earlier_conversation>\n"
        "<user>\nfirst question\n</user>\n<assistant>\nfirst answer\n</assistant>\n\n"
        "<user>\nsecond\nquestion\n</user>\n<assistant>\nsecond answer\n</assistant>\n"
        "</earlier_conversation>"
    )


def test_an_empty_side_is_left_out_and_nothing_said_gives_nothing() -> None:
    assert earlier_conversation([{"user": "only asked", "assistant": ""}]) == (
        f"{INTRO}\n\n<earlier_conversation>\n<user>\nonly asked\n</user>\n</earlier_conversation>"
    )
    assert earlier_conversation([]) is None
    assert earlier_conversation([{"user": "", "assistant": ""}, {}]) is None


# -- the kept turns of a chat that starts a new agent session ------------------------------------

KEPT = [
    {"user": "remember apples", "assistant": "echo: remember apples"},
    {"user": "and pears", "assistant": "echo: and pears"},
]


async def heard(chat: AcpChat) -> list[list[str]]:
    """Every prompt of the chat's agent session, as the text blocks the agent received."""
    events = RecordingEvents()
    assert (await turn(chat, "heard", events)).state == "complete"
    prompts: list[list[str]] = json.loads(events.texts().removeprefix("heard: "))
    return prompts


async def test_a_new_session_for_kept_turns_gets_them_on_its_first_prompt_once(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat(history=KEPT)

    first = await heard(chat)
    second = await heard(chat)

    assert first == [[earlier_conversation(KEPT), "heard"]]
    seed = first[0][0]
    assert "<user>\nremember apples\n</user>" in seed
    assert "<assistant>\necho: and pears\n</assistant>" in seed
    assert second[1:] == [["heard"]]


async def test_a_chat_without_kept_turns_prompts_with_the_message_alone(
    open_acp_chat: OpenChat,
) -> None:
    assert await heard(await open_acp_chat()) == [["heard"]]


async def test_a_loaded_session_is_not_given_the_kept_turns_again(open_acp_chat: OpenChat) -> None:
    first = await open_acp_chat(history=KEPT)
    await turn(first, "hello")
    await first.close()

    kept = [*KEPT, {"user": "hello", "assistant": "echo: hello"}]
    again = await open_acp_chat(backend_id=first.backend_id, history=kept)
    prompts = await heard(again)

    assert again.backend_id == first.backend_id
    assert prompts == [[earlier_conversation(KEPT), "hello"], ["heard"]]


async def test_a_session_the_agent_lost_starts_again_with_the_kept_turns(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat(backend_id="fake-lost", history=KEPT)

    prompts = await heard(chat)

    assert chat.backend_id != "fake-lost"
    assert prompts == [[earlier_conversation(KEPT), "heard"]]


async def test_an_agent_that_cannot_load_is_given_the_turns_so_far_after_a_crash(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat(replace(CONFIG, env={"FAKE_ACP_NO_LOAD": "1"}), history=KEPT[:1])
    await turn(chat, "remember kiwis")
    session = chat.backend_id
    assert (await turn(chat, "crash")).state == "error"

    prompts = await heard(chat)

    assert chat.backend_id != session
    so_far = [*KEPT[:1], {"user": "remember kiwis", "assistant": "echo: remember kiwis"}]
    assert prompts == [[earlier_conversation(so_far), "heard"]]
