"""A Claude turn whose model call failed, and what running it again (chat/turnResume) needs:
where the conversation is cut back to, the prompt the cut drops, and which failures asking
again may mend (chat.py's resume_turn runs it)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from hosts.backends.base import TurnEnd

from .turn import Turn

#: A model call failed for these reasons is not asked again: nobody is signed in to ask it.
NOT_RESUMABLE = ("authentication_failed", "billing_error")
#: The CLI's words when the conversation after a cut point is not the failed turn's alone.
DROPS_REFUSED = "Resume rejected by --resume-drops-turn"
NO_FAILED_CALL = "This conversation holds no failed model call to ask again."


@dataclass(frozen=True)
class FailedTurn:
    """A turn whose model call failed, which chat/turnResume may run again."""

    turn_id: str
    #: The last entry of the conversation before the turn's prompt (None: the turn was the
    #: conversation's first), where the conversation is cut back to.
    cut: str | None
    #: The uuid the turn's prompt was sent under: what the cut drops.
    prompt: str


def model_call_failed(turn: Turn, end: TurnEnd) -> bool:
    """Whether the turn ended because a model call failed, which asking again may mend: not a
    refused sign-in, and not a turn that failed before the CLI or with it (no model error)."""
    return (
        end.state == "error"
        and turn.model_error is not None
        and turn.model_error not in NOT_RESUMABLE
        and not turn.cancelled.is_set()
    )


def forget_transcript(projects: Path, session: str) -> None:
    """The CLI's record of a conversation (its transcript, and its subagents' beside it), under
    its projects folder: a conversation whose first turn failed starts over without it."""
    for transcript in projects.glob(f"*/{session}.jsonl"):
        shutil.rmtree(transcript.with_suffix(""), ignore_errors=True)
        transcript.unlink(missing_ok=True)
