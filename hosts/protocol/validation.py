"""Client input, checked before anything reaches state: command params and action shapes.

A command's bad param is refused -32602 naming its field (`ProtocolError`); an action's bad
shape is a reason (`str`) the dispatch pipeline says as the refusal envelope's
rejectionReason. Each shape rule is written here once, for every entry point that takes it
(the socket's dispatch and commands, the REST API).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import invalid_params
from .limits import MAX_ID_LENGTH, MAX_SAFE_INTEGER, MAX_URI_LENGTH

# -- command params ------------------------------------------------------------------------


def required_str(params: Mapping[str, Any], method: str, name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str):
        raise invalid_params(f"{method}: {name} must be a string")
    return value


def optional_str_list(params: Mapping[str, Any], method: str, name: str) -> list[str]:
    value = params.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_params(f"{method}: {name} must be a list of URI strings")
    return value


def required_str_list(params: Mapping[str, Any], method: str, name: str) -> list[str]:
    if name not in params:
        raise invalid_params(f"{method}: {name} is required")
    return optional_str_list(params, method, name)


def required_int(params: Mapping[str, Any], method: str, name: str) -> int:
    """An integer a client can hold exactly (within +-MAX_SAFE_INTEGER); 3.0 is 3."""
    value = params.get(name)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
        or value != int(value)
    ):
        raise invalid_params(f"{method}: {name} must be an integer of at most 2^53 - 1")
    return int(value)


def optional_bool(
    params: Mapping[str, Any], method: str, name: str, *, default: bool = False
) -> bool:
    """A flag a client may leave out (`default`)."""
    value = params.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid_params(f"{method}: {name} must be true or false")
    return value


def optional_str(params: Mapping[str, Any], method: str, name: str) -> str | None:
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise invalid_params(f"{method}: {name} must be a string")
    return value


def optional_choice(
    params: Mapping[str, Any], method: str, name: str, choices: tuple[str, ...]
) -> str | None:
    """One of `choices`, or None when left out."""
    value = params.get(name)
    if value is not None and value not in choices:
        raise invalid_params(f"{method}: {name} must be one of {', '.join(choices)}")
    return value


def optional_offset(params: Mapping[str, Any], method: str, name: str) -> int:
    """A byte offset a client may leave out (0): an integer from 0 to 2^53 - 1."""
    if params.get(name) is None:
        return 0
    value = required_int(params, method, name)
    if value < 0:
        raise invalid_params(f"{method}: {name} must not be negative")
    return value


def checked_uri(uri: str, what: str) -> str:
    """A URI naming a session or a chat this host will keep: one the store can key."""
    if len(uri) > MAX_URI_LENGTH:
        raise invalid_params(f"{what} is longer than {MAX_URI_LENGTH} characters")
    return uri


def positive_int(value: Any, method: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid_params(f"{method}: {name} must be a positive integer")
    return value


#: A pty's rows and columns are unsigned shorts.
MAX_TERMINAL_SIZE = 65535


def terminal_size(value: Any, method: str, name: str, default: int) -> int:
    """A terminal's cols or rows: 1 to 65535, `default` where none is given."""
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TERMINAL_SIZE:
        raise invalid_params(f"{method}: {name} must be an integer from 1 to {MAX_TERMINAL_SIZE}")
    return value


def terminal_claim_problem(claim: Any) -> str | None:
    """Why `claim` is no TerminalClaim (a client's, or a session's chat's), or None."""
    if not isinstance(claim, dict):
        return "claim must be a TerminalClaim object"
    kind = claim.get("kind")
    if kind == "client":
        if not isinstance(claim.get("clientId"), str) or not claim["clientId"]:
            return "a client's claim names its clientId"
        return None
    if kind == "session":
        for key in ("session", "chat"):
            if not isinstance(claim.get(key), str) or not claim[key]:
                return f"a session's claim names its {key}"
        for key in ("turnId", "toolCallId"):
            if claim.get(key) is not None and not isinstance(claim[key], str):
                return f"a session's claim's {key} must be a string"
        return None
    return "claim must be a client's or a session's"


