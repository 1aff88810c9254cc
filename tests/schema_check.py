"""Validate AHP wire frames against the protocol's JSON Schemas (a test helper, not a test).

The schemas are the ones the protocol generates from its TypeScript declarations, shipped in
``<repo>/../shared/ahp/schema`` (or ``$AHP_SHARED_DIR/ahp/schema``): ``actions``, ``commands``,
``notifications`` and ``state.schema.json``, draft 2020-12, each file self-contained through its
own ``$defs``. They leave objects open: they check required fields and types, not extra keys.

Usage::

    check_server_frame(frame, request_method="initialize")   # any frame the host sends
    check_action_envelope(params)                            # an `action` notification's params
    check_result("listSessions", result)
    check_notification("root/sessionAdded", params)
    check_error(error)

Every failure raises :class:`SchemaError` (an ``AssertionError``).

Where the shipped schema and the protocol's real wire disagree, the schema is adjusted once, at
load time, in :func:`_adjust`; each adjustment says why. Nothing else is loosened.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

__all__ = [
    "AHP_DIR",
    "SCHEMA_DIR",
    "SchemaError",
    "check_action",
    "check_action_envelope",
    "check_error",
    "check_notification",
    "check_result",
    "check_server_frame",
    "check_snapshot",
]


def _ahp_dir() -> Path:
    """``<shared>/ahp``, where ``<shared>`` is ``$AHP_SHARED_DIR`` or the checkout's sibling."""
    env = os.environ.get("AHP_SHARED_DIR")
    if env:
        shared = Path(env)
        # Accept the variable pointing at either `shared` or `shared/ahp`.
        return shared / "ahp" if (shared / "ahp").is_dir() else shared
    return Path(__file__).resolve().parents[2] / "shared" / "ahp"


AHP_DIR = _ahp_dir()
SCHEMA_DIR = AHP_DIR / "schema"


class SchemaError(AssertionError):
    """A frame does not match the protocol's schema."""


# ─── Loading (once) and the deliberate adjustments ──────────────────────────────────────────

_FILES = ("actions", "commands", "notifications", "state")

# An action inside an envelope is only required to be an object with a string `type` by the
# envelope's own schema; the action itself is validated separately against the `$defs` entry
# whose `type` const matches (see `check_action_envelope`).
_ACTION_SHAPE: dict[str, Any] = {
    "type": "object",
    "properties": {"type": {"type": "string"}},
    "required": ["type"],
}


def _adjust(defs: dict[str, Any]) -> None:
    """Align the shipped schema with the protocol's real wire. Mutates ``defs`` in place."""
    if "SessionStatus" in defs:
        # The schema lists SessionStatus as an enum of single flags (1, 2, 8, 24, 32, 64), but
        # the protocol uses it as a bit set: the activity part (mask 31) combined with the
        # orthogonal IsRead (32) / IsArchived (64) flags, e.g. 40 = InProgress|IsRead. The
        # schema's own description says "Bitset ... use bitwise checks". Relaxed to any
        # non-negative integer.
        defs["SessionStatus"] = {
            "type": "integer",
            "minimum": 0,
            "description": "SessionStatus bit set (relaxed from the single-flag enum).",
        }

    if "StateAction" in defs:
        # The generator emitted a broken first branch (`{"$ref": "#/$defs/"}`), which makes any
        # validation through StateAction (e.g. DispatchActionParams.action) fail to resolve.
        # Dropping the broken branch loosens nothing: it could never match.
        defs["StateAction"]["oneOf"] = [
            branch for branch in defs["StateAction"]["oneOf"] if branch.get("$ref") != "#/$defs/"
        ]

    if "ActionEnvelope" in defs:
        # ActionEnvelope.action is `$ref: StateAction`, a oneOf over ~106 open objects whose
        # errors are unreadable. The action is checked separately instead, against exactly the
        # definition(s) its `type` selects (`check_action`): strictly at least as strong.
        # (ActionEnvelope.origin is already optional in the schema — a host-originated action
        # has no origin — so nothing to relax there.)
        defs["ActionEnvelope"]["properties"]["action"] = copy.deepcopy(_ACTION_SHAPE)

    if "Snapshot" in defs:
        # Snapshot.state is a oneOf over every channel state. States are open objects, so a
        # state that happens to satisfy two of them would fail oneOf, and errors are
        # unreadable. Snapshots are instead checked against the one state definition the
        # resource's scheme selects (`check_snapshot`): strictly at least as strong.
        defs["Snapshot"]["properties"]["state"] = {"type": "object"}

    confirmed_branches = (("ChatToolCallApprovedAction", True), ("ChatToolCallDeniedAction", False))
    for name, approved in confirmed_branches:
        # The TypeScript declares `approved: true` / `approved: false`, but the generator lost
        # the literal and emitted an unconstrained `approved`, so an approval would also match
        # the denial branch. Restoring the const (a tightening, matching the protocol) makes
        # the chat/toolCallConfirmed pair discriminate.
        if name in defs:
            defs[name]["properties"]["approved"] = {"const": approved}


