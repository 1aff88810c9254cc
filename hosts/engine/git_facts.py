"""Where each session's git working tree stands, said under its `_meta.git`.

Read with git itself (changesets/git.py: hardened, in the session's sandbox) when a session
opens (made, or read back after a restart) and again when each of its turns ends, as VS Code's
host reads it; session/metaChanged is said only when what was read moved
(Sessions.say_meta). A folder in no git working tree has no `git` key, and neither has one
whose `.git` file names a repository that is not its own: the facts are the session's own
folder's, never those of a repository somebody pointed it at.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from ..protocol.shapes import SessionGit
from .changesets import git
from .changesets.scopes import folder_of
from .sessions.live_session import LiveChat, LiveSession
from .sessions.session_table import Sessions

log = logging.getLogger("ahpd.sessions")

#: How many sessions' facts are read at once: a restart opens every session it keeps.
READS_AT_ONCE = 4


class GitFacts:
    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self._reading: dict[str, asyncio.Lock] = {}
        self._at_once = asyncio.Semaphore(READS_AT_ONCE)
        self._tasks: set[asyncio.Task[None]] = set()

    def opened(self, session: LiveSession) -> None:
        self._spawn(self.read(session))

    def ended(self, chat: LiveChat, turn_id: str) -> None:
        """A turn ended: it may have committed, switched branch, pushed or pulled."""
        self._spawn(self.read(chat.session))

    def disposed(self, session: LiveSession) -> None:
        self._reading.pop(session.uri, None)

    async def read(self, session: LiveSession) -> None:
        """Read the session's git facts and say its `_meta` where they moved. Reads of one
        session run one after another, so an older read never lands after a newer one."""
        lock = self._reading.setdefault(session.uri, asyncio.Lock())
        async with lock, self._at_once:
            if not self.sessions.holds(session):
                return
            folder = folder_of(session.record)
            top = git.repository_of(folder) if folder is not None else None
            facts: SessionGit | None = None
            if top is not None:
                try:
                    facts = await git.branch_facts(top)
                except (git.GitError, OSError) as error:
                    log.warning("reading where %s stands failed: %s", top, error)
                    return  # what was said stays: a failed read is no news
            if facts == session.git:
                return
            session.git = facts
            self.sessions.say_meta(session)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
