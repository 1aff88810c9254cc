"""Which chats keep their agent process running: sleep, the residency limit, a person's cap.

Each chat of a backend that holds a process (an ACP agent) is a process of its own, and an
idle one is let go and woken again when something needs it, transparently: the next turn opens
the chat's backend again by its backend id (ACP `session/load`), as after a restart. Idle is
`LiveChat.idle`: no turn running or being prepared, so no tool call waiting for a person.

Three rules, each in one place here:

- sleep (`sleep_after_s`, the reference's sleepAfterMinutes): a chat's agent idle that long
  is let go, by a timer of the event loop armed when its turn ends;
- the residency limit (`session_limit`, sessionResidencyLimit): when a chat of a session that
  runs no agent needs one and that many sessions run agents, the least recently used session
  that is idle in every chat has its agents let go first; with none idle, the limit is passed
  (what runs is never stopped for it);
- a person's cap (`per_person`): agents running for the chats of sessions one person owns. At
  the cap, that person's least recently used idle agent is let go first; a turn that would need
  one more while all of theirs are at work is refused (`refusal`), in words naming the cap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

from ...backends.base import BackendError
from .live_session import LiveChat, LiveSession
from .session_table import Sessions

log = logging.getLogger("ahpd.sessions")

#: The setting a person's cap is read from, named in its refusal.
PER_PERSON_SETTING = "AHPD_AGENTS_PER_PERSON"


class RunningAgents:
    def __init__(
        self, sessions: Sessions, *, sleep_after_s: float, session_limit: int, per_person: int
    ) -> None:
        self._sessions = sessions
        #: 0: never let an idle agent go on time alone.
        self.sleep_after_s = sleep_after_s
        #: 0: no limit on the sessions running agents.
        self.session_limit = session_limit
        #: 0: no cap on the agents one person runs.
        self.per_person = per_person
        #: Chats that run an agent or may be starting one: every one a turn has begun in since
        #: its agent was last let go (pruned as it is read).
        self._held: dict[LiveChat, None] = {}
        self._closing: set[asyncio.Task[None]] = set()

    # -- what the turns tell it -----------------------------------------------------------

    def used(self, chat: LiveChat) -> None:
        """A turn begins in the chat: its agent is needed, and is not let go on time."""
        _cancel_timer(chat)
        chat.used_at = asyncio.get_running_loop().time()
        if self._holds_process(chat.session.record.provider):
            self._held[chat] = None

    def rested(self, chat: LiveChat) -> None:
        """The chat's work is done: its agent is let go once it has been idle long enough."""
        loop = asyncio.get_running_loop()
        chat.used_at = loop.time()
        _cancel_timer(chat)
        if chat.agent_chat is None or not chat.idle or self.sleep_after_s <= 0:
            return
        if self._holds_process(chat.session.record.provider):
            chat.sleep_timer = loop.call_later(self.sleep_after_s, self._sleep, chat)

    def _sleep(self, chat: LiveChat) -> None:
        chat.sleep_timer = None
        if chat.idle and self._sessions.chat(chat.record.uri) is chat:
            log.info("letting go of the idle agent of %s", chat.record.uri)
            self.let_go(chat)

    # -- the person's cap -----------------------------------------------------------------

    def refusal(self, owner: str | None, provider: str, chat: LiveChat | None = None) -> str | None:
        """Why a turn sent now to `chat` (None: a chat or session about to be made, of
        `provider`, owned by `owner`) may not have an agent started for it; None when it may.
        A chat whose agent runs, or whose work in hand will run the turn, needs no other."""
        if not self.per_person or not self._holds_process(provider):
            return None
        if chat is not None and (chat.agent_chat is not None or not chat.idle):
            return None
        at_work = sum(1 for c in self._owned_by(owner) if c is not chat and not c.idle)
        return self._over_cap(owner, at_work)

    def _over_cap(self, owner: str | None, at_work: int) -> str | None:
        if at_work < self.per_person:
            return None
        return (
            f"{owner or 'This host'} already has {at_work} agents at work, the most one person "
            f"may run at once ({PER_PERSON_SETTING}={self.per_person}): wait for a turn to "
            "end, or stop one"
        )

    # -- making room ----------------------------------------------------------------------

    async def make_room(self, chat: LiveChat) -> None:
        """Before the chat's agent is started: let go of the idle agents the person's cap and
        the residency limit want gone, and wait until they are. Raises BackendError (the turn
        ends in it) where the person's agents are all at work: a turn a client sent was
        refused before it began (`refusal`), so this is one this host began on its own (a
        queued message taken up)."""
        session = chat.session
        if not self._holds_process(session.record.provider):
            return
        going: list[asyncio.Task[None]] = []
        if self.per_person:
            owner = session.record.owner
            owned = [c for c in self._owned_by(owner) if c is not chat]
            reason = self._over_cap(owner, sum(1 for c in owned if not c.idle))
            if reason is not None:
                raise BackendError(reason)
            going += self._let_go_idle(owned, len(owned) + 1 - self.per_person)
        if self.session_limit and not self._resident(session, besides=chat):
            resident = [s for s in self._resident_sessions() if s is not session]
            if len(resident) >= self.session_limit:
                going += self._let_go_session(resident)
        if going:
            await asyncio.gather(*going, return_exceptions=True)

    def _let_go_idle(self, chats: list[LiveChat], count: int) -> list[asyncio.Task[None]]:
        spare = sorted((c for c in chats if c.idle and c.agent_chat is not None), key=_used_at)
        return [task for c in spare[: max(0, count)] if (task := self.let_go(c)) is not None]

    def _let_go_session(self, resident: list[LiveSession]) -> list[asyncio.Task[None]]:
        idle = [s for s in resident if all(c.idle for c in s.chats.values())]
        if not idle:
            log.info(
                "%d sessions run agents, over the residency limit of %d: none is idle",
                len(resident),
                self.session_limit,
            )
            return []
        oldest = min(idle, key=lambda s: max(map(_used_at, s.chats.values()), default=0.0))
        log.info("letting go of the agents of %s, the least recently used", oldest.record.uri)
        return [task for c in oldest.chats.values() if (task := self.let_go(c)) is not None]

    def let_go(self, chat: LiveChat) -> asyncio.Task[None] | None:
        """Let the chat's agent go (its slash commands kept); the task closing it, if it ran."""
        _cancel_timer(chat)
        self._held.pop(chat, None)
        agent_chat, chat.agent_chat = chat.agent_chat, None
        if agent_chat is None:
            return None
        chat.kept_commands = list(getattr(agent_chat, "commands", None) or [])

        async def close() -> None:
            try:
                await agent_chat.close()
            except Exception:
                log.exception("letting go of the agent of %s failed", chat.record.uri)

        task = asyncio.get_running_loop().create_task(close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        return task

    async def drain(self) -> None:
        """At shutdown: no timer fires any more, and every agent being let go has gone."""
        for chat in self._held:
            _cancel_timer(chat)
        self._held.clear()
        await asyncio.gather(*list(self._closing), return_exceptions=True)

    # -- counting -------------------------------------------------------------------------

    def running(self, owner: str | None = None) -> int:
        """Chats whose agent runs or is being started (one person's, when named)."""
        chats = self._live() if owner is None else self._owned_by(owner)
        return sum(1 for _ in chats)

    def _live(self) -> Iterator[LiveChat]:
        for chat in list(self._held):
            if self._sessions.chat(chat.record.uri) is not chat or (
                chat.agent_chat is None and chat.idle
            ):
                del self._held[chat]  # disposed, rewound, or its agent failed to start
            else:
                yield chat

    def _owned_by(self, owner: str | None) -> Iterator[LiveChat]:
        return (c for c in self._live() if c.session.record.owner == owner)

    def _resident(self, session: LiveSession, *, besides: LiveChat) -> bool:
        return any(c.session is session and c is not besides for c in self._live())

    def _resident_sessions(self) -> list[LiveSession]:
        return list(dict.fromkeys(c.session for c in self._live()))

    def _holds_process(self, provider: str) -> bool:
        agent = self._sessions.agents.get(provider)
        return bool(getattr(agent, "holds_process", False))


def _used_at(chat: LiveChat) -> float:
    return chat.used_at


def _cancel_timer(chat: LiveChat) -> None:
    if chat.sleep_timer is not None:
        chat.sleep_timer.cancel()
        chat.sleep_timer = None
