"""The tools a session's clients provide, as the host's agent loop offers them to a model.

A client's tool is offered as a function named `<clientId>__<name>`, cut to what the Chat
Completions API takes (`[a-zA-Z0-9_-]{1,64}`), so two clients' same-named tools do not clash;
the call a client runs names the tool as that client announced it. The client runs the call
(`TurnEvents.run_client_tool`) and its result goes back to the model in words.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from openai.types.chat import ChatCompletionFunctionToolParam

from hosts.backends.base import ClientTool, TurnEvents
from hosts.backends.served_client_tools import EMPTY_SCHEMA, result_words

#: What a function name may hold, and how long it may be (the Chat Completions API's limits).
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64


def function_name(tool: ClientTool, taken: set[str]) -> str:
    """The name `tool` is offered under: `<clientId>__<name>` made safe, distinct from `taken`
    (a clash, after the cut, gets a short hash of the whole of it)."""
    name = _UNSAFE.sub("_", f"{tool.client_id}__{tool.name}")[:MAX_NAME]
    if name in taken:
        digest = hashlib.sha256(f"{tool.client_id}\0{tool.name}".encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def offered(tools: Iterable[ClientTool], taken: Iterable[str] = ()) -> dict[str, ClientTool]:
    """The client tools by the function name each is offered under, none clashing with
    `taken` (the host's own tools) or each other."""
    names = set(taken)
    by_name: dict[str, ClientTool] = {}
    for tool in tools:
        name = function_name(tool, names)
        if name in names:
            continue  # the same client announced the same tool twice: offered once
        names.add(name)
        by_name[name] = tool
    return by_name


def param(name: str, tool: ClientTool) -> ChatCompletionFunctionToolParam:
    """The client tool as the Chat Completions request lists it."""
    description = tool.description or tool.title or tool.name
    schema = dict(tool.input_schema) if tool.input_schema else EMPTY_SCHEMA
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{description} (run by the person's client {tool.client_id})",
            "parameters": schema,
        },
    }


def result_text(result: Mapping[str, Any]) -> str:
    """A client's ToolCallResult as the model is told it; a failure as an error."""
    success, words = result_words(result)
    return words if success else f"Error: {words}"


async def run_client_tool(
    call_id: str, tool: ClientTool, arguments: str, events: TurnEvents
) -> str:
    """Have the client run one call; what the model is told."""
    title = tool.title or tool.name
    result = await events.run_client_tool(call_id, tool, title=title, tool_input=arguments or "{}")
    return result_text(result)