def working_directories(value: Any, method: str) -> list[str]:
    """A session's working folders: a list of file: URIs, one at the most (none: unnamed)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(d, str) for d in value):
        raise invalid_params(f"{method}: workingDirectories must be a list of URI strings")
    for uri in value:
        if not uri.startswith("file:"):
            raise invalid_params(f"{method}: a working directory must be a file: URI: {uri}")
    if len(value) > 1:
        raise invalid_params(f"{method}: the agents here work in one directory")
    return value


def config_object(value: Any, method: str) -> dict[str, Any]:
    """Session config values a client chose: an object (none: nothing chosen)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_params(f"{method}: config must be an object")
    return value


def active_client(value: Any, method: str, client_id: str | None) -> dict[str, Any] | None:
    """A createSession's activeClient: this client's own, with a tools list."""
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("clientId") != client_id:
        raise invalid_params(
            f"{method}: activeClient.clientId must be this client's id ({client_id})"
        )
    if not isinstance(value.get("tools", []), list):
        raise invalid_params(f"{method}: activeClient.tools must be a list")
    return {"tools": [], **value}


def chat_source(value: Any) -> dict[str, Any] | None:
    """A createChat's source: a fork or a side chat of a chat at a turn."""
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("kind") not in ("fork", "sideChat"):
        raise invalid_params("createChat: source must be a fork or a sideChat")
    return value


def move_destination(value: Any) -> tuple[str | None, str | None]:
    """A moveChat's destination: (the session named, the anchor after which to place the chat)
    for a session destination, (None, None) for a new session."""
    if not isinstance(value, dict) or value.get("kind") not in ("session", "newSession"):
        raise invalid_params("moveChat: destination must be a session or a newSession")
    if value["kind"] == "newSession":
        return None, None
    session = value.get("session")
    if not isinstance(session, str) or not session:
        raise invalid_params("moveChat: destination.session must be a session URI")
    after = value.get("after")
    if after is not None and not isinstance(after, str):
        raise invalid_params("moveChat: destination.after must be a chat URI")
    return session, after


def completion_request(params: Mapping[str, Any]) -> tuple[str, int]:
    """A completions request's text and the offset in it that is being completed."""
    text = params.get("text")
    offset = params.get("offset")
    if not isinstance(text, str):
        raise invalid_params("completions: text must be a string")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= len(text):
        raise invalid_params("completions: offset must be a position in text")
    if params.get("kind") != "userMessage":
        raise invalid_params("completions: kind must be userMessage")
    return text, offset


# -- messages ------------------------------------------------------------------------------


def user_message_problem(message: Any, where: str) -> str | None:
    """Why `message` is not a Message a client may send (the user's, with a text), or None."""
    if not isinstance(message, dict):
        return f"{where}: message must be a Message object"
    if (message.get("origin") or {}).get("kind") != "user":
        return f"{where}: a client may only send a message whose origin is the user"
    if not isinstance(message.get("text"), str):
        return f"{where}: message must have a text"
    return None


def text_message_problem(text: Any) -> str | None:
    """Why a plain-text message (the REST API's) cannot be sent, or None."""
    if not isinstance(text, str) or not text.strip():
        return "message must be a non-empty string"
    return None


# -- actions -------------------------------------------------------------------------------

ShapeCheck = Callable[[Mapping[str, Any]], "str | None"]


def _field(
    key: str, kind: type | tuple[type, ...], says: str, *, optional: bool = False
) -> ShapeCheck:
    """`key` must hold a `kind` (a boolean is no number); an optional one may be absent."""

    def check(action: Mapping[str, Any]) -> str | None:
        value = action.get(key)
        if optional and value is None:
            return None
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            return f"{action['type']}: {key} {says}"
        return None

    return check


def _all(*checks: ShapeCheck) -> ShapeCheck:
    def check(action: Mapping[str, Any]) -> str | None:
        for one in checks:
            reason = one(action)
            if reason is not None:
                return reason
        return None

    return check


def _turn_started(action: Mapping[str, Any]) -> str | None:
    if not isinstance(action.get("turnId"), str) or not action["turnId"]:
        return "chat/turnStarted: turnId must be a non-empty string"
    if len(action["turnId"]) > MAX_ID_LENGTH:
        return f"chat/turnStarted: turnId is longer than {MAX_ID_LENGTH} characters"
    message = action.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("text"), str):
        return "chat/turnStarted: message must be a Message with a text"
    reason = user_message_problem(message, "chat/turnStarted")
    if reason is not None:
        return reason
    if not isinstance(action.get("startedAt"), str):
        return "chat/turnStarted: startedAt must be an ISO-8601 string"
    return None


