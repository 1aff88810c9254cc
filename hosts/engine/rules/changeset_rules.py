"""The rules of a changeset's actions: what the host says as it reads git (and the catalogues
of a session and its chats, as a folder enters or leaves a git tree), and the one action
a client sends, a review tick, which a session's and a turn's changes keep and the working
tree's refuses (services/changesets.py)."""

from __future__ import annotations

from ..services.changesets import do_review_files
from .rule import ActionRule, Dispatch


def _reviewed(d: Dispatch) -> str | None:
    return do_review_files(d.host, d.caller, d.channel.uri, d.action)


CHANGESET_RULES = (
    ActionRule("changeset/filesReviewChanged", grant="session:review", effect=_reviewed),
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
