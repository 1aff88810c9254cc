"""What hears a turn begin and end beside the turn itself (a changeset keeps the tree it
found and left): `starting` is awaited before the turn's agent runs, `ended` told after."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .live_session import LiveChat


async def _nothing(chat: LiveChat, turn_id: str) -> None:
    return None


@dataclass
class TurnHooks:
    starting: Callable[[LiveChat, str], Awaitable[None]] = _nothing
    ended: Callable[[LiveChat, str], None] = lambda chat, turn_id: None
