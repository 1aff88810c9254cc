"""Reading the agent's raw JSON, which is taken as it comes and never trusted to be well formed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def string(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def mappings(value: Any) -> list[Mapping[str, Any]]:
    """The objects of a list, the rest left out; nothing when it is not a list."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def block_text(content: Any) -> str | None:
    """The text of a content block; other kinds (images, resources) are not text to stream."""
    if isinstance(content, Mapping) and content.get("type") == "text":
        return string(content.get("text"))
    return None


def as_json(value: Any) -> str:
    """A tool's input as the text a person is shown: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
