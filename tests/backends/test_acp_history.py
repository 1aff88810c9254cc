"""The text that gives a new agent session the turns its chat kept."""

from __future__ import annotations

from hosts.backends.acp.history import INTRO, earlier_conversation


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