def _pending_message_set(action: Mapping[str, Any]) -> str | None:
    if action.get("kind") not in ("queued", "steering") or not isinstance(action.get("id"), str):
        return "chat/pendingMessageSet: kind must be queued or steering, with an id"
    message = action.get("message")
    if not isinstance(message, dict) or (message.get("origin") or {}).get("kind") != "user":
        return "chat/pendingMessageSet: message must be the user's"
    if not isinstance(message.get("text"), str):
        return "chat/pendingMessageSet: message must have a text"
    return None


def _terminal_resized(action: Mapping[str, Any]) -> str | None:
    for key in ("cols", "rows"):
        value = action.get(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return f"terminal/resized: {key} must be an integer"
        if not 1 <= value <= MAX_TERMINAL_SIZE:
            return f"terminal/resized: {key} must be from 1 to {MAX_TERMINAL_SIZE}"
    return None


def _terminal_claimed(action: Mapping[str, Any]) -> str | None:
    problem = terminal_claim_problem(action.get("claim"))
    return f"terminal/claimed: {problem}" if problem is not None else None


def _active_client_set(action: Mapping[str, Any]) -> str | None:
    client = action.get("activeClient")
    if not isinstance(client, dict) or not isinstance(client.get("tools", []), list):
        return "session/activeClientSet: activeClient must be an object with a tools list"
    return None


def _ids(key: str) -> ShapeCheck:
    """`key` must hold a list of strings (file ids)."""

    def check(action: Mapping[str, Any]) -> str | None:
        value = action.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"{action['type']}: {key} must be a list of strings"
        return None

    return check


def _entry_problem(entry: Any, where: str) -> str | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
        return f"{where} must be an object with a non-empty string id"
    text = entry.get("text")
    if not isinstance(text, str) and not (
        isinstance(text, dict) and isinstance(text.get("markdown"), str)
    ):
        return f"{where}: text must be a string or {{markdown: string}}"
    return None


def _annotation_set(action: Mapping[str, Any]) -> str | None:
    annotation = action.get("annotation")
    where = "annotations/set: annotation"
    if not isinstance(annotation, dict) or not isinstance(annotation.get("id"), str):
        return f"{where} must be an object with a string id"
    if not annotation["id"] or len(annotation["id"]) > MAX_ID_LENGTH:
        return f"{where}: id must be 1 to {MAX_ID_LENGTH} characters"
    if not isinstance(annotation.get("resource"), str):
        return f"{where}: resource must be a URI string"
    origin = annotation.get("origin")
    if not isinstance(origin, dict) or not isinstance(origin.get("session"), str):
        return f"{where}: origin must be an object naming its session"
    entries = annotation.get("entries")
    if not isinstance(entries, list):
        return f"{where}: entries must be a list"
    for index, entry in enumerate(entries):
        reason = _entry_problem(entry, f"{where}: entries[{index}]")
        if reason is not None:
            return reason
    return None


def _entry_set(action: Mapping[str, Any]) -> str | None:
    return _entry_problem(action.get("entry"), "annotations/entrySet: entry")


_BOOLEAN = "must be a boolean"
_ANNOTATION_ID = _field("annotationId", str, "must be a string")

_ENABLEMENT_KINDS = ("global", "workspace", "session")


def _enablement(action: Mapping[str, Any]) -> str | None:
    """A list of CustomizationEnablement decisions: a kind, a boolean, a workspace's uri."""
    decisions = action.get("enablement")
    where = f"{action['type']}: enablement"
    if not isinstance(decisions, list):
        return f"{where} must be a list of decisions"
    for n, decision in enumerate(decisions):
        if not isinstance(decision, dict) or decision.get("kind") not in _ENABLEMENT_KINDS:
            return f"{where}[{n}].kind must be one of {', '.join(_ENABLEMENT_KINDS)}"
        if not isinstance(decision.get("enabled"), bool):
            return f"{where}[{n}].enabled {_BOOLEAN}"
        if decision["kind"] == "workspace" and not isinstance(decision.get("uri"), str):
            return f"{where}[{n}].uri must be a URI string for a workspace decision"
    return None


# -- questions and a client's tool calls ------------------------------------------------------

#: What an answer value of each kind the protocol lists must carry as its `value`; a kind it
#: does not list is taken (the kinds are @nonexhaustive).
_ANSWER_VALUES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "text": (lambda v: isinstance(v, str), "a string"),
    "number": (
        lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "a number",
    ),
    "boolean": (lambda v: isinstance(v, bool), "a boolean"),
    "selected": (lambda v: isinstance(v, str), "a string (the option chosen)"),
    "selected-many": (
        lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
        "a list of strings (the options chosen)",
    ),
}
_ANSWER_STATES = ("draft", "submitted", "skipped")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def input_answer_problem(answer: Any, where: str) -> str | None:
    """Why `answer` is no ChatInputAnswer (a draft, submitted or skipped answer), or None.

    A draft or submitted answer carries a value whose payload its kind names, as the
    protocol's validation table asks; a value of a kind the protocol does not list is taken.
    """
    if not isinstance(answer, dict):
        return f"{where} must be a ChatInputAnswer object"
    state = answer.get("state")
    if state not in _ANSWER_STATES:
        return f"{where}.state must be one of {', '.join(_ANSWER_STATES)}"
    if state == "skipped":
        if answer.get("freeformValues") is not None and not _strings(answer["freeformValues"]):
            return f"{where}.freeformValues must be a list of strings"
        return None
    value = answer.get("value")
    if not isinstance(value, dict):
        return f"{where}.value is required for a {state} answer (a ChatInputAnswerValue)"
    kind = value.get("kind")
    if not isinstance(kind, str) or not kind:
        return f"{where}.value.kind must be a string"
    if "value" not in value or value["value"] is None:
        return f"{where}.value.value is required"
    known = _ANSWER_VALUES.get(kind)
    if known is not None and not known[0](value["value"]):
        return f"{where}.value.value must be {known[1]} for a {kind} answer"
    if value.get("freeformValues") is not None and not _strings(value["freeformValues"]):
        return f"{where}.value.freeformValues must be a list of strings"
    return None


