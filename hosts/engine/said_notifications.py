"""Every notification this host sends a client, and when: the README's coverage table lists
the protocol's server notifications against this registry (coverage.py)."""

from __future__ import annotations

from .telemetry import SAID as TELEMETRY_SAID

SAID: dict[str, str] = {
    "action": "every state action, in its envelope, to the channel's watchers (fanout.py)",
    "root/sessionAdded": "a session is announced, to the root's watchers who may read it",
    "root/sessionRemoved": "an announced session is disposed",
    "root/sessionSummaryChanged": "an announced session's row moves",
    "auth/required": "a token a connection gave an MCP server's resource expires "
    "(resource_tokens.py)",
    "root/progress": "a debug-log collection asked under a progressToken "
    "(`vscode/collectAgentHostDebugLogs`), to its asker, as each entry is written and once "
    "settled (debug_logs.py); a session's start says none, having nothing to download",
    **TELEMETRY_SAID,
}
