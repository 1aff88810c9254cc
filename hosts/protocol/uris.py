"""Channel URIs: the literal ones, and which kind of channel a URI names."""

from __future__ import annotations

ROOT_URI = "ahp-root://"
AUTOMATIONS_URI = "ahp-automations://"
# Insiders builds of a two-week window spelt the catalogue with an authority; it is the same one.
AUTOMATIONS_ALIASES = frozenset({AUTOMATIONS_URI, "ahp-automations://catalog"})

_SCHEME_KINDS = {
    "ahp-root": "root",
    "ahp-session": "session",
    "ahp-chat": "chat",
    "ahp-terminal": "terminal",
    "ahp-changeset": "changeset",
    "ahp-resource-watch": "resourceWatch",
    "ahp-canvas": "canvas",
    "ahp-automations": "automation",
    "ahp-automation-run": "automationRun",
    "ahp-otlp": "otlp",
}


def scheme_of(uri: str) -> str:
    """The part before the first colon, lower-cased; empty when there is none."""
    head, sep, _ = uri.partition(":")
    return head.lower() if sep else ""


def kind_of(uri: str) -> str | None:
    """The channel kind a URI's scheme names, or None for a scheme the protocol does not define.

    Sessions may live under a scheme a client chose, so a None here does not mean the URI names
    nothing; the engine asks its own tables for those.
    """
    return _SCHEME_KINDS.get(scheme_of(uri))


def is_root(uri: str) -> bool:
    """Every spelling of the root (ahp-root://, ahp-root:, ahp-root:///) is the root."""
    return scheme_of(uri) == "ahp-root"


def canonical(uri: str) -> str:
    """The spelling this host answers a literal channel under."""
    if is_root(uri):
        return ROOT_URI
    if uri in AUTOMATIONS_ALIASES:
        return AUTOMATIONS_URI
    return uri
