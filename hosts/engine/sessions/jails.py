"""Where a session's processes run: its owner's sandbox over its working folders.

Its agent, the agent's commands, its `!` commands and the host's git for it all run there, as
its owner: whoever else works in the session (a lead with `others:work`) works through what the
owner's processes can reach, never more.
"""

from __future__ import annotations

from ...backends.sandbox import Jail, Sandbox
from .records import SessionRecord, file_path


def session_jail(sandbox: Sandbox, record: SessionRecord) -> Jail:
    return sandbox.jail(record.owner, [file_path(uri) for uri in record.working_directories])
