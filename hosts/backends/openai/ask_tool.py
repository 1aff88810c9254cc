"""`ask_user`: the tool the host's agent loop offers a model to ask the person a question.

The question goes to the person through `TurnEvents.ask` (chat/inputRequested, marked as the
agent's own question with `_meta.purpose: "askUser"`, as VS Code's agents mark one); the
answer, a decline or a cancel goes back to the model as the tool's result, in words.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from openai.types.chat import ChatCompletionFunctionToolParam

from hosts.backends.base import InputAnswer, TurnEvents

from .tools import ToolError, parse_arguments, short

ASK_USER = "ask_user"
#: The one question of the request, by the id its answer comes back under.
QUESTION_ID = "answer"
MAX_CHOICES = 20
_NOT_ANSWERED = {
    "decline": "The person declined to answer.",
    "cancel": "The question was cancelled.",
}

ASK_USER_PARAM: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": ASK_USER,
        "description": (
            "Ask the person a question and wait for the answer: when you need a decision or "
            "a fact only they have. Give choices when the answer is one of a few options; "
            "they may still answer in their own words."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, in one sentence."},
                "choices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Answers the person may pick from (optional).",
                },
            },
            "required": ["question"],
        },
    },
}


def question_request(arguments: str) -> dict[str, Any]:
    """The ChatInputRequest an ask_user call puts to the person; ToolError for bad arguments."""
    args = parse_arguments(arguments)
    question = args.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ToolError("The argument 'question' must be a non-empty string.")
    choices = args.get("choices") or []
    if not isinstance(choices, list) or not all(isinstance(c, str) and c for c in choices):
        raise ToolError("The argument 'choices' must be a list of non-empty strings.")
    if len(choices) > MAX_CHOICES:
        raise ToolError(f"Give at most {MAX_CHOICES} choices.")
    asked: dict[str, Any] = {"id": QUESTION_ID, "message": question, "required": True}
    if choices:
        unique = list(dict.fromkeys(choices))
        asked.update(
            kind="single-select",
            options=[{"id": c, "label": c} for c in unique],
            allowFreeformInput=True,
        )
    else:
        asked["kind"] = "text"
    return {
        "id": f"ask-{uuid.uuid4()}",
        "message": question,
        "questions": [asked],
        # Not declared on ChatInputRequest: the key VS Code's window reads the purpose from.
        "_meta": {"purpose": "askUser"},
    }


def answer_text(answer: Mapping[str, Any]) -> str | None:
    """What one ChatInputAnswer says, in words; None for a skipped question."""
    if answer.get("state") == "skipped":
        free = answer.get("freeformValues") or []
        return "; ".join(str(v) for v in free) or None
    value = answer.get("value") or {}
    said = value.get("value")
    words = [", ".join(map(str, said)) if isinstance(said, list) else str(said)]
    words += [str(v) for v in value.get("freeformValues") or []]
    return "; ".join(w for w in words if w)


def for_model(answer: InputAnswer) -> str:
    """The answer as the model is told it."""
    if answer.response == "decline":
        return "The person declined to answer. Go on without it, or stop if you cannot."
    if answer.response == "cancel":
        return "The question was cancelled before the person answered."
    given = answer.answers.get(QUESTION_ID)
    text = answer_text(given) if given is not None else None
    return f"The person answered: {text}" if text else "The person gave no answer."


async def ask_user(call_id: str, arguments: str, events: TurnEvents) -> str:
    """Run one ask_user call: put the question, wait, and say what came back."""
    try:
        request = question_request(arguments)
    except ToolError as err:
        events.tool_running(call_id, title="Ask the person", tool_input=arguments)
        events.tool_result(call_id, success=False, message="Ask the person: failed", error=str(err))
        return f"Error: {err}"
    shown = f"Ask: {short(request['message'])}"
    events.tool_running(call_id, title=shown, tool_input=arguments)
    answer = await events.ask(request)
    told = for_model(answer)
    events.tool_result(
        call_id,
        success=answer.response == "accept",
        message=f"Asked: {short(request['message'])}",
        output=told,
        error=_NOT_ANSWERED.get(answer.response),
    )
    return told
