"""The rules of a session's annotations channel: the five mark actions a client sends, each
taken by services/annotations.py."""

from __future__ import annotations

from ..services.annotations import do_annotate
from .rule import ActionRule, Dispatch


def _annotated(d: Dispatch) -> str | None:
    return do_annotate(d.host, d.caller, d.channel, d.action)


ANNOTATION_RULES = tuple(
    ActionRule(action_type, grant="session:review", effect=_annotated)
    for action_type in (
        "annotations/set",
        "annotations/updated",
        "annotations/removed",
        "annotations/entrySet",
        "annotations/entryRemoved",
    )
)
