"""The kept turns of a chat, handed to an agent conversation that starts without them.

A fork, or a chat rewound by a truncation, goes on in a new agent session: the agent has no
record of the turns the chat kept, though the person sees them. So the first prompt of that
session carries them in a leading text block, once, plainly marked as what was already said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

INTRO = (
    "This conversation continues an earlier one that you have no record of: it was carried "
    "over from another session (a fork, or a rewind to an earlier turn). What was said so far "
    "is below, oldest first. Take it as already said between us, not as new requests; the "
    "person's new message follows it."
)


def earlier_conversation(history: Sequence[Mapping[str, str]]) -> str | None:
    """The earlier turns ({"user", "assistant"}, oldest first) as one text; None when empty."""
    exchanges: list[str] = []
    for turn in history:
        parts = [
            f"<{role}>\n{text}\n</{role}>"
            for role in ("user", "assistant")
            if (text := turn.get(role) or "")
        ]
        if parts:
            exchanges.append("\n".join(parts))
    if not exchanges:
        return None
    joined = "\n\n".join(exchanges)
    return f"{INTRO}\n\n<earlier_conversation>\n{joined}\n</earlier_conversation>"
