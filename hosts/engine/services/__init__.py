"""Services: what a socket command, a REST view or a Celery task asks the engine to do.

Each `do_*` function checks the caller's grants (and ownership) itself, once, validates what it
is given before anything changes, changes state and says what changed. Callers parse, call one
of these, and answer. `perform` is how a caller outside the engine's loop (REST, a task)
reaches one: by name, through the placement seam.
"""

from __future__ import annotations

from .caller import Caller
from .chats import do_create_chat, do_dispose_chat, do_fetch_turns
from .flags import do_set_flag
from .sessions import Created, do_create_session, do_dispose_session
from .turns import (
    do_cancel_session,
    do_cancel_turn,
    do_send_message,
    do_send_to_session,
    do_start_turn,
)

__all__ = [
    "Caller",
    "Created",
    "do_cancel_session",
    "do_cancel_turn",
    "do_create_chat",
    "do_create_session",
    "do_dispose_chat",
    "do_dispose_session",
    "do_fetch_turns",
    "do_send_message",
    "do_send_to_session",
    "do_set_flag",
    "do_start_turn",
]
