"""A session's annotations channel, `<session>/annotations`: the marks people leave on the files
of a session (each a conversation anchored to a file, optionally a range, with its entries).

Opened when named (a subscribe, an initialize's subscriptions), on what the session's record
keeps; every mark action's result is written to the record as it lands, so the channel opens on
it after a restart; it closes with its session.
"""

from __future__ import annotations

from collections.abc import Callable

from .channel import Channel
from .fanout import Fanout
from .sessions import LiveSession

SUFFIX = "/annotations"


def uri_of(session_uri: str) -> str:
    return session_uri + SUFFIX


def session_uri_of(uri: str) -> str | None:
    """The session an annotations channel's URI is under, or None for any other URI."""
    if uri.endswith(SUFFIX) and len(uri) > len(SUFFIX):
        return uri[: -len(SUFFIX)]
    return None


class Annotations:
    def __init__(
        self,
        fanout: Fanout,
        session_of: Callable[[str], LiveSession | None],
        save: Callable[[LiveSession], None],
    ) -> None:
        self.fanout = fanout
        self._session_of = session_of
        self._save = save

    def wake(self, uri: str) -> None:
        """Open the annotations channel a URI names, if its session is here."""
        session_uri = session_uri_of(uri)
        if session_uri is None or self.fanout.has(uri):
            return
        session = self._session_of(session_uri)
        if session is None:
            return
        state = {"annotations": list(session.record.annotations)}
        self.fanout.open(Channel(uri_of(session.record.uri), "annotations", state))

    def keep(self, session: LiveSession, channel: Channel) -> None:
        """Write what the channel holds now to its session's record."""
        session.record.annotations = list(channel.state["annotations"])
        self._save(session)

    def close(self, session_uri: str) -> None:
        """Its session is gone: whoever watched its annotations stops."""
        self.fanout.close(uri_of(session_uri))
