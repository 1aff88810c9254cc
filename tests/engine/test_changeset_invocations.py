"""invokeChangesetOperation's refusals, in VS Code's order and words, where the end-to-end
tests cannot place a request deterministically: an operation the channel holds idle (one that
ended mid-turn) while the session runs a turn; and which invocations share one run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hosts.engine.changesets import invocations
from hosts.engine.changesets.changeset_table import Changeset
from hosts.engine.changesets.operations import Tree
from hosts.engine.channel import Channel
from hosts.protocol.errors import ProtocolError

URI = "ahp-session:/one/changeset/uncommitted"


class Turning:
    """The changesets' view of a session that runs a turn; nothing is read again."""

    def running(self, changeset: Changeset) -> bool:
        return True

    async def read(self, changeset: Changeset) -> None:
        raise AssertionError("held as read: nothing to read again")


def held(status: str, scopes: list[str]) -> Changeset:
    operations = [{"id": "commit", "label": "Commit", "scopes": scopes, "status": status}]
    channel = Channel(URI, "changeset", {"status": "ready", "files": [], "operations": operations})
    changeset = Changeset(channel, "ahp-session:/one", "uncommitted", Path("/nowhere"))
    changeset.tree = Tree(Path("/nowhere"), ".", None, ())
    changeset.running = True
    return changeset


async def refused(changeset: Changeset, operation: str, target: Any = None) -> str:
    with pytest.raises(ProtocolError) as caught:
        await invocations.invoke(
            Turning(),  # type: ignore[arg-type]
            changeset,
            URI,
            operation,
            target,
            None,
            ("someone", "someone@ahpd"),
        )
    assert caught.value.code == -32602
    return str(caught.value.message)


async def test_an_operation_held_idle_mid_turn_is_refused_for_the_turn():
    said = await refused(held("idle", ["changeset"]), "commit")
    assert said == f"Operation 'commit' is disabled while a turn is active on changeset {URI}"


async def test_one_held_disabled_is_refused_as_disabled_before_the_turn_is_asked():
    said = await refused(held("disabled", ["changeset"]), "commit")
    assert said == f"Operation 'commit' is disabled on changeset {URI}"


async def test_an_unknown_operation_is_refused_before_anything_else():
    said = await refused(held("disabled", ["changeset"]), "push")
    assert said == f"Unknown operation 'push' on changeset {URI}"


class Idle:
    """The changesets' view of a session at rest: reads change nothing, what is said is kept."""

    def __init__(self) -> None:
        self.said: list[dict[str, Any]] = []
        self.fanout = self

    def running(self, changeset: Changeset) -> bool:
        return False

    async def read(self, changeset: Changeset) -> None:
        return None

    def subject(self, changeset: Changeset) -> str:
        return "the title"

    def emit(self, channel: Channel, action: dict[str, Any]) -> None:
        self.said.append(action)


async def test_the_same_invocation_shares_a_run_but_never_across_people(monkeypatch):
    release = asyncio.Event()
    authors: list[tuple[str, str]] = []

    async def commit(operation: str, tree: Tree, path: Any, message: str, who: Any) -> str:
        authors.append(who)
        await release.wait()
        return f"committed as {who[0]}"

    monkeypatch.setattr(invocations.operations, "run", commit)
    changesets, changeset = Idle(), held("idle", ["changeset"])
    changeset.running = False

    def ask(who: str) -> asyncio.Task[str]:
        return asyncio.ensure_future(
            invocations.invoke(
                changesets,  # type: ignore[arg-type]
                changeset,
                URI,
                "commit",
                None,
                "words",
                (who, f"{who}@ahpd"),
            )
        )

    # Each is asked before any has run (the tasks start in this order once this awaits).
    ana, ana_again, bo = ask("ana"), ask("ana"), ask("bo")
    release.set()
    assert await ana == await ana_again == "committed as ana"
    assert await bo == "committed as bo"
    assert authors == [("ana", "ana@ahpd"), ("bo", "bo@ahpd")]
