"""Sessions and chats: the table that holds them, their presence and their turns."""

from __future__ import annotations

from .live import LiveChat, LiveSession
from .presence import Presence
from .table import Sessions
from .turns import Turns

__all__ = ["LiveChat", "LiveSession", "Presence", "Sessions", "Turns"]
