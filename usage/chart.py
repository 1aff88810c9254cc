"""A pool's last 30 days as an inline SVG bar chart, drawn on the server (no script)."""

from __future__ import annotations

from datetime import date, timedelta
from html import escape

from .reading import daily

WIDTH, HEIGHT, DAYS = 620, 160, 30


def last_30_days(pool: str, today: date) -> str:
    """Bars of each day's dollars (tokens where nothing was priced), today the last."""
    first = today - timedelta(days=DAYS - 1)
    by_day = {row["day"]: row for row in daily(pool, first, today)}
    priced = any(row["usd"] for row in by_day.values())
    measure = "usd" if priced else "tokens"
    values = [
        float(by_day.get((first + timedelta(days=n)).isoformat(), {}).get(measure, 0))
        for n in range(DAYS)
    ]
    top = max(values) or 1.0
    bar = WIDTH / DAYS
    bars = []
    for n, value in enumerate(values):
        height = (HEIGHT - 20) * value / top
        day = first + timedelta(days=n)
        said = f"${value:.4f}" if priced else f"{int(value)} tokens"
        bars.append(
            f'<rect x="{n * bar + 1:.1f}" y="{HEIGHT - 14 - height:.1f}" width="{bar - 2:.1f}" '
            f'height="{height:.1f}" fill="#417690"><title>{day.isoformat()}: {said}</title></rect>'
        )
    label = f"{escape(pool)}: {'dollars' if priced else 'tokens'} a day, {first} to {today}"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{label}"><title>{label}</title>'
        f'<line x1="0" y1="{HEIGHT - 14}" x2="{WIDTH}" y2="{HEIGHT - 14}" stroke="#999"/>'
        + "".join(bars)
        + f'<text x="0" y="{HEIGHT - 2}" font-size="10">{first}</text>'
        f'<text x="{WIDTH}" y="{HEIGHT - 2}" font-size="10" text-anchor="end">{today}</text>'
        f'<text x="0" y="10" font-size="10">max {top:g}</text></svg>'
    )
