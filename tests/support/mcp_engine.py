"""The composition root's engine with the MCP servers a test names: until the team registry
reads the operator's `mcpServers`, a started server learns its servers from the JSON file
AHPD_TEST_MCP_SERVERS names, a list of McpServerSpec fields, offered to every session."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ahpsite.engine import build_engine as build_real_engine
from hosts.backends.base import McpServerSpec
from hosts.engine.host import Host
from hosts.engine.ports import ListedMcpServers


def specs_from(path: Path) -> list[McpServerSpec]:
    return [
        McpServerSpec(**{**entry, "args": tuple(entry.get("args", ()))})
        for entry in json.loads(path.read_text())
    ]


def build_engine() -> Host:
    host = build_real_engine()
    host.mcp_directory = ListedMcpServers(specs_from(Path(os.environ["AHPD_TEST_MCP_SERVERS"])))
    return host