def _non_empty(key: str, what: str = "string", limit: int = MAX_ID_LENGTH) -> ShapeCheck:
    def check(action: Mapping[str, Any]) -> str | None:
        value = action.get(key)
        if not isinstance(value, str) or not value:
            return f"{action['type']}: {key} must be a non-empty {what}"
        if len(value) > limit:
            return f"{action['type']}: {key} is longer than {limit} characters"
        return None

    return check


def _non_empty_uri(key: str) -> ShapeCheck:
    return _non_empty(key, "URI string", MAX_URI_LENGTH)


def _input_answer_changed(action: Mapping[str, Any]) -> str | None:
    # An absent (or null) answer clears the draft.
    if action.get("answer") is None:
        return None
    return input_answer_problem(action["answer"], "chat/inputAnswerChanged: answer")


_INPUT_RESPONSES = ("accept", "decline", "cancel")


def _input_completed(action: Mapping[str, Any]) -> str | None:
    if action.get("response") not in _INPUT_RESPONSES:
        return f"chat/inputCompleted: response must be one of {', '.join(_INPUT_RESPONSES)}"
    answers = action.get("answers")
    if answers is None:
        return None
    if not isinstance(answers, dict):
        return "chat/inputCompleted: answers must be an object keyed by question id"
    for question_id, answer in answers.items():
        reason = input_answer_problem(answer, f"chat/inputCompleted: answers[{question_id!r}]")
        if reason is not None:
            return reason
    return None


def _tool_content_problem(content: Any, where: str) -> str | None:
    """Why `content` is no list of ToolResultContent blocks (each an object with a type)."""
    if not isinstance(content, list):
        return f"{where} must be a list of ToolResultContent"
    for n, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return f"{where}[{n}] must be an object with a string type"
        if block["type"] == "text" and not isinstance(block.get("text"), str):
            return f"{where}[{n}].text must be a string"
    return None


def _string_or_markdown(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, dict) and isinstance(value.get("markdown"), str)
    )


def _tool_call_complete(action: Mapping[str, Any]) -> str | None:
    result = action.get("result")
    where = "chat/toolCallComplete: result"
    if not isinstance(result, dict):
        return f"{where} must be a ToolCallResult object"
    if not isinstance(result.get("success"), bool):
        return f"{where}.success {_BOOLEAN}"
    if not _string_or_markdown(result.get("pastTenseMessage")):
        return f"{where}.pastTenseMessage must be a string or {{markdown: string}}"
    if result.get("content") is not None:
        reason = _tool_content_problem(result["content"], f"{where}.content")
        if reason is not None:
            return reason
    if result.get("structuredContent") is not None and not isinstance(
        result["structuredContent"], dict
    ):
        return f"{where}.structuredContent must be an object"
    error = result.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    if error is not None and not isinstance(message, str):
        return f"{where}.error must be an object with a string message"
    return None


