"""The agent loop the host runs around a model: stream an answer, run its tool calls, repeat.

A model proposes tool calls and waits; this loop is the agent around it. It keeps the
conversation, streams each answer into `TurnEvents`, runs the proposed tools itself (in the
sandbox, asking the person first where the session's permission mode says so) and feeds the
results back until the model answers without tools.
"""

from __future__ import annotations

import asyncio
import logging

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam

from hosts.backends.base import (
    AgentConfig,
    ChatContext,
    Cost,
    PermissionOption,
    TurnEnd,
    TurnEvents,
    TurnRequest,
)
from hosts.backends.fence import Fence

from .ask_tool import ASK_USER, ask_user
from .client_tools import run_client_tool
from .mcp_tools import run_mcp_call
from .message import user_message
from .offered_tools import OfferedTools
from .sandbox import Sandbox
from .stream import PendingCall, Reply, Usage, assistant_message, stream_reply
from .tools import PERMISSION_MODES, TOOLS, ToolError, parse_arguments, title

log = logging.getLogger("ahpd.backends.openai")

#: Model calls one turn may make; a model that keeps calling tools is stopped, not trusted.
MAX_MODEL_CALLS = 25
#: Connecting is quick or broken; a first token from a local model on a CPU can take minutes.
CONNECT_TIMEOUT_S = 10.0

ALLOW = PermissionOption("allow", "Allow", "approve")
DENY = PermissionOption("deny", "Deny", "deny")


