"""A terminal's held content, kept under its scrollback cap (AHPD_TERMINAL_SCROLLBACK_BYTES).

A terminal left running `tail -f` would otherwise have the host hold a day of output for a
client that may never come back. What is dropped is the oldest output; a late subscriber reads
the recent screen. Pure: content parts in, content parts out.
"""

from __future__ import annotations

from typing import Any


def text_key(part: dict[str, Any]) -> str:
    """The field a content part keeps its output in."""
    return "output" if part.get("type") == "command" else "value"


def part_bytes(part: Any) -> int:
    if not isinstance(part, dict):
        return 0
    return len(str(part.get(text_key(part)) or "").encode())


def content_bytes(content: list[Any]) -> int:
    return sum(part_bytes(part) for part in content)


def trimmed(content: list[Any], keep: int) -> list[Any]:
    """`content` with its oldest output dropped until at most `keep` bytes of it are left.

    Whole parts go first, oldest first; the part the cut falls in loses its head, up to the
    next line start where one follows, so the screen a late subscriber draws starts on a line.
    A running command keeps its part (its output emptied) so its commandFinished still lands.
    """
    sizes = [part_bytes(part) for part in content]
    excess = sum(sizes) - keep
    if excess <= 0:
        return content
    kept: list[Any] = []
    for part, size in zip(content, sizes, strict=True):
        if excess <= 0:
            kept.append(part)
            continue
        running = part.get("type") == "command" and not part.get("isComplete")
        if size <= excess:
            excess -= size
            if running:
                kept.append({**part, "output": ""})
            continue
        key = text_key(part)
        tail = str(part.get(key) or "").encode()[excess:].decode("utf-8", "ignore")
        newline = tail.find("\n")
        if 0 <= newline < len(tail) - 1:
            tail = tail[newline + 1 :]
        kept.append({**part, key: tail})
        excess = 0
    return kept
