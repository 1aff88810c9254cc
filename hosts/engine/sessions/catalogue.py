"""The session catalogue: every announced session, kept ordered as sessions change.

Ordered by modified time, then URI, newest first. A page starts after a keyset cursor (the
modified time and URI of the last row a client was handed), so a session added or touched
while a client pages shifts nothing under it. A listing builds the summaries of its page only.
"""

from __future__ import annotations

import base64
import binascii
from bisect import bisect_left, insort
from collections.abc import Callable, Iterator

Key = tuple[int, str]

_PREFIX = "k1:"


class BadCursor(ValueError):
    """A cursor this host did not issue."""


class Catalogue:
    def __init__(self) -> None:
        #: (modified_ms, uri), ascending; read from the end for newest first.
        self._keys: list[Key] = []
        self._key_of: dict[str, Key] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def put(self, uri: str, modified_ms: int) -> None:
        """List a session, or move it to where its modified time now sorts."""
        key = (modified_ms, uri)
        old = self._key_of.get(uri)
        if old == key:
            return
        if old is not None:
            self._remove(old)
        self._key_of[uri] = key
        insort(self._keys, key)

    def drop(self, uri: str) -> None:
        old = self._key_of.pop(uri, None)
        if old is not None:
            self._remove(old)

    def _remove(self, key: Key) -> None:
        at = bisect_left(self._keys, key)
        if at < len(self._keys) and self._keys[at] == key:
            del self._keys[at]

    def page(
        self, after: Key | None, limit: int | None, keep: Callable[[str], bool] | None = None
    ) -> tuple[list[str], Key | None]:
        """URIs newest first, after the cursor's key, of those `keep` keeps (all, if None);
        and the key to go on from, if more."""
        keys = self._keys
        at = len(keys) if after is None else bisect_left(keys, after)
        if keep is None:
            start = 0 if limit is None else max(0, at - limit)
            return [uri for _, uri in reversed(keys[start:at])], (keys[start] if start else None)
        uris: list[str] = []
        while at > 0 and (limit is None or len(uris) < limit):
            at -= 1
            if keep(keys[at][1]):
                uris.append(keys[at][1])
        return uris, (keys[at] if at > 0 else None)

    def __iter__(self) -> Iterator[str]:
        return (uri for _, uri in reversed(self._keys))


def encode_cursor(key: Key) -> str:
    text = f"{_PREFIX}{key[0]}:{key[1]}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: object) -> Key:
    """The key a cursor carries; BadCursor for one this host did not issue."""
    if not isinstance(cursor, str):
        raise BadCursor(cursor)
    try:
        text = base64.urlsafe_b64decode(cursor.encode() + b"==").decode()
        if not text.startswith(_PREFIX):
            raise ValueError(text)
        modified, _, uri = text.removeprefix(_PREFIX).partition(":")
        if not uri:
            raise ValueError(text)
        return int(modified), uri
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise BadCursor(cursor) from None