class OpenAiChat:
    """One conversation: the message list, kept for the life of this object, and its turns."""

    def __init__(self, config: AgentConfig, context: ChatContext) -> None:
        self.backend_id: str | None = None
        self._config = config
        self._context = context
        self._sandbox = Sandbox(Fence(context.working_directories), context.jail)
        self._endpoint = config.base_url or "the default OpenAI endpoint"
        self._client = AsyncOpenAI(
            base_url=config.base_url or None,
            api_key=config.api_key or "none",
            max_retries=0,
            timeout=openai.Timeout(config.prompt_timeout_s, connect=CONNECT_TIMEOUT_S),
        )
        self._messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": self._system_prompt()}
        ]
        for earlier in context.history:
            if earlier.get("user"):
                self._messages.append({"role": "user", "content": earlier["user"]})
            if earlier.get("assistant"):
                self._messages.append({"role": "assistant", "content": earlier["assistant"]})
        self._task: asyncio.Task[TurnEnd] | None = None
        self._steering: list[str] = []
        #: The turn whose model call failed, and how long the conversation was when it was
        #: asked: a resume asks the model again from there (the message and the tools it ran
        #: kept, a cut-off answer taken back out). Any other turn forgets it.
        self._resumable: tuple[str, int] | None = None

    def _system_prompt(self) -> str:
        roots = self._sandbox.fence.roots
        if not roots:
            return (
                "You are a helpful coding assistant. This chat has no working folder, "
                "so the file and command tools will refuse every call."
            )
        where = f"the folder {roots[0]}"
        if len(roots) > 1:
            where += " (also usable: " + ", ".join(str(root) for root in roots[1:]) + ")"
        return (
            f"You are a coding agent working in {where}. You may use the tools read_file, "
            "list_directory, write_file and run_command to look at and change files and to run "
            "shell commands there; paths are relative to that folder and cannot leave it. "
            "The person may deny a tool call; then do not retry it. Answer in Markdown."
        )

    # -- turns ---------------------------------------------------------------------------------

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Run the turn in a task of its own, so `cancel` can stop it wherever it waits."""
        return await self._in_task(request, events, resume=False)

    async def resume_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Ask the model again for the turn whose model call failed, from the conversation as
        that call left it; a turn this chat holds no such failure for ends resumable again."""
        if self._resumable is None or self._resumable[0] != request.turn_id:
            if self._task is not None and not self._task.done():
                return TurnEnd("error", "A turn is already running in this chat.")
            return TurnEnd(
                "error", "This conversation holds no failed model call to ask again.", True
            )
        return await self._in_task(request, events, resume=True)

    async def _in_task(self, request: TurnRequest, events: TurnEvents, *, resume: bool) -> TurnEnd:
        if self._task is not None and not self._task.done():
            return TurnEnd("error", "A turn is already running in this chat.")
        if resume and self._resumable is not None:
            del self._messages[self._resumable[1] :]
        self._resumable = None
        task = asyncio.create_task(
            self._turn(request, events, resume=resume), name=f"turn {request.turn_id}"
        )
        self._task = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # our caller was cancelled, not the turn: let that through
            return TurnEnd("cancelled")
        finally:
            if self._task is task:
                self._task = None

    async def cancel(self) -> None:
        """Stop the running turn, if any, wherever it waits."""
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait({task}, timeout=10)

    async def close(self) -> None:
        """Stop the running turn and let the HTTP client go."""
        await self.cancel()
        await self._client.close()

    def steer(self, text: str) -> bool:
        """Take a person's steering into the running turn, before its next model call.

        False when no turn runs: the host then runs the message as a turn of its own.
        """
        if self._task is None or self._task.done():
            return False
        self._steering.append(text)
        return True

    def _take_steering(self) -> bool:
        """Put steering that arrived into the conversation; whether there was any."""
        if not self._steering:
            return False
        for text in self._steering:
            self._messages.append({"role": "user", "content": text})
        self._steering.clear()
        return True

    def _model(self, request: TurnRequest) -> str:
        configured = self._context.config.get("model")
        if request.model:
            return request.model
        return configured if isinstance(configured, str) and configured else self._config.model

    def _permission_mode(self) -> str:
        mode = self._context.config.get("permissionMode")
        return mode if mode in PERMISSION_MODES else "default"

    async def _turn(self, request: TurnRequest, events: TurnEvents, *, resume: bool) -> TurnEnd:
        model = self._model(request)
        if not model:
            return TurnEnd("error", f"No model is configured for {self._config.display_name}.")
        if not resume:
            self._messages.append(user_message(request))
        usage = Usage()
        reply = Reply()
        client_tools = self._context.client_tools
        # A running turn keeps the client tools it started with.
        clients = tuple(client_tools()) if client_tools is not None else ()
        mcp = self._context.mcp
        offered = OfferedTools.for_call(clients)
        try:
            if mcp is not None:
                await mcp.settled()  # a server still starting offers its tools from the start
            for _ in range(MAX_MODEL_CALLS):
                reply = Reply()
                offered = OfferedTools.for_call(clients, mcp.tools() if mcp is not None else ())
                await stream_reply(
                    self._client, model, self._messages, reply, events, usage, offered
                )
                self._messages.append(assistant_message(reply))
                # Tools run whenever the answer holds calls rather than on finish_reason
                # "tool_calls" alone: ollama and some llama.cpp templates finish with "stop".
                if not reply.calls:
                    if self._take_steering():
                        continue
                    self._report(usage, model, events)
                    return TurnEnd("complete")
                for call in reply.calls.values():
                    content = await self._run_tool(call, events, offered)
                    self._messages.append(
                        {"role": "tool", "tool_call_id": call.call_id, "content": content}
                    )
                self._take_steering()
            self._report(usage, model, events)
            return TurnEnd(
                "error", f"Stopped after {MAX_MODEL_CALLS} model calls without a final answer."
            )
        except asyncio.CancelledError:
            self._settle(reply, "The turn was cancelled before this tool call ran.")
            raise
        except openai.OpenAIError as err:
            # The model call failed (the endpoint down, a 5xx, a timeout): the conversation is
            # as it was when it was asked, which a resume asks again.
            self._resumable = (request.turn_id, len(self._messages))
            self._settle(reply, "The turn failed before this tool call ran.")
            self._report(usage, model, events)
            return TurnEnd("error", self._describe(err), resumable=True)
        except Exception as err:
            # A bug here must still end the turn (once) rather than leave it hanging.
            log.exception("openai turn %s of %s failed", request.turn_id, self._context.chat)
            self._settle(reply, "The turn failed before this tool call ran.")
            return TurnEnd("error", f"The agent loop failed: {err}")

    def _settle(self, reply: Reply, unanswered: str) -> None:
        """Leave the conversation valid after a turn stopped midway, for the next turn.

        Text the person already saw stays; every tool call the model made gets an answer,
        because endpoints refuse a conversation with a tool call left unanswered.
        """
        if not reply.recorded:
            text = "".join(reply.text)
            if text:
                self._messages.append({"role": "assistant", "content": text})
            return
        answered = {
            message["tool_call_id"] for message in self._messages if message["role"] == "tool"
        }
        for call in reply.calls.values():
            if call.call_id not in answered:
                self._messages.append(
                    {"role": "tool", "tool_call_id": call.call_id, "content": unanswered}
                )

    def _report(self, usage: Usage, model: str, events: TurnEvents) -> None:
        if usage.input_tokens is not None or usage.output_tokens is not None:
            events.usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                model=usage.model or model,
                cost=None if usage.cost_usd is None else Cost(usage.cost_usd, "USD"),
            )

    def _describe(self, err: openai.OpenAIError) -> str:
        where = self._endpoint
        if isinstance(err, openai.APITimeoutError):
            return f"The model endpoint {where} did not answer in time."
        if isinstance(err, openai.APIConnectionError):
            cause = f": {err.__cause__}" if err.__cause__ else ""
            return f"Could not reach the model endpoint {where}{cause}"
        if isinstance(err, openai.APIStatusError):
            return f"The model endpoint {where} answered HTTP {err.status_code}: {err.message}"[
                :500
            ]
        return f"The model endpoint {where} failed: {err}"[:500]

    # -- tools ---------------------------------------------------------------------------------

    async def _run_tool(self, call: PendingCall, events: TurnEvents, offered: OfferedTools) -> str:
        """Run one call through the confirmation path; return what the model is told."""
        if call.name == ASK_USER:
            return await ask_user(call.call_id, call.arguments, events)
        if (client_tool := offered.client.get(call.name)) is not None:
            return await run_client_tool(call.call_id, client_tool, call.arguments, events)
        tool_input = call.arguments or "{}"
        tool = TOOLS.get(call.name)
        mcp_tool = offered.mcp.get(call.name)
        if tool is None and mcp_tool is not None and self._context.mcp is not None:
            return await run_mcp_call(
                self._context.mcp,
                mcp_tool,
                call.call_id,
                call.arguments,
                events,
                self._permission_mode(),
            )
        shown = tool.label if tool else call.name
        try:
            if tool is None:
                raise ToolError(f"There is no tool named {call.name!r}.")
            args = parse_arguments(call.arguments)
            shown = title(tool, args)
            # Checked before anybody is asked, so nobody approves a call that cannot run.
            action = self._sandbox.prepare(tool, args)
        except ToolError as err:
            events.tool_running(call.call_id, title=shown, tool_input=tool_input)
            return _failed(events, call.call_id, shown, str(err))

        if self._permission_mode() in tool.asks_in:
            answer = await events.permission(
                call.call_id, title=shown, tool_input=tool_input, options=(ALLOW, DENY)
            )
            if not answer.approved:
                events.tool_result(
                    call.call_id,
                    success=False,
                    message=f"{shown}: denied",
                    error="denied by the user",
                )
                return "The user denied this tool call, so it did not run. Do not retry it."
        else:
            events.tool_running(call.call_id, title=shown, tool_input=tool_input)

        try:
            outcome = await action()
        except (ToolError, OSError, UnicodeError) as err:
            return _failed(events, call.call_id, shown, str(err))
        events.tool_result(
            call.call_id,
            success=outcome.success,
            message=outcome.message,
            output=outcome.output,
            error=outcome.error,
        )
        return outcome.for_model


def _failed(events: TurnEvents, call_id: str, shown: str, error: str) -> str:
    events.tool_result(call_id, success=False, message=f"{shown}: failed", error=error)
    return f"Error: {error}"
