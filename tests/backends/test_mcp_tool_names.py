"""The names the model calls MCP tools by: what the Chat Completions API accepts, unique, and
never one of the host's own tools."""

from __future__ import annotations

import re

from hosts.backends.base import McpTool
from hosts.backends.openai.mcp_tools import McpOffer, function_name

ACCEPTED = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def tool(server: str, name: str) -> McpTool:
    return McpTool(server_id=f"mcp:{server}", server_name=server, name=name)


def test_a_name_is_server_and_tool_cleaned_to_what_the_api_accepts():
    assert function_name(tool("calc", "add")) == "calc__add"
    assert function_name(tool("my server", "do.it/now")) == "my_server__do_it_now"
    long = function_name(tool("s" * 50, "t" * 50))
    assert ACCEPTED.fullmatch(long) and len(long) == 64


def test_names_that_would_meet_are_kept_apart_and_none_is_the_hosts_own():
    offer = McpOffer(
        [
            tool("a b", "x"),
            tool("a.b", "x"),
            tool("s" * 60, "one"),
            tool("s" * 60, "two"),
        ]
    )
    names = list(offer.by_name)
    assert len(set(names)) == 4
    assert all(ACCEPTED.fullmatch(name) for name in names)
    assert {"read_file", "run_command"}.isdisjoint(names)


def test_a_tool_whose_schema_is_not_an_object_is_offered_as_one_taking_nothing():
    offer = McpOffer([McpTool("mcp:s", "s", "odd", input_schema={"type": "string"})])
    [param] = offer.params()
    assert param["function"]["parameters"] == {"type": "object", "properties": {}}
