"""The method registry: every method AHP 1.0.0 declares a client may send, and its channel rule.

The engine registers a handler per method it serves; a declared method without a handler is
answered -32601, never an empty success.
"""

from __future__ import annotations

from dataclasses import dataclass

from .uris import AUTOMATIONS_URI, ROOT_URI


@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    notification: bool = False
    #: The channel the declaration fixes as a literal, or None where a client chooses the URI.
    channel_literal: str | None = None
    #: initialize and ping take any channel: they are how a client learns it can talk at all.
    literal_enforced: bool = True
    #: Served before the handshake.
    before_initialize: bool = False


def _root(name: str, **kw: bool) -> MethodSpec:
    return MethodSpec(name, channel_literal=ROOT_URI, **kw)


METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in (
        _root("initialize", literal_enforced=False, before_initialize=True),
        _root("ping", literal_enforced=False, before_initialize=True),
        _root("reconnect", before_initialize=True),
        MethodSpec("subscribe"),
        MethodSpec("unsubscribe", notification=True),
        MethodSpec("dispatchAction", notification=True),
        _root("listSessions"),
        MethodSpec("createSession"),
        MethodSpec("disposeSession"),
        MethodSpec("createChat"),
        MethodSpec("disposeChat"),
        MethodSpec("moveChat"),
        MethodSpec("fetchTurns"),
        MethodSpec("completions"),
        MethodSpec("createTerminal"),
        MethodSpec("disposeTerminal"),
        _root("authenticate"),
        _root("resolveSessionConfig"),
        _root("sessionConfigCompletions"),
        MethodSpec("invokeChangesetOperation"),
        _root("createResourceWatch"),
        _root("resourceRead"),
        _root("resourceWrite"),
        _root("resourceList"),
        _root("resourceCopy"),
        _root("resourceMove"),
        _root("resourceDelete"),
        _root("resourceResolve"),
        _root("resourceMkdir"),
        _root("resourceRequest"),
        _root("listAutomationTriggerDefinitions"),
        MethodSpec("runAutomation", channel_literal=AUTOMATIONS_URI),
        MethodSpec("fetchAutomationRuns", channel_literal=AUTOMATIONS_URI),
    )
}
