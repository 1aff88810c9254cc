"""VS Code's own requests to an agent host, beside the protocol's (methods.py): extension
methods its window sends under a `vscode/` name, in the shapes its host declares them (its
agentHostExtensionProtocol). The router serves those the command table holds; any other
answers -32601, as an unknown method does."""

from __future__ import annotations

from .methods import MethodSpec

VSCODE_METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in (
        MethodSpec("vscode/collectAgentHostDebugLogs"),
        MethodSpec("vscode/readAgentHostDebugLogsChunk"),
    )
}