@cache
def _defs(file: str) -> dict[str, Any]:
    """The adjusted ``$defs`` of ``<file>.schema.json``."""
    path = SCHEMA_DIR / f"{file}.schema.json"
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:  # pragma: no cover - environment problem
        raise RuntimeError(f"AHP schema not found at {path} (set AHP_SHARED_DIR?)") from exc
    defs: dict[str, Any] = schema["$defs"]
    _adjust(defs)
    return defs


@cache
def _validator(file: str, definition: str) -> Draft202012Validator:
    """A validator for ``#/$defs/<definition>`` of ``<file>.schema.json``, built once."""
    defs = _defs(file)
    if definition not in defs:
        raise SchemaError(f"{file}.schema.json has no definition {definition!r}")
    return Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{definition}"})


@cache
def _one_of_validator(file: str, definitions: tuple[str, ...]) -> Draft202012Validator:
    defs = _defs(file)
    return Draft202012Validator(
        {"$defs": defs, "oneOf": [{"$ref": f"#/$defs/{d}"} for d in definitions]}
    )


def _raise_first(errors: Iterable[ValidationError], what: str) -> None:
    error = best_match(errors)
    if error is None:
        return
    raise SchemaError(f"{what}: {error.message} (at {error.json_path})")


def _validate(file: str, definition: str, instance: Any, what: str) -> None:
    _raise_first(_validator(file, definition).iter_errors(instance), f"{what} [{definition}]")


@cache
def _action_defs() -> Mapping[str, tuple[str, ...]]:
    """Action ``type`` const -> the ``$defs`` entries declaring it (actions.schema.json)."""
    by_type: dict[str, list[str]] = {}
    for name, definition in _defs("actions").items():
        if not name.endswith("Action"):
            continue  # e.g. PluginCustomization also has a `type` const ("plugin")
        const = definition.get("properties", {}).get("type", {}).get("const")
        if isinstance(const, str):
            by_type.setdefault(const, []).append(name)
    return {t: tuple(names) for t, names in by_type.items()}


# ─── Actions ────────────────────────────────────────────────────────────────────────────────


def _require_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaError(f"{what}: expected an object, got {type(value).__name__}")
    return value


def check_action(action: Any) -> None:
    """Validate one action against the ``$defs`` entry whose ``type`` const matches."""
    action = _require_object(action, "action")
    action_type = action.get("type")
    if not isinstance(action_type, str):
        raise SchemaError(f"action: `type` must be a string, got {action_type!r}")
    names = _action_defs().get(action_type)
    if names is None:
        raise SchemaError(f"action: unknown action type {action_type!r}")
    if len(names) == 1:
        _validate("actions", names[0], action, f"action {action_type}")
    else:  # chat/toolCallConfirmed: Approved | Denied
        _raise_first(
            _one_of_validator("actions", names).iter_errors(action),
            f"action {action_type} {list(names)}",
        )


def check_action_envelope(envelope: Any) -> None:
    """Validate an ``ActionEnvelope`` (the params of an ``action`` notification)."""
    envelope = _require_object(envelope, "ActionEnvelope")
    _validate("actions", "ActionEnvelope", envelope, "ActionEnvelope")
    if "rejectionReason" in envelope:
        # A rejection echoes the *client's* action back verbatim with `rejectionReason`; the
        # action may be exactly why it was rejected (malformed, an unknown type, a type the
        # negotiated version lacks, not client-dispatchable), so it is not held to its
        # definition. A rejection always answers a client dispatch, so it carries `origin`.
        if "origin" not in envelope:
            raise SchemaError("ActionEnvelope: a rejected action must carry `origin`")
        return
    check_action(envelope["action"])


