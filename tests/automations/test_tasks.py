"""The Celery task beat fires, with the engine behind the relay's layer played by a stand-in
that answers the calls it is told to: nothing is claimed while no server answers, and a server
slow to take one automation's runs is still told the others'."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.conf import settings

from automations import tasks
from automations.models import Automation, AutomationRun
from hosts.edge import engine_client
from hosts.edge.relay import REPLY
from hosts.edge.runtime import ENGINE_CHANNEL
from hosts.engine.automations.schedule import iso_or_none

pytestmark = pytest.mark.django_db


class Engine:
    """A channel layer whose engine channel is read by a stand-in: it answers a call when
    `answers(service, args)` says so, and never otherwise."""

    def __init__(self, answers: Callable[[str, dict[str, Any]], bool]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._replies: dict[str, dict[str, Any]] = {}

    async def new_channel(self, prefix: str = "specific.") -> str:
        return prefix + uuid.uuid4().hex

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        assert channel == ENGINE_CHANNEL
        self.calls.append((message["service"], message["args"]))
        if self.answers(message["service"], message["args"]):
            self._replies[message["reply_to"]] = {"type": REPLY, "result": {}}

    async def receive(self, channel: str) -> dict[str, Any]:
        if channel in self._replies:
            return self._replies.pop(channel)
        await asyncio.Event().wait()  # nobody answers: the caller's timeout ends it
        raise AssertionError("unreachable")


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Engine]]:
    monkeypatch.setattr(tasks, "HERE_TIMEOUT_S", 0.2)
    monkeypatch.setattr(tasks, "CLAIMED_TIMEOUT_S", 0.2)

    def playing(answers: Callable[[str, dict[str, Any]], bool]) -> Engine:
        layer = Engine(answers)
        monkeypatch.setattr(engine_client, "get_channel_layer", lambda: layer)
        return layer

    # As in a Celery worker: the engine is the server's, over the layer.
    engine_client.engine_elsewhere()
    yield playing
    engine_client.engine_here()


def due(uri: str, made_ms: int = 0) -> Automation:
    """An automation whose last minute boundary is due now."""
    trigger = {
        "id": "t",
        "kind": "schedule",
        "schedule": {"expression": "* * * * *", "timeZone": "UTC"},
    }
    looked = iso_or_none(datetime.now(UTC) - timedelta(seconds=61))
    return Automation.objects.create(
        uri=uri,
        definition={"title": uri, "enabled": True, "triggers": [trigger]},
        owner="",
        created_ms=made_ms,
        modified_ms=made_ms,
        cursors={"t": looked},
    )


def test_nothing_is_claimed_while_the_server_does_not_answer(engine):
    layer = engine(lambda service, args: False)
    looked = due("ahp-automation:/a").cursors
    assert tasks.fire_due_automations() == 0
    assert [service for service, _ in layer.calls] == ["automations_here"]
    assert AutomationRun.objects.count() == 0
    # The due time is still due: claimed once the server is back.
    assert Automation.objects.get(uri="ahp-automation:/a").cursors == looked
    engine(lambda service, args: True)
    assert tasks.fire_due_automations() == 1
    assert AutomationRun.objects.get().automation_id == "ahp-automation:/a"


def test_a_server_slow_to_take_one_automations_runs_is_told_the_others(engine):
    slow = "ahp-automation:/slow"
    layer = engine(lambda service, args: args.get("automation") != slow)
    due(slow, 1), due("ahp-automation:/quick", 2)  # the slow one is told first
    assert tasks.fire_due_automations() == 1
    told = [args["automation"] for service, args in layer.calls if service == "automation_claimed"]
    assert sorted(told) == ["ahp-automation:/quick", slow]
    # Both claimed, each due time once; the slow one's run waits pending for the server.
    assert sorted(AutomationRun.objects.values_list("automation_id", "status")) == [
        ("ahp-automation:/quick", "pending"),
        (slow, "pending"),
    ]


def test_a_tick_no_worker_took_in_its_period_is_dropped():
    entry = settings.CELERY_BEAT_SCHEDULE["fire-due-automations"]
    assert entry["options"]["expires"] == entry["schedule"] == settings.AHPD_AUTOMATION_TICK_SECONDS
