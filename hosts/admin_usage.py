"""What the admin shows of usage, read by the usage app's functions that the composition root
names (settings.AHPD_TURNS_USAGE, AHPD_POOL_USAGE), so that hosts imports nothing of usage."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string


def turns_usage(turns: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each turn's usage figures by turn id (`usd`, `tokens`, `records`, `unpriced`...); a turn
    with no usage record yet is left out."""
    return dict(import_string(settings.AHPD_TURNS_USAGE)(list(turns)))


def pool_usage(pool: str) -> dict[str, Any]:
    """A pool's today, this week and this month so far (`day`, `week`, `month`)."""
    return dict(import_string(settings.AHPD_POOL_USAGE)(pool))


def dollars(usd: Any) -> str:
    """US dollars as the admin says them: `$0.125000`."""
    return f"${Decimal(str(usd or 0)).quantize(Decimal('0.000001'))}"


def spent(figures: dict[str, Any] | None) -> str:
    """A turn's (or a period's) usage in a few words; "-" for none."""
    if not figures or not figures.get("records"):
        return "-"
    unpriced = " (unpriced)" if figures.get("unpriced") == figures.get("records") else ""
    return f"{dollars(figures.get('usd'))}, {figures.get('tokens', 0)} tokens{unpriced}"