# ─── Snapshots ──────────────────────────────────────────────────────────────────────────────

# URI scheme -> state definition (state.schema.json). `ahp-automation:` (one automation entry)
# and the stateless channels (`ahp-otlp:`, `mcp:`) have no snapshot.
_STATE_BY_SCHEME: Mapping[str, str] = {
    "ahp-root": "RootState",
    "ahp-session": "SessionState",
    "ahp-chat": "ChatState",
    "ahp-terminal": "TerminalState",
    "ahp-changeset": "ChangesetState",
    "ahp-resource-watch": "ResourceWatchState",
    "ahp-canvas": "CanvasState",
    "ahp-automations": "AutomationState",
    "ahp-automation-run": "AutomationRunState",
}


def state_definition_for(resource: str) -> str:
    """The state definition of the channel ``resource`` names."""
    scheme, sep, rest = resource.partition(":")
    if not sep or scheme not in _STATE_BY_SCHEME:
        raise SchemaError(f"snapshot: no state channel for resource {resource!r}")
    if scheme == "ahp-session" and rest.rstrip("/").endswith("/annotations"):
        return "AnnotationsState"  # the per-session annotations channel
    if "/changeset/" in rest:
        return "ChangesetState"  # a changeset nested under its session's URI
    return _STATE_BY_SCHEME[scheme]


def check_snapshot(snapshot: Any) -> None:
    """Validate a ``Snapshot`` and its state against the state of the resource's scheme."""
    snapshot = _require_object(snapshot, "Snapshot")
    _validate("commands", "Snapshot", snapshot, "Snapshot")
    resource = snapshot["resource"]
    definition = state_definition_for(resource)
    _validate("state", definition, snapshot["state"], f"snapshot of {resource}")


# ─── Results ────────────────────────────────────────────────────────────────────────────────

#: Methods whose result is JSON ``null``.
NULL_RESULT_METHODS = frozenset(
    {
        "ping",
        "createSession",
        "disposeSession",
        "createChat",
        "disposeChat",
        "createTerminal",
        "disposeTerminal",
    }
)


def result_definition_for(method: str) -> str:
    """``initialize`` -> ``InitializeResult``, ``listSessions`` -> ``ListSessionsResult``..."""
    return method[:1].upper() + method[1:] + "Result"


# The per-channel reconnect of the protocol's change `20261002-per-channel-replay-cursors`,
# which the shipped schema (from just after 1.0.0) predates: `ReconnectResult.channels:
# ChannelRecovery[]`, as the protocol's lifecycle specification ("Reconnection") declares it.
_CHANNEL_RECOVERY: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "kind": {"const": "replay"},
                "channel": {"type": "string"},
                "actions": {"type": "array", "items": {"$ref": "#/$defs/ActionEnvelope"}},
            },
            "required": ["kind", "channel", "actions"],
        },
        {
            "type": "object",
            "properties": {
                "kind": {"const": "snapshot"},
                "channel": {"type": "string"},
                "snapshot": {"$ref": "#/$defs/Snapshot"},
            },
            "required": ["kind", "channel", "snapshot"],
        },
        {
            "type": "object",
            "properties": {"kind": {"const": "missing"}, "channel": {"type": "string"}},
            "required": ["kind", "channel"],
        },
    ]
}


@cache
def _per_channel_reconnect_validator() -> Draft202012Validator:
    return Draft202012Validator(
        {
            "$defs": _defs("commands"),
            "type": "object",
            "properties": {"channels": {"type": "array", "items": _CHANNEL_RECOVERY}},
            "required": ["channels"],
        }
    )


def _check_per_channel_reconnect(result: Any) -> None:
    _raise_first(
        _per_channel_reconnect_validator().iter_errors(result),
        "reconnect result [ReconnectResult.channels]",
    )
    for recovery in result["channels"]:
        if recovery["kind"] == "snapshot":
            check_snapshot(recovery["snapshot"])
            if recovery["snapshot"]["resource"] != recovery["channel"]:
                raise SchemaError(f"reconnect: a snapshot for another channel: {recovery}")
        elif recovery["kind"] == "replay":
            for envelope in recovery["actions"]:
                check_action_envelope(envelope)
                if envelope["channel"] != recovery["channel"]:
                    raise SchemaError(f"reconnect: another channel's action in: {recovery}")


