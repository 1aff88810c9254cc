"""What one action type is to this host: who may send it, what taking it does, who says it.

A client's action passes, in order: its type is one a client may send -> its rule's grant ->
a target this host knows (or the rule's answer for one it does not) -> the action's shape
(hosts/protocol/validation.py) -> the rule's effect: one service (services/, a do_*) that
says it and does what follows, or refuses it (why, returned or raised). `said_by_host` marks
what this host says on its own account.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..channel import Channel
from ..host import Host
from ..services import Caller, do_set_flag
from ..sessions import LiveChat, LiveSession

#: The answers to an action naming a target nothing here knows, beside a refusal's words.
DROP = "drop"  # nothing said, nothing kept
ECHO = "echo"  # said back on the channel named, with its origin; kept nowhere


@dataclass(frozen=True, slots=True)
class Dispatch:
    """One client action on its way in: its target found, its grant held, its shape checked."""

    host: Host
    channel: Channel
    action: dict[str, Any]
    caller: Caller

    @property
    def session(self) -> LiveSession:
        session = self.host.sessions.session(self.channel.uri)
        assert session is not None, "a session rule runs on a session the table holds"
        return session

    @property
    def chat(self) -> LiveChat:
        chat = self.host.sessions.chat(self.channel.uri)
        assert chat is not None, "a chat rule runs on a chat the table holds"
        return chat


#: An effect returns why the action is refused, or None; one that must wait for something (a
#: commit before the action is said) returns an awaitable of that.
Effect = Callable[[Dispatch], "str | None | Awaitable[str | None]"]
Words = Callable[[Dispatch], str]


def flag_effect(key: str) -> Effect:
    """The effect of a session's or a chat's isReadChanged / isArchivedChanged."""

    def effect(d: Dispatch) -> str | None:
        return do_set_flag(d.host, d.caller, d.channel.uri, key, d.action)

    return effect


@dataclass(frozen=True, slots=True)
class ActionRule:
    type: str
    #: What a client must hold to send it.
    grant: str | None = None
    #: The grant, where it depends on the action (a trust-only root push).
    grant_for: Callable[[dict[str, Any]], str | None] | None = None
    #: Take it: say it and do what follows; a reason returned refuses it.
    effect: Effect | None = None
    #: Refused in these words, whatever it names (served by no effect).
    refusal: Words | None = None
    #: A refusal the reference host gives too, in its words, whatever the target.
    by_design: bool = False
    #: Said with who sent it (`_meta['ahpd.sender']`), on the action and its message.
    signed: bool = False
    #: The answer to a target nothing here knows: DROP, ECHO, or a refusal's words with {uri}.
    unknown_target: str | None = None
    #: Why it is refused whatever its target, given who sent it and the kind of channel it
    #: names (None: a scheme this host does not know): asked after its grant, before the
    #: target is read, as VS Code's host asks it.
    sender_refusal: Callable[[Caller, str | None], str | None] | None = None
    #: This host says it on its own account.
    said_by_host: bool = False
    #: Why this host never says a host action: nothing here ever moves what it carries, as
    #: the reference host's own sessions never say it (the coverage table gives the reason).
    never_said: str | None = None

    def needed(self, action: dict[str, Any]) -> str | None:
        return self.grant_for(action) if self.grant_for is not None else self.grant

    @property
    def served(self) -> bool:
        """Taken from a client and acted on."""
        return self.effect is not None
