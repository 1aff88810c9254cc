"""Reducer for ``ChatState`` (``ahp-chat:`` channels).

Port of ``types/channels-chat/reducer.ts`` as of protocol 1.0. This module is
the chat's action table; what each action does lives by concern:

- ``chat_turns``: a turn starting, its usage, its ending, resuming, the history;
- ``chat_response_parts``: text, reasoning, parts and tool calls streaming in;
- ``chat_tool_calls``: the tool-call state machine those updates move through;
- ``chat_input_requests``: questions put to the user and their answers;
- ``chat_pending_messages``: the steering message and the queue;
- ``chat_active_turn``: the active turn's parts and the status derived from them.

The chat's summary fields (status, modifiedAt, activity, ...) sit directly on
the state; those a session has too are set by the handlers both share
(``summary_actions``). Only the turn actions read the ``now_ms`` clock.
"""

from __future__ import annotations

from . import chat_tool_calls as tool_call
from ._action_table import (
    ActionTable,
    removes_item,
    sets_field,
    sets_item,
    summary_actions,
    table_reducer,
)
from .chat_active_turn import refreshes_status
from .chat_input_requests import input_answer_changed, input_completed, input_requested
from .chat_pending_messages import (
    pending_message_removed,
    pending_message_set,
    queued_messages_reordered,
)
from .chat_response_parts import (
    appends_to_part,
    part_added,
    tool_call_started,
    updates_tool_call,
)
from .chat_turns import (
    truncated,
    turn_cancelled,
    turn_completed,
    turn_failed,
    turn_resumed,
    turn_started,
    turns_loaded,
    usage_reported,
)

CHAT_ACTIONS: ActionTable = {
    # Turn lifecycle.
    "chat/turnStarted": turn_started,
    "chat/turnComplete": turn_completed,
    "chat/turnCancelled": turn_cancelled,
    "chat/error": turn_failed,
    "chat/turnResume": turn_resumed,
    "chat/truncated": truncated,
    "chat/turnsLoaded": turns_loaded,
    # Streaming content.
    "chat/delta": appends_to_part("markdown"),
    "chat/reasoning": appends_to_part("reasoning"),
    "chat/responsePart": part_added,
    "chat/usage": usage_reported,
    # Tool calls. Those that can enter or leave a blocking status (waiting on
    # a confirmation or on authentication) derive the chat status again.
    "chat/toolCallStart": tool_call_started,
    "chat/toolCallDelta": updates_tool_call(tool_call.delta),
    "chat/toolCallContentChanged": updates_tool_call(tool_call.content_changed),
    "chat/toolCallReady": refreshes_status(updates_tool_call(tool_call.ready)),
    "chat/toolCallConfirmed": refreshes_status(updates_tool_call(tool_call.confirmed)),
    "chat/toolCallComplete": refreshes_status(updates_tool_call(tool_call.completed)),
    "chat/toolCallResultConfirmed": refreshes_status(updates_tool_call(tool_call.result_confirmed)),
    "chat/toolCallAuthRequired": refreshes_status(updates_tool_call(tool_call.auth_required)),
    "chat/toolCallAuthResolved": refreshes_status(updates_tool_call(tool_call.auth_resolved)),
    # Input requests.
    "chat/inputRequested": input_requested,
    "chat/inputAnswerChanged": input_answer_changed,
    "chat/inputCompleted": input_completed,
    # Pending messages and draft.
    "chat/pendingMessageSet": pending_message_set,
    "chat/pendingMessageRemoved": pending_message_removed,
    "chat/queuedMessagesReordered": queued_messages_reordered,
    "chat/draftChanged": sets_field("draft"),
    # The chat's own fields, with the summary fields it shares with a session
    # (read, archived, activity, changesets, working directories).
    **summary_actions("chat"),
    "chat/movableChanged": sets_field("movable"),
    "chat/canvasesChanged": sets_field("canvases"),
    "chat/backgroundWorkSet": sets_item("backgroundWork", source="work", key="id"),
    "chat/backgroundWorkRemoved": removes_item("backgroundWork", key="id", source="id"),
}


reduce_chat = table_reducer(CHAT_ACTIONS)