#: VS Code's own requests (not the protocol's, which has no schema for them): their results'
#: fields and types as VS Code's agentHostExtensionProtocol declares them.
VSCODE_RESULTS: dict[str, dict[str, type]] = {
    "vscode/collectAgentHostDebugLogs": {
        "kind": str,
        "resource": str,
        "providerLogsIncluded": bool,
        "size": int,
        "uncompressedSize": int,
        "entries": list,
    },
    "vscode/readAgentHostDebugLogsChunk": {"data": str, "eof": bool},
}


def _check_vscode_result(method: str, result: Any) -> None:
    fields = VSCODE_RESULTS[method]
    if not isinstance(result, dict) or set(result) != set(fields):
        raise SchemaError(f"{method}: result fields {result!r} are not {sorted(fields)}")
    for name, kind in fields.items():
        if not isinstance(result[name], kind):
            raise SchemaError(f"{method}: {name} is not a {kind.__name__}: {result[name]!r}")
    for entry in result.get("entries", []):
        if set(entry) != {"path", "size"}:
            raise SchemaError(f"{method}: an entry is {{path, size}}, not {entry!r}")


def check_result(method: str, result: Any) -> None:
    """Validate the ``result`` of a response to a ``method`` request."""
    if method == "reconnect" and isinstance(result, dict) and "channels" in result:
        _check_per_channel_reconnect(result)
        return
    if method in VSCODE_RESULTS:
        _check_vscode_result(method, result)
        return
    if method in NULL_RESULT_METHODS:
        if result is not None:
            raise SchemaError(f"{method} result must be null, got {result!r}")
        return
    definition = result_definition_for(method)
    if definition not in _defs("commands"):
        raise SchemaError(f"{method}: no {definition} in commands.schema.json (unknown method?)")
    _validate("commands", definition, result, f"{method} result")

    if method == "initialize":
        for snapshot in result["snapshots"]:
            check_snapshot(snapshot)
    elif method == "subscribe":
        if "snapshot" in result:
            check_snapshot(result["snapshot"])
    elif method == "reconnect":
        if result["type"] == "snapshot":
            for snapshot in result["snapshots"]:
                check_snapshot(snapshot)
        else:
            for envelope in result["actions"]:
                check_action_envelope(envelope)


# ─── Notifications ──────────────────────────────────────────────────────────────────────────

_NOTIFICATION_PARAMS: Mapping[str, str] = {
    "root/sessionAdded": "SessionAddedParams",
    "root/sessionRemoved": "SessionRemovedParams",
    "root/sessionSummaryChanged": "SessionSummaryChangedParams",
    "root/progress": "ProgressParams",
    "auth/required": "AuthRequiredParams",
    "otlp/exportLogs": "OtlpExportLogsParams",
    "otlp/exportTraces": "OtlpExportTracesParams",
    "otlp/exportMetrics": "OtlpExportMetricsParams",
}

# In the schema (it is from just after 1.0.0) but introduced in 1.1.0.
_NOTIFICATIONS_1_1 = frozenset(
    {"channel/frame", "channel/credit", "channel/ready", "channel/reset", "channel/snapshot"}
    | {"tcp/data", "tcp/eof"}
)


def check_notification(method: str, params: Any) -> None:
    """Validate the ``params`` of a server -> client notification ``method``."""
    if method == "action":
        check_action_envelope(params)
        return
    if method == "unsubscribe":
        # The host letting go of a client's watch channel it subscribed to (see `subscribe`
        # in SERVER_REQUEST_METHODS).
        _validate("commands", "UnsubscribeParams", _require_object(params, method), method)
        return
    if method in _NOTIFICATIONS_1_1:
        raise SchemaError(f"{method} is a 1.1.0 notification, not part of AHP 1.0.0")
    definition = _NOTIFICATION_PARAMS.get(method)
    if definition is None:
        raise SchemaError(f"unknown server notification {method!r}")
    _validate("notifications", definition, _require_object(params, method), method)


# ─── Errors ─────────────────────────────────────────────────────────────────────────────────

UNSUPPORTED_PROTOCOL_VERSION = -32005
AUTH_REQUIRED = -32007
PERMISSION_DENIED = -32009


