"""Answering the questions a running turn put to a person (sessions/questions.py).

Who may answer: the holder of `chat:answer` in the chat's session (and, in a session not
theirs, `others:work` there: access.py), checked by the dispatch and again here.
"""

from __future__ import annotations

from typing import Any

from ...backends.base import InputAnswer
from ..host import Host
from ..sessions import LiveChat
from ..sessions.questions import has_question, open_request, unanswered_required
from .caller import Caller

ANSWER = "chat:answer"


def no_open_request(request_id: Any) -> str:
    """The refusal of an answer to a request the chat does not hold open."""
    return f"No open input request {request_id} in this chat"


def do_change_input_answer(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> str | None:
    """A client's chat/inputAnswerChanged (its shape checked): one question's draft held on
    the open request, said to every client of the chat, and the session's entry set again to
    the request as the chat now holds it. Why it is refused, or None."""
    caller.may_in(chat.session, ANSWER)
    request_id, question_id = action["requestId"], action["questionId"]
    request = open_request(chat.state(), request_id)
    if request is None:
        return no_open_request(request_id)
    if not has_question(request, question_id):
        return f"Input request {request_id} has no question {question_id}"
    caller.say(host, chat.channel, action)
    runner = chat.runner
    if runner is not None:
        runner.asked.mirror(request_id)
    return None


def do_complete_input(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> str | None:
    """A client's chat/inputCompleted (its shape checked): accepted, declined or cancelled,
    said to every client of the chat, its entry taken down, and the answer handed to whoever
    asked. Answers it carries replace the synced ones question by question; one carrying none
    is completed with what was synced. Why it is refused, or None."""
    caller.may_in(chat.session, ANSWER)
    request_id = action["requestId"]
    request = open_request(chat.state(), request_id)
    if request is None:
        return no_open_request(request_id)
    carried = action.get("answers") or {}
    for question_id in carried:
        if not has_question(request, question_id):
            return f"Input request {request_id} has no question {question_id}"
    answers = {**(request.get("answers") or {}), **carried}
    response = action["response"]
    if response == "accept" and (missing := unanswered_required(request, answers)) is not None:
        return f"Input request {request_id}: required question {missing} has no submitted answer"
    caller.say(host, chat.channel, action)
    answer = InputAnswer(response, answers if response == "accept" else {})
    runner = chat.runner
    if runner is not None:
        runner.asked.answer(request_id, answer)
    return None
