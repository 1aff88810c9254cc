"""A turn's metering without Django: what a backend reports is held as running totals and
written per turn, or per report as what each report added; a record that leaves the budget
spent stops the turn; a refused turn holds nothing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hosts.backends.base import Context, Cost, TurnRequest
from hosts.engine.clock import now_ms
from hosts.engine.meter import Admission, Use, Work
from hosts.engine.sessions.metered import Metering
from hosts.engine.sessions.runner import TurnRunner


class Sink:
    def __init__(self) -> None:
        self.said: list[dict[str, Any]] = []

    def say(self, action: dict[str, Any]) -> None:
        self.said.append(action)

    def raise_input_needed(self, turn_id: str, call_id: str) -> None: ...

    def settle_input_needed(self, turn_id: str, call_id: str) -> None: ...


class Meter:
    def __init__(self, *, per_report: bool, refusal: str | None = None) -> None:
        self.per_report = per_report
        self.refusal = refusal
        self.asked: list[Work] = []
        self.records: list[Use] = []
        #: What record() answers once the records hold this many input tokens.
        self.spent_at: int | None = None

    async def check_session(self, work: Work) -> str | None:
        return None

    async def admit_turn(self, work: Work) -> Admission:
        self.asked.append(work)
        return Admission(self.refusal, ("row-1",))

    async def record(self, use: Use) -> str | None:
        self.records.append(use)
        total = sum(r.input_tokens for r in self.records)
        return "row-1 is spent" if self.spent_at is not None and total >= self.spent_at else None

    async def resource(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}


def chat() -> Any:
    record = SimpleNamespace(owner="user:o", scope="team:alpha", provider="local", uri="s")
    channel = SimpleNamespace(state={"config": {"values": {"model": "m-default"}}})
    return SimpleNamespace(
        session=SimpleNamespace(record=record, channel=channel),
        record=SimpleNamespace(uri="c"),
    )


def runner(sink: Sink, sender: str | None = "user:s") -> TurnRunner:
    made = TurnRunner(sink, "t1", 0, 0)
    made.sender = sender
    return made


async def test_a_turn_is_one_record_of_its_last_running_totals():
    meter, metering, live, sink = Meter(per_report=False), Metering(), chat(), Sink()
    metering.meter = meter
    turn = runner(sink)
    assert await metering.admit(live, turn, TurnRequest("t1", "hi", model="m-asked")) is None
    assert meter.asked == [Work("user:s", "team:alpha", "local", "m-asked")]
    turn.usage(input_tokens=10, output_tokens=1, model=None)
    turn.usage(input_tokens=30, output_tokens=5, model="m-said", cost=Cost(0.5))
    assert meter.records == []
    await metering.settle(live, turn)
    await metering.settle(live, turn)  # once only
    [record] = meter.records
    assert (record.input_tokens, record.output_tokens, record.cost_usd) == (30, 5, 0.5)
    assert record.work.model == "m-said" and record.payers == ("row-1",)
    assert [a["type"] for a in sink.said] == ["chat/usage", "chat/usage"]


async def test_per_report_each_record_holds_what_its_report_added_and_a_spent_one_stops():
    meter, metering, live, sink = Meter(per_report=True), Metering(), chat(), Sink()
    meter.spent_at = 250
    metering.meter = meter
    stopped: list[str] = []
    metering.on_spent = lambda c, r, why: (stopped.append(why), r.end("error", why))
    turn = runner(sink, sender=None)  # nobody named: the session's owner
    await metering.admit(live, turn, TurnRequest("t1", "go"))
    assert meter.asked[0].person == "user:o" and meter.asked[0].model == "m-default"
    for used in (100, 200, 300):
        turn.usage(input_tokens=used, output_tokens=None, model=None)
    await metering.settle(live, turn)
    assert [r.input_tokens for r in meter.records] == [100, 100, 100]
    assert stopped == ["row-1 is spent"]
    assert sink.said[-1]["type"] == "chat/error"


async def test_a_refused_turn_holds_nothing():
    meter, metering, live, sink = Meter(per_report=False, refusal="no"), Metering(), chat(), Sink()
    metering.meter = meter
    turn = runner(sink)
    assert await metering.admit(live, turn, TurnRequest("t1", "hi")) == "no"
    turn.usage(input_tokens=3, output_tokens=3, model=None)
    await metering.settle(live, turn)
    assert meter.records == []


async def test_each_chat_usage_says_everything_the_turn_has_reported_so_far():
    meter, metering, live, sink = Meter(per_report=False), Metering(), chat(), Sink()
    metering.meter = meter
    turn = runner(sink)
    await metering.admit(live, turn, TurnRequest("t1", "hi"))
    # ACP's shape: the context and the cost in one report, the tokens in the prompt's answer.
    turn.usage(
        input_tokens=None,
        output_tokens=None,
        model="m",
        cost=Cost(0.25),
        context=Context(900, 10_000),
    )
    turn.usage(input_tokens=7, output_tokens=3, model=None, cache_write_tokens=2)
    await metering.settle(live, turn)
    assert sink.said[-1]["usage"] == {
        "inputTokens": 7,
        "outputTokens": 3,
        "model": "m",
        "_meta": {
            "ahpd.cacheWriteTokens": 2,
            "ahpd.context": {"used": 900, "size": 10_000},
            "ahpd.cost": {"amount": 0.25, "currency": "USD"},
        },
    }
    [record] = meter.records
    assert (record.input_tokens, record.cache_write_tokens, record.cost_usd) == (7, 2, 0.25)


async def test_a_cost_in_another_currency_is_not_counted_as_dollars():
    meter, metering, live, sink = Meter(per_report=False), Metering(), chat(), Sink()
    metering.meter = meter
    turn = runner(sink)
    await metering.admit(live, turn, TurnRequest("t1", "hi"))
    turn.usage(input_tokens=4, output_tokens=4, model=None, cost=Cost(3.0, "EUR"))
    await metering.settle(live, turn)
    [record] = meter.records
    assert record.input_tokens == 4 and record.cost_usd is None


async def test_per_report_a_report_of_the_context_alone_is_no_record():
    meter, metering, live, sink = Meter(per_report=True), Metering(), chat(), Sink()
    metering.meter = meter
    turn = runner(sink)
    await metering.admit(live, turn, TurnRequest("t1", "go"))
    turn.usage(input_tokens=None, output_tokens=None, model=None, context=Context(5, 10))
    turn.usage(input_tokens=None, output_tokens=None, model=None, cost=Cost(0.5))
    turn.usage(input_tokens=None, output_tokens=None, model=None, context=Context(8, 10))
    turn.usage(input_tokens=6, output_tokens=2, model=None)
    await metering.settle(live, turn)
    assert [(r.input_tokens, r.cost_usd) for r in meter.records] == [(0, 0.5), (6, 0.0)]


async def test_a_resumed_turn_meters_only_its_new_run_and_says_both_runs_usage():
    meter, metering, live, sink = Meter(per_report=False), Metering(), chat(), Sink()
    metering.meter = meter
    turn = TurnRunner(sink, "t1", now_ms(), 0)
    cost = {"amount": 0.25, "currency": "USD"}
    earlier = {"inputTokens": 40, "outputTokens": 4, "model": "m", "_meta": {"ahpd.cost": cost}}
    turn.continuing(60_000, earlier)
    await metering.admit(live, turn, TurnRequest("t1", "hi"))
    turn.usage(input_tokens=10, output_tokens=1, model="m", cost=Cost(0.5))
    await metering.settle(live, turn)
    [record] = meter.records
    assert (record.input_tokens, record.output_tokens, record.cost_usd) == (10, 1, 0.5)
    assert record.duration_ms < 60_000 <= turn.duration()
    said = sink.said[-1]["usage"]
    assert (said["inputTokens"], said["outputTokens"]) == (50, 5)
    assert said["_meta"]["ahpd.cost"] == {"amount": 0.75, "currency": "USD"}
