"""A session's annotations: the five mark actions a client sends, checked against what the
channel holds, said, and kept with the session."""

from __future__ import annotations

from typing import Any

from .. import session_annotations
from ..channel import Channel
from ..host import Host
from .caller import Caller


def do_annotate(host: Host, caller: Caller, channel: Channel, action: dict[str, Any]) -> str | None:
    """Say the caller's annotations/* action on a session's annotations channel and keep the
    result. Why it cannot be taken, or None.

    An action naming an annotation (or an entry) the channel does not hold is refused rather
    than said: the reducer would hand back the state unchanged, and a client would be left
    holding a mark this host never kept. An annotation holds at least one entry: one is made
    with its first, and its last goes with it (annotations/removed).
    """
    session_uri = session_annotations.session_uri_of(channel.uri)
    session = host.sessions.session(session_uri) if session_uri is not None else None
    if session is None:
        return f"Resource not found: {channel.uri}"
    caller.may_in(session, "session:review")
    held = {a["id"]: a for a in channel.state["annotations"]}
    # Told apart by their shapes (checked at the protocol layer): annotations/set carries the
    # whole annotation, annotations/entryRemoved an entryId; the rest name an annotationId.
    if "annotation" in action:
        if not action["annotation"].get("entries"):
            return "An annotation holds at least one entry: send it with its first"
    else:
        annotation_id = action["annotationId"]
        annotation = held.get(annotation_id)
        if annotation is None:
            return f"No annotation {annotation_id} in {channel.uri}"
        if "entryId" in action:
            entries = [e["id"] for e in annotation.get("entries", [])]
            if action["entryId"] not in entries:
                return f"No entry {action['entryId']} in annotation {annotation_id}"
            if entries == [action["entryId"]]:
                return (
                    f"The last entry of annotation {annotation_id} goes with it: "
                    "send annotations/removed"
                )
    caller.say(host, channel, action)
    host.annotations.keep(session, channel)
    return None
