"""One turn's state while the agent works on a prompt, and how the agent's answer ends it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hosts.backends.base import PermissionAnswer, TurnEnd, TurnEvents

from .updates import ClientCalls, ShownTerminals, TurnUpdates


@dataclass(slots=True)
class Turn:
    events: TurnEvents
    turn_id: str | None = None
    #: The chat's terminals, which a tool call's content may name.
    terminals: ShownTerminals | None = None
    #: The session's clients' tools, whose calls the agent's rows may be.
    client_calls: ClientCalls | None = None
    updates: TurnUpdates = field(init=False)
    #: Permission questions waiting for a person; cancel answers them.
    questions: set[asyncio.Future[PermissionAnswer]] = field(default_factory=set)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.updates = TurnUpdates(
            self.events, terminals=self.terminals, client_calls=self.client_calls
        )


def ending(stop_reason: str, *, cancelled: bool, name: str) -> TurnEnd:
    """The end of a turn whose `session/prompt` the agent answered with `stop_reason`."""
    if cancelled or stop_reason == "cancelled":
        return TurnEnd("cancelled")
    if stop_reason == "refusal":
        return TurnEnd("error", f"{name} refused to continue.")
    if stop_reason == "max_tokens":
        return TurnEnd("complete", "The reply was cut off at the model's token limit.")
    if stop_reason == "max_turn_requests":
        return TurnEnd("complete", "The agent stopped at its limit of requests for one turn.")
    return TurnEnd("complete")
