"""What one model call offers the model: the host's own tools, `ask_user`, the tools of the
session's ready MCP servers, and its clients' tools.

The clients' tools are read as the turn starts (a running turn keeps the set it started with);
the MCP servers' as each model call is made (a server that became ready is offered from the
next call). The functions a model was offered are the ones its calls are run against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from openai.types.chat import ChatCompletionFunctionToolParam

from hosts.backends.base import ClientTool, McpTool, TurnEvents

from .ask_tool import ASK_USER, ASK_USER_PARAM
from .client_tools import offered, param
from .mcp_tools import McpOffer, contributor, title_of
from .tools import TOOL_PARAMS, TOOLS


@dataclass(frozen=True, slots=True)
class OfferedTools:
    #: The client tools, by the function name each is offered under.
    client: Mapping[str, ClientTool] = field(default_factory=dict)
    #: The MCP servers' tools, by the function name each is offered under.
    mcp: McpOffer = field(default_factory=lambda: McpOffer(()))

    @classmethod
    def for_call(
        cls, client_tools: Sequence[ClientTool], mcp_tools: Sequence[McpTool] = ()
    ) -> OfferedTools:
        """One model call's tools: no two under one function name."""
        mcp = McpOffer(mcp_tools)
        return cls(offered(client_tools, taken=(*TOOLS, ASK_USER, *mcp.by_name)), mcp)

    def params(self) -> list[ChatCompletionFunctionToolParam]:
        """The tools as the Chat Completions request lists them."""
        return [
            *TOOL_PARAMS,
            ASK_USER_PARAM,
            *self.mcp.params(),
            *(param(name, tool) for name, tool in self.client.items()),
        ]

    def announce(self, events: TurnEvents, call_id: str, name: str) -> None:
        """A call's start, once the model named the function: a client's tool under the
        name its client announced, as that client's."""
        tool = TOOLS.get(name)
        client_tool = self.client.get(name)
        mcp_tool = self.mcp.get(name)
        if tool is not None:
            events.tool_call(call_id, name=name, title=tool.label, kind=tool.kind)
        elif mcp_tool is not None:
            events.tool_call(
                call_id,
                name=name,
                title=title_of(mcp_tool),
                kind="other",
                contributor=contributor(mcp_tool),
            )
        elif client_tool is not None:
            events.tool_call(
                call_id,
                name=client_tool.name,
                title=client_tool.title or client_tool.name,
                kind="other",
                contributor={"kind": "client", "clientId": client_tool.client_id},
            )
        elif name == ASK_USER:
            events.tool_call(call_id, name=name, title="Ask the person", kind="other")
        else:
            events.tool_call(call_id, name=name, title=name, kind="other")

    def tool_name(self, name: str) -> str:
        """The name a call's actions carry after its start (a client's tool's own)."""
        client_tool = self.client.get(name)
        return client_tool.name if client_tool is not None else name
