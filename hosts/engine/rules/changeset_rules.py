"""The rules of a changeset's actions: what the host says as it reads git (and the catalogues
of a session and its chats, as a folder enters or leaves a git tree), and the one action
a client sends, a review tick, which the uncommitted changeset refuses (it keeps no review:
its files are the working tree's, and a tick on them would say nothing true for long)."""

from __future__ import annotations

from .rule import ActionRule, Dispatch


def _no_review(d: Dispatch) -> str:
    return f"{d.channel.uri} keeps no review: it is the working tree's uncommitted changes"


CHANGESET_RULES = (
    ActionRule("changeset/filesReviewChanged", grant="session:review", refusal=_no_review),
    *(
        ActionRule(action_type, said_by_host=True)
        for action_type in (
            "session/changesetsChanged",
            "chat/changesetsChanged",
            "changeset/statusChanged",
            "changeset/fileSet",
            "changeset/fileRemoved",
            "changeset/contentChanged",
            "changeset/operationsChanged",
            "changeset/operationStatusChanged",
            "changeset/cleared",
        )
    ),
)
