"""The tools the host offers a model: their schemas, and when a person is asked before one runs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openai.types.chat import ChatCompletionFunctionToolParam

PERMISSION_MODES = ("default", "acceptEdits", "bypassPermissions")
PERMISSION_LABELS = ("Ask before edits and commands", "Ask before commands", "Never ask")


class ToolError(Exception):
    """A tool call could not run; the message is shown to the person and told to the model."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    #: ACP's tool kind, so a client can pick an icon.
    kind: str
    #: The title shown before the call's arguments have streamed in.
    label: str
    #: The permission modes under which a person is asked before the call runs.
    asks_in: frozenset[str]

    def param(self) -> ChatCompletionFunctionToolParam:
        """The tool as the Chat Completions request lists it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_PATH = {"type": "string", "description": "A path relative to the working folder."}

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "read_file",
            "Read a text file in the working folder.",
            _object({"path": _PATH}, ["path"]),
            "read",
            "Read file",
            frozenset(),
        ),
        Tool(
            "list_directory",
            "List the entries of a folder in the working folder; folders end with '/'.",
            _object({"path": {**_PATH, "default": "."}}, []),
            "read",
            "List folder",
            frozenset(),
        ),
        Tool(
            "write_file",
            "Create or overwrite a text file in the working folder with the given content.",
            _object({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
            "edit",
            "Write file",
            frozenset({"default"}),
        ),
        Tool(
            "run_command",
            "Run a shell command in the working folder and return its exit code and output.",
            _object({"command": {"type": "string"}}, ["command"]),
            "execute",
            "Run command",
            frozenset({"default", "acceptEdits"}),
        ),
    )
}
TOOL_PARAMS = [tool.param() for tool in TOOLS.values()]


def parse_arguments(arguments: str) -> dict[str, Any]:
    """A call's arguments, which must be a JSON object (empty when the model sent none)."""
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError as err:
        raise ToolError(f"The arguments are not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise ToolError("The arguments must be a JSON object.")
    return value


def string_argument(args: Mapping[str, Any], key: str, default: str | None = None) -> str:
    """The string argument `key`, or `default` when it is missing."""
    value = args.get(key, default)
    if not isinstance(value, str):
        raise ToolError(f"The argument {key!r} must be a string.")
    return value


def short(text: str, limit: int = 120) -> str:
    """The text on one line, cut to `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def title(tool: Tool, args: Mapping[str, Any]) -> str:
    """A title that says what the call will do, for the person who may be asked about it."""
    if tool.name == "run_command":
        return f"Run {short(str(args.get('command', '')))}"
    path = str(args.get("path", "."))
    verb = {"read_file": "Read", "list_directory": "List", "write_file": "Write"}[tool.name]
    return f"{verb} {short(path)}"
