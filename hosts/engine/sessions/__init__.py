"""Sessions and chats: the table that holds them, their presence, their turns and
which of their agents keep running."""

from __future__ import annotations

from .live_session import LiveChat, LiveSession
from .presence import Presence
from .running_agents import RunningAgents
from .session_table import Sessions
from .turns import Turns

__all__ = ["LiveChat", "LiveSession", "Presence", "RunningAgents", "Sessions", "Turns"]
