"""One turn's usage reports, merged: said as the protocol's UsageInfo and handed to the meter.

`chat/usage` replaces the active turn's usage whole, so each one says everything the turn's
reports have said so far: a backend that reports its cost and context fill in one report and
its tokens in another (ACP's usage_update and its prompt answer) loses neither. What the
protocol names no field for rides `_meta` as seed 000 says: `ahpd.cacheWriteTokens`,
`ahpd.context` ({used, size}) and `ahpd.cost` ({amount, currency}).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...backends.base import Context, Cost

#: Token figures: the meter's name, the UsageInfo field (or its `_meta` key).
TOKENS = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadTokens"),
    ("cache_write_tokens", "ahpd.cacheWriteTokens"),
)


@dataclass(slots=True)
class TurnUsage:
    """What the turn's reports have said, the latest of each figure."""

    tokens: dict[str, int]
    model: str | None = None
    cost: Cost | None = None
    context: Context | None = None

    @classmethod
    def empty(cls) -> TurnUsage:
        return cls({})

    def add(
        self,
        figures: dict[str, int | None],
        model: str | None,
        cost: Cost | None,
        context: Context | None,
    ) -> bool:
        """Take one report; whether it said anything."""
        said = {key: value for key, value in figures.items() if value is not None}
        self.tokens.update(said)
        self.model = model or self.model
        self.cost = cost or self.cost
        self.context = context or self.context
        return bool(said or model or cost or context)

    def info(self) -> dict[str, Any]:
        """The protocol's UsageInfo of everything said so far."""
        usage: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        for key, field in TOKENS:
            if key in self.tokens:
                (meta if field.startswith("ahpd.") else usage)[field] = self.tokens[key]
        if self.model:
            usage["model"] = self.model
        if self.context is not None:
            meta["ahpd.context"] = {"used": self.context.used, "size": self.context.size}
        if self.cost is not None:
            meta["ahpd.cost"] = {"amount": self.cost.amount, "currency": self.cost.currency}
        if meta:
            usage["_meta"] = meta
        return usage

    def figures(self) -> dict[str, Any]:
        """What the meter is handed (sessions/metered.py): the running totals, the cost only
        where it is in US dollars (another currency is not converted: the turn is priced as
        if the agent had said none) and the currency it was said in."""
        usd = self.cost is not None and self.cost.currency.upper() == "USD"
        return {
            **{key: self.tokens.get(key) for key, _ in TOKENS},
            "model": self.model,
            "cost_usd": self.cost.amount if usd and self.cost is not None else None,
            "cost_currency": self.cost.currency if self.cost is not None else None,
        }


def continued(earlier: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    """A resumed turn's UsageInfo: its earlier run's tokens and cost added to this run's
    (each run reports its own totals), the model and the context window this run's."""
    if not earlier:
        return now
    usage = {**now}
    for field in ("inputTokens", "outputTokens", "cacheReadTokens"):
        if isinstance(earlier.get(field), int):
            usage[field] = earlier[field] + int(now.get(field) or 0)
    usage.setdefault("model", earlier.get("model"))
    found = earlier.get("_meta")
    before: dict[str, Any] = found if isinstance(found, dict) else {}
    meta = {**before, **(now.get("_meta") or {})}
    if isinstance(before.get("ahpd.cacheWriteTokens"), int):
        added = int((now.get("_meta") or {}).get("ahpd.cacheWriteTokens") or 0)
        meta["ahpd.cacheWriteTokens"] = before["ahpd.cacheWriteTokens"] + added
    cost, cost_now = before.get("ahpd.cost"), (now.get("_meta") or {}).get("ahpd.cost")
    if isinstance(cost, dict) and isinstance(cost_now, dict):
        if cost.get("currency") == cost_now.get("currency"):
            meta["ahpd.cost"] = {**cost_now, "amount": cost["amount"] + cost_now["amount"]}
    if meta:
        usage["_meta"] = meta
    return {key: value for key, value in usage.items() if value is not None}
