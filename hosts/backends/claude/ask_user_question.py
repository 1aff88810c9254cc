"""Claude's own questions: its `AskUserQuestion` tool, put to the person and answered.

The CLI asks permission for an AskUserQuestion call through `can_use_tool`, its questions in
the input (`questions: [{question, header, options: [{label, description}], multiSelect}]`).
The questions go to the person as one ChatInputRequest (`TurnEvents.ask`, marked as the
agent's own question with `_meta.purpose: "askUser"`, as VS Code's agents mark one). An answer
is handed back as the SDK has a host answer the tool: the call allowed with its input and
`answers` (question text -> the answer in words, several picks joined by ", "), which the CLI
writes as the tool's result; a decline or a cancel is the call denied, in words.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

from hosts.backends.base import InputAnswer

#: The CLI's tool name.
ASK_USER_QUESTION = "AskUserQuestion"
DECLINED = "The person declined to answer. Go on without the answers, or stop if you cannot."
CANCELLED = "The question was cancelled before the person answered."

Decision = PermissionResultAllow | PermissionResultDeny


class NotAQuestion(ValueError):
    """The call's input holds no question the person could be asked."""


def _question_id(index: int) -> str:
    return f"q{index + 1}"


def question_request(tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """The ChatInputRequest for one AskUserQuestion call; NotAQuestion for an input without
    questions."""
    given = tool_input.get("questions")
    if not isinstance(given, list):
        raise NotAQuestion("AskUserQuestion was called without a list of questions.")
    questions: list[dict[str, Any]] = []
    for index, item in enumerate(given):
        if not isinstance(item, Mapping):
            continue
        text = item.get("question")
        if not isinstance(text, str) or not text.strip():
            continue
        asked: dict[str, Any] = {"id": _question_id(index), "message": text, "required": True}
        header = item.get("header")
        if isinstance(header, str) and header:
            asked["title"] = header
        options = [
            _option(option)
            for option in item.get("options") or []
            if isinstance(option, Mapping) and isinstance(option.get("label"), str)
        ]
        if options:
            unique = list({o["id"]: o for o in options}.values())
            kind = "multi-select" if item.get("multiSelect") is True else "single-select"
            # Claude's own prompt always has an "Other" line: an answer in the person's words.
            asked.update(kind=kind, options=unique, allowFreeformInput=True)
        else:
            asked["kind"] = "text"
        questions.append(asked)
    if not questions:
        raise NotAQuestion("AskUserQuestion was called without a question.")
    return {
        "id": f"ask-{uuid.uuid4()}",
        "message": questions[0]["message"] if len(questions) == 1 else "Claude asks:",
        "questions": questions,
        # Not declared on ChatInputRequest: the key VS Code's window reads the purpose from.
        "_meta": {"purpose": "askUser"},
    }


def _option(option: Mapping[str, Any]) -> dict[str, Any]:
    label = str(option["label"])
    said: dict[str, Any] = {"id": label, "label": label}
    description = option.get("description")
    if isinstance(description, str) and description:
        said["description"] = description
    return said


def answer_text(answer: Mapping[str, Any]) -> str | None:
    """What one ChatInputAnswer says, in words; None for a skipped question with nothing
    typed."""
    if answer.get("state") == "skipped":
        free = answer.get("freeformValues") or []
        return ", ".join(str(v) for v in free) or None
    value = answer.get("value")
    if not isinstance(value, Mapping):
        return None
    said = value.get("value")
    words = [", ".join(map(str, said)) if isinstance(said, list) else str(said or "")]
    words += [str(v) for v in value.get("freeformValues") or []]
    return ", ".join(w for w in words if w) or None


def decision(
    tool_input: Mapping[str, Any], request: Mapping[str, Any], answer: InputAnswer
) -> Decision:
    """How the CLI is told what came back: the call allowed with the answers by question
    text, or denied saying why there are none."""
    if answer.response == "decline":
        return PermissionResultDeny(message=DECLINED)
    if answer.response == "cancel":
        return PermissionResultDeny(message=CANCELLED)
    answers: dict[str, str] = {}
    for question in request.get("questions") or []:
        given = answer.answers.get(question["id"])
        text = answer_text(given) if isinstance(given, Mapping) else None
        if text:
            answers[question["message"]] = text
    return PermissionResultAllow(updated_input={**tool_input, "answers": answers})
