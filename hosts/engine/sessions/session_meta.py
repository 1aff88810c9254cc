"""A session's `_meta`: every key this host keeps there, composed in one place.

session/metaChanged replaces `_meta` whole (seed 000), so a host with two writers of it would
have each take the other's keys away: whatever moves, the whole of it is made again here from
what the session holds.
"""

from __future__ import annotations

from ...protocol.shapes import SessionGit, SessionMeta
from .records import SessionRecord


def session_meta(record: SessionRecord, git: SessionGit | None) -> SessionMeta:
    """A session's `_meta`: whose it is (`ahpd.owner`, absent on a host with nobody to name)
    and where its git working tree stands (`git`, absent outside git), as VS Code's host
    writes it and its window reads it."""
    meta: SessionMeta = {}
    if record.owner:
        meta["ahpd.owner"] = record.owner
    if git is not None:
        meta["git"] = git
    return meta
