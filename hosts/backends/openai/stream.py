"""One streamed model answer, assembled: its text reported as it comes, its tool calls built up.

Tool calls arrive in fragments by index: an id and a name (possibly late), then the arguments
in pieces. A call is announced to `TurnEvents` once its name is known, and its arguments stream
as partial input after that.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam
from openai.types.chat.chat_completion_chunk import ChoiceDelta
from openai.types.completion_usage import CompletionUsage

from hosts.backends.base import TurnEvents

from .mcp_tools import McpOffer, contributor, title_of
from .tools import TOOL_PARAMS, TOOLS


@dataclass(slots=True)
class PendingCall:
    """A tool call being assembled from streamed fragments."""

    call_id: str
    name: str = ""
    arguments: str = ""
    #: Whether `events.tool_call` has announced it yet (it needs the name).
    started: bool = False


@dataclass(slots=True)
class Reply:
    """One model answer as it streams in."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, PendingCall] = field(default_factory=dict)
    #: Whether the assistant message is already in the conversation.
    recorded: bool = False


@dataclass(slots=True)
class Usage:
    """Tokens summed over a turn's model calls."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    #: US dollars, where the endpoint says what a call cost: OpenRouter's `usage.cost` (in
    #: its credits, a dollar each). OpenAI's own format has no such field.
    cost_usd: float | None = None

    def add(self, usage: CompletionUsage, model: str | None) -> None:
        """Count one model call's tokens, and its cost where the endpoint said one."""
        self.input_tokens = (self.input_tokens or 0) + usage.prompt_tokens
        self.output_tokens = (self.output_tokens or 0) + usage.completion_tokens
        self.model = model or self.model
        cost = (usage.model_extra or {}).get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and 0 <= cost < math.inf:
            self.cost_usd = (self.cost_usd or 0.0) + float(cost)


async def stream_reply(
    client: AsyncOpenAI,
    model: str,
    messages: list[ChatCompletionMessageParam],
    reply: Reply,
    events: TurnEvents,
    usage: Usage,
    offer: McpOffer | None = None,
) -> None:
    """Ask the model for its next answer and assemble it into `reply` as it streams; `offer`:
    the MCP servers' tools it is offered beside the host's own."""
    stream = await client.chat.completions.create(
        model=model,
        messages=messages,
        tools=[*TOOL_PARAMS, *(offer.params() if offer is not None else ())],
        stream=True,
        stream_options={"include_usage": True},
    )
    # Only the last usage seen counts: OpenAI sends it once at the end, but vLLM can send a
    # running total on every chunk.
    last: ChatCompletionChunk | None = None
    async with stream:
        async for chunk in stream:
            if chunk.usage is not None:
                last = chunk
            for choice in chunk.choices:
                if choice.index != 0:
                    continue
                take_delta(choice.delta, reply, events, offer)
    if last is not None and last.usage is not None:
        usage.add(last.usage, last.model)


def take_delta(
    delta: ChoiceDelta, reply: Reply, events: TurnEvents, offer: McpOffer | None = None
) -> None:
    """One streamed piece of the answer: text, thinking, or tool call fragments."""
    if delta.content:
        reply.text.append(delta.content)
        events.text(delta.content)
    # Not in the OpenAI schema: DeepSeek, vLLM and llama.cpp send `reasoning_content`,
    # ollama and OpenRouter `reasoning`.
    extra = delta.model_extra or {}
    for key in ("reasoning_content", "reasoning"):
        thought = extra.get(key)
        if isinstance(thought, str) and thought:
            events.reasoning(thought)
            break
    for fragment in delta.tool_calls or ():
        call = reply.calls.get(fragment.index)
        if call is None:
            call_id = fragment.id or f"call_{secrets.token_hex(8)}"
            call = reply.calls[fragment.index] = PendingCall(call_id)
        elif fragment.id and not call.started:
            call.call_id = fragment.id
        function = fragment.function
        piece = (function.arguments if function else None) or ""
        call.arguments += piece
        if function and function.name and not call.name:
            call.name = function.name
        if not call.started and call.name:
            # Announced once its name is known; arguments that came first follow at once.
            call.started = True
            tool = TOOLS.get(call.name)
            mcp = offer.get(call.name) if offer is not None and tool is None else None
            if mcp is not None:
                events.tool_call(
                    call.call_id,
                    name=call.name,
                    title=title_of(mcp),
                    kind="other",
                    contributor=contributor(mcp),
                )
            else:
                events.tool_call(
                    call.call_id,
                    name=call.name,
                    title=tool.label if tool else call.name,
                    kind=tool.kind if tool else "other",
                )
            if call.arguments:
                events.tool_call(call.call_id, name=call.name, partial_input=call.arguments)
        elif call.started and piece:
            events.tool_call(call.call_id, name=call.name, partial_input=piece)


def assistant_message(reply: Reply) -> ChatCompletionMessageParam:
    """The model's answer as the endpoint expects to see it again in the conversation.

    A call that never got a name cannot be run or answered, so it is dropped from `reply` too.
    """
    reply.calls = {i: c for i, c in sorted(reply.calls.items()) if c.started}
    text = "".join(reply.text)
    reply.recorded = True
    if not reply.calls:
        return {"role": "assistant", "content": text}
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments or "{}"},
            }
            for call in reply.calls.values()
        ],
    }