def _tool_call_content_changed(action: Mapping[str, Any]) -> str | None:
    return _tool_content_problem(action.get("content"), "chat/toolCallContentChanged: content")


_TOOL_CALL = (_non_empty("turnId"), _non_empty("toolCallId"))


#: The shape each client action must have, by type, beyond a string `type`.
ACTION_SHAPES: dict[str, ShapeCheck] = {
    "root/configChanged": _all(
        _field("config", dict, "must be an object"),
        _field("replace", bool, _BOOLEAN, optional=True),
    ),
    "session/titleChanged": _field("title", str, "must be a string"),
    "session/isReadChanged": _field("isRead", bool, _BOOLEAN),
    "session/isArchivedChanged": _field("isArchived", bool, _BOOLEAN),
    "session/activeClientSet": _active_client_set,
    "session/activeClientRemoved": _field("clientId", str, "must be a string"),
    "session/configChanged": _field("config", dict, "must be an object"),
    "session/customizationToggled": _all(_field("id", str, "must be a string"), _enablement),
    "session/mcpServerStartRequested": _field("id", str, "must be a string"),
    "session/mcpServerStopRequested": _field("id", str, "must be a string"),
    "session/mcpServerBackgroundRequested": _field("id", str, "must be a string"),
    "session/workingDirectorySet": _non_empty_uri("directory"),
    "session/workingDirectoryRemoved": _non_empty_uri("directory"),
    "session/workingDirectoryReplaced": _all(
        _non_empty_uri("directory"), _non_empty_uri("replacement")
    ),
    "chat/turnStarted": _turn_started,
    "chat/turnCancelled": _all(
        _field("turnId", str, "must be a string"), _field("duration", (int, float), "is required")
    ),
    "chat/toolCallConfirmed": _all(
        _field("toolCallId", str, "must be a string"), _field("approved", bool, _BOOLEAN)
    ),
    "chat/pendingMessageSet": _pending_message_set,
    "chat/inputAnswerChanged": _all(
        _non_empty("requestId"), _non_empty("questionId"), _input_answer_changed
    ),
    "chat/inputCompleted": _all(_non_empty("requestId"), _input_completed),
    "chat/toolCallComplete": _all(
        *_TOOL_CALL,
        _tool_call_complete,
        _field("requiresResultConfirmation", bool, _BOOLEAN, optional=True),
    ),
    "chat/toolCallContentChanged": _all(*_TOOL_CALL, _tool_call_content_changed),
    "chat/toolCallResultConfirmed": _all(*_TOOL_CALL, _field("approved", bool, _BOOLEAN)),
    "chat/isReadChanged": _field("isRead", bool, _BOOLEAN),
    "chat/isArchivedChanged": _field("isArchived", bool, _BOOLEAN),
    "chat/truncated": _field("turnId", str, "must be a string", optional=True),
    "chat/turnResume": _field("turnId", str, "must be a string"),
    "terminal/input": _field("data", str, "must be a string"),
    "terminal/resized": _terminal_resized,
    "terminal/claimed": _terminal_claimed,
    "terminal/titleChanged": _field("title", str, "must be a string"),
    "changeset/filesReviewChanged": _all(_ids("files"), _field("reviewed", bool, _BOOLEAN)),
    "annotations/set": _annotation_set,
    "annotations/updated": _all(
        _ANNOTATION_ID,
        _field("resolved", bool, _BOOLEAN, optional=True),
        _field("resource", str, "must be a URI string", optional=True),
        _field("origin", dict, "must be an object", optional=True),
        _field("range", dict, "must be an object", optional=True),
    ),
    "annotations/removed": _ANNOTATION_ID,
    "annotations/entrySet": _all(_ANNOTATION_ID, _entry_set),
    "annotations/entryRemoved": _all(_ANNOTATION_ID, _field("entryId", str, "must be a string")),
}


def action_problem(action: Mapping[str, Any]) -> str | None:
    """Why a client's action has the wrong shape for its type, or None."""
    check = ACTION_SHAPES.get(str(action.get("type")))
    return check(action) if check is not None else None
