"""A TurnEvents that records what a backend reported, for backend tests without the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hosts.backends.base import (
    ClientTool,
    Context,
    Cost,
    InputAnswer,
    PermissionAnswer,
    PermissionOption,
)


@dataclass
class RecordingEvents:
    #: Every report in order, as (method, payload) pairs.
    log: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: Decides each permission question; approves everything by default.
    decide: Callable[[str, str, Sequence[PermissionOption]], PermissionAnswer] = (
        lambda call_id, title, options: PermissionAnswer(
            True, next((o.option_id for o in options if o.kind == "approve"), None)
        )
    )
    #: Set when a permission question arrives, for tests that answer from outside.
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    #: Answers each question a backend asks (`ask`); cancels by default.
    answer: Callable[[Mapping[str, Any]], InputAnswer] = lambda request: InputAnswer("cancel")
    #: Runs each client tool call: the ToolCallResult; a failure by default.
    run_tool: Callable[[ClientTool, str], Mapping[str, Any]] = lambda tool, tool_input: {
        "success": False,
        "pastTenseMessage": f"{tool.name}: failed",
        "error": {"message": "no client runs tools here"},
    }

    def text(self, content: str) -> None:
        self.log.append(("text", {"content": content}))

    def reasoning(self, content: str) -> None:
        self.log.append(("reasoning", {"content": content}))

    def tool_call(
        self,
        call_id: str,
        *,
        name: str,
        title: str | None = None,
        kind: str | None = None,
        partial_input: str | None = None,
        contributor: Mapping[str, Any] | None = None,
    ) -> None:
        report: dict[str, Any] = {
            "call_id": call_id,
            "name": name,
            "title": title,
            "kind": kind,
            "partial_input": partial_input,
        }
        if contributor:
            report["contributor"] = dict(contributor)
        self.log.append(("tool_call", report))

    async def permission(
        self,
        call_id: str,
        *,
        title: str,
        tool_input: str | None,
        options: Sequence[PermissionOption] = (),
    ) -> PermissionAnswer:
        self.log.append(
            (
                "permission",
                {
                    "call_id": call_id,
                    "title": title,
                    "tool_input": tool_input,
                    "options": [o.option_id for o in options],
                },
            )
        )
        self.asked.set()
        return self.decide(call_id, title, options)

    def tool_auth_required(self, call_id: str, auth: Mapping[str, Any]) -> None:
        self.log.append(("tool_auth_required", {"call_id": call_id, "auth": dict(auth)}))

    def tool_auth_resolved(self, call_id: str) -> None:
        self.log.append(("tool_auth_resolved", {"call_id": call_id}))

    async def ask(self, request: Mapping[str, Any]) -> InputAnswer:
        self.log.append(("ask", {"request": dict(request)}))
        return self.answer(request)

    async def run_client_tool(
        self, call_id: str, tool: ClientTool, *, title: str, tool_input: str
    ) -> Mapping[str, Any]:
        self.log.append(
            (
                "run_client_tool",
                {"call_id": call_id, "tool": tool, "title": title, "tool_input": tool_input},
            )
        )
        return self.run_tool(tool, tool_input)

    def tool_running(
        self, call_id: str, *, title: str | None = None, tool_input: str | None = None
    ) -> None:
        self.log.append(
            ("tool_running", {"call_id": call_id, "title": title, "tool_input": tool_input})
        )

    def tool_result(
        self,
        call_id: str,
        *,
        success: bool,
        message: str,
        output: str | None = None,
        error: str | None = None,
        content: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        result = {
            "call_id": call_id,
            "success": success,
            "message": message,
            "output": output,
            "error": error,
        }
        if content:
            result["content"] = [dict(item) for item in content]
        self.log.append(("tool_result", result))

    def tool_content(self, call_id: str, content: Sequence[Mapping[str, Any]]) -> None:
        self.log.append(
            ("tool_content", {"call_id": call_id, "content": [dict(i) for i in content]})
        )

    def usage(
        self,
        *,
        input_tokens: int | None,
        output_tokens: int | None,
        model: str | None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        cost: Cost | None = None,
        context: Context | None = None,
    ) -> None:
        report: dict[str, Any] = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "model": model,
        }
        if cost is not None:
            report["cost"] = (cost.amount, cost.currency)
        if context is not None:
            report["context"] = (context.used, context.size)
        self.log.append(("usage", report))

    def texts(self) -> str:
        return "".join(p["content"] for m, p in self.log if m == "text")

    def kinds(self) -> list[str]:
        return [m for m, _ in self.log]
