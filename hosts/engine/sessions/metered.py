"""A turn's policy check before it reaches its agent, and what it used written down.

The check (meter.admit_turn) runs as the turn's task begins its work, before the agent is
opened: a refused turn ends in chat/error naming the row and never reaches the model. What the
backend reports (TurnRunner.usage) is held per turn: written as one record when the turn ends
(AHPD_USAGE_PER=turn), or as one record per report holding what that report added
(`report`), where a record that leaves a paying row with no room stops the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ...backends.base import TurnRequest
from ..meter import Meter, NoMeter, Use, Work
from .live_session import LiveChat
from .runner import TurnRunner

log = logging.getLogger("ahpd.usage")

FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass
class Held:
    """One turn's usage so far: the last report's running figures and what is written."""

    use: Use
    reported: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    cost_written: float = 0.0
    written_ms: int = 0
    settled: bool = False
    #: Whether the agent said a cost in a currency other than US dollars (said once).
    other_currency: bool = False
    #: The records written so far, in order (a report's is chained on the one before it).
    pending: asyncio.Task[None] | None = None


class Metering:
    def __init__(self) -> None:
        #: Set by the process that has a database (usage.meter.DjangoMeter).
        self.meter: Meter = NoMeter()
        self._held: dict[int, Held] = {}
        self._settling: set[asyncio.Task[None]] = set()
        #: Stops a turn whose record left its budget spent (Turns.stop_over_budget).
        self.on_spent: Callable[[LiveChat, TurnRunner, str], None] | None = None

    def work_of(self, chat: LiveChat, runner: TurnRunner, model: str | None) -> Work:
        record = chat.session.record
        configured = chat.session.channel.state.get("config", {}).get("values", {}).get("model")
        named = model or (configured if isinstance(configured, str) and configured else None)
        return Work(runner.sender or record.owner or "", record.scope, record.provider, named)

    async def admit(self, chat: LiveChat, runner: TurnRunner, request: TurnRequest) -> str | None:
        """Why the turn may not run (naming the row), or None: then its usage is held."""
        work = self.work_of(chat, runner, request.model)
        admission = await self.meter.admit_turn(work)
        if admission.refusal is not None:
            return admission.refusal
        use = Use(work, chat.session.record.uri, chat.record.uri, runner.turn_id)
        held = self._held[id(runner)] = Held(replace(use, payers=admission.payers))
        # A resumed turn's earlier run was metered with its own usage: this run's records
        # carry this run's time.
        held.written_ms = runner.earlier_ms
        runner.on_usage = lambda figures: self._reported(chat, runner, held, figures)
        return None

    def _reported(
        self, chat: LiveChat, runner: TurnRunner, held: Held, figures: dict[str, Any]
    ) -> None:
        """A usage report: each figure is the turn's running total so far."""
        for key in FIGURES:
            if isinstance(figures.get(key), int):
                held.reported[key] = figures[key]
        if isinstance(figures.get("model"), str) and figures["model"]:
            held.use = replace(held.use, work=replace(held.use.work, model=figures["model"]))
        if isinstance(figures.get("cost_usd"), int | float):
            held.cost = float(figures["cost_usd"])
        elif figures.get("cost_currency") and not held.other_currency:
            held.other_currency = True
            log.warning(
                "turn %s: the agent said its cost in %s, not US dollars: the turn is priced "
                "from AHPD_CONFIG, or recorded with no cost",
                runner.turn_id,
                figures["cost_currency"],
            )
        if self.meter.per_report and self._unwritten(held):
            self._write(chat, runner, held, runner.duration())

    @staticmethod
    def _unwritten(held: Held) -> bool:
        """Whether a report added tokens or cost not yet written (a report of the context
        window's fill alone is no record)."""
        more = any(held.reported.get(k, 0) > held.written.get(k, 0) for k in FIGURES)
        return more or (held.cost is not None and held.cost > held.cost_written)

    def _write(self, chat: LiveChat, runner: TurnRunner, held: Held, at_ms: int) -> None:
        """Write what was used since the last record, in order after it."""
        added = {k: max(0, held.reported.get(k, 0) - held.written.get(k, 0)) for k in FIGURES}
        cost = None if held.cost is None else max(0.0, held.cost - held.cost_written)
        use = replace(
            held.use,
            input_tokens=added["input_tokens"],
            output_tokens=added["output_tokens"],
            cache_read_tokens=added["cache_read_tokens"],
            cache_write_tokens=added["cache_write_tokens"],
            cost_usd=cost,
            duration_ms=max(0, at_ms - held.written_ms),
        )
        held.written = dict(held.reported)
        held.cost_written = held.cost if held.cost is not None else held.cost_written
        held.written_ms = at_ms
        previous = held.pending

        async def write() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            try:
                refusal = await self.meter.record(use)
            except Exception:
                log.exception("writing the usage of turn %s failed", use.turn)
                return
            if refusal is not None and not runner.ended and self.on_spent is not None:
                self.on_spent(chat, runner, refusal)

        held.pending = asyncio.get_running_loop().create_task(write())

    async def settle(self, chat: LiveChat, runner: TurnRunner) -> None:
        """The turn is over: what it used and has not been written is written, once."""
        held = self._held.pop(id(runner), None)
        if held is None or held.settled:
            return
        held.settled = True
        runner.on_usage = None
        if not self.meter.per_report or self._unwritten(held):
            self._write(chat, runner, held, runner.duration())
        if held.pending is not None:
            await asyncio.gather(held.pending, return_exceptions=True)

    def settle_later(self, chat: LiveChat, runner: TurnRunner) -> None:
        """`settle`, for a turn that ended another way (stopped, failed): not waited for."""
        if id(runner) in self._held:
            task = asyncio.get_running_loop().create_task(self.settle(chat, runner))
            self._settling.add(task)
            task.add_done_callback(self._settling.discard)