def check_error(error: Any) -> None:
    """Validate a JSON-RPC error object, with the data AHP requires for some codes."""
    error = _require_object(error, "error")
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        raise SchemaError(f"error: `code` must be an integer, got {code!r}")
    if not isinstance(error.get("message"), str):
        raise SchemaError(f"error: `message` must be a string, got {error.get('message')!r}")

    data = error.get("data")
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        # Required: {supportedVersions: string[]} (versions or SemVer ranges).
        versions = data.get("supportedVersions") if isinstance(data, dict) else None
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise SchemaError(
                f"error {code}: data.supportedVersions must be a list of strings, got {data!r}"
            )
    elif code == AUTH_REQUIRED:
        # Required: {resources: ProtectedResourceMetadata[]}.
        resources = data.get("resources") if isinstance(data, dict) else None
        if not isinstance(resources, list):
            raise SchemaError(f"error {code}: data.resources must be a list, got {data!r}")
        for index, resource in enumerate(resources):
            _validate(
                "notifications",
                "ProtectedResourceMetadata",
                resource,
                f"error {code} data.resources[{index}]",
            )
    elif code == PERMISSION_DENIED and isinstance(data, dict) and "request" in data:
        # Optional: {request?: ResourceRequestParams}.
        _validate("commands", "ResourceRequestParams", data["request"], f"error {code} data")


# ─── Frames ─────────────────────────────────────────────────────────────────────────────────

#: Requests the server may send to the client (the bidirectional resource methods).
SERVER_REQUEST_METHODS = frozenset(
    {
        "resourceRead",
        "resourceWrite",
        "resourceList",
        "resourceCopy",
        "resourceMove",
        "resourceDelete",
        "resourceResolve",
        "resourceMkdir",
        "resourceRequest",
        "createResourceWatch",
        # Not in ServerCommandMap, and the seed's server-to-client commands say it: a watch
        # over a client's files is the channel that client answered createResourceWatch with,
        # and the host subscribes to it on the client's connection.
        "subscribe",
    }
)


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def check_server_frame(frame: Any, request_method: str | None) -> None:
    """Validate one JSON-RPC message the server sent.

    A response (``id`` + ``result``|``error``) is checked with :func:`check_result` (for the
    method of the request it answers, ``request_method``) or :func:`check_error`; a notification
    (``method``, no ``id``) with :func:`check_notification`; a server -> client request
    (``method`` + ``id``, only the bidirectional resource methods) against ``<Method>Params``.
    """
    frame = _require_object(frame, "frame")
    if frame.get("jsonrpc") != "2.0":
        raise SchemaError(f"frame: jsonrpc must be '2.0', got {frame.get('jsonrpc')!r}")

    if "method" in frame:
        method = frame["method"]
        if not isinstance(method, str):
            raise SchemaError(f"frame: method must be a string, got {method!r}")
        if "result" in frame or "error" in frame:
            raise SchemaError("frame: has both `method` and `result`/`error`")
        params = frame.get("params")
        if "id" not in frame:
            check_notification(method, params)
            return
        if not _is_id(frame["id"]):
            raise SchemaError(f"frame: request id must be a number or string: {frame['id']!r}")
        if method not in SERVER_REQUEST_METHODS:
            raise SchemaError(f"frame: {method!r} is not a request the server may send")
        definition = method[:1].upper() + method[1:] + "Params"
        _validate("commands", definition, _require_object(params, method), f"{method} request")
        return

    if "id" not in frame:
        raise SchemaError("frame: neither a response (id) nor a notification (method)")
    has_result, has_error = "result" in frame, "error" in frame
    if has_result == has_error:
        raise SchemaError("frame: a response needs exactly one of `result` and `error`")
    if has_error:
        # `id` is null only when the request's id could not be read (e.g. a parse error).
        if frame["id"] is not None and not _is_id(frame["id"]):
            raise SchemaError(f"frame: response id must be a number, string or null: {frame}")
        check_error(frame["error"])
        return
    if not _is_id(frame["id"]):
        raise SchemaError(f"frame: response id must be a number or string: {frame['id']!r}")
    if request_method is None:
        raise SchemaError("frame: a result cannot be checked without the request's method")
    check_result(request_method, frame["result"])
