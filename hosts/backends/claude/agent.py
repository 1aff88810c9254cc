"""One configured Claude backend behind `Agent`: Claude Code on claude-agent-sdk, its chats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hosts.backends.base import AgentConfig, ChatContext
from hosts.backends.sandbox import home_name

from .chat import PERMISSION_MODES, ClaudeChat

PERMISSION_LABELS = (
    "Ask before edits",
    "Edit automatically",
    "Plan mode",
    "Bypass permissions",
    "Don't ask (refuse what is not allowed)",
    "Auto (a classifier decides)",
)


def config_locked(config: AgentConfig) -> bool:
    """Whether the operator's managed settings lock bypassing permissions."""
    return config.managed.bypass_disabled


class ClaudeAgent:
    """Claude Code, one CLI per chat, run by this host in each session owner's sandbox."""

    #: Each chat is a CLI process; let go while idle, and resumed by its session id.
    holds_process = True
    #: The CLI starts the session's MCP servers itself, handed them in its options.
    starts_mcp_servers = True
    #: A turn whose model call failed runs again, the CLI's conversation cut back to the
    #: turn before (chat.py: resume_turn).
    resumes_turns = True
    #: The folders after the first are the CLI's --add-dir; it is resumed in a new set.
    multiple_working_directories = True

    def __init__(self, config: AgentConfig, data_dir: Path) -> None:
        self.config = config
        self.data_dir = data_dir
        #: The CLI's cumulative cost by session id as it last said it: where the next turn's
        #: cost counts from, across the CLI being let go and resumed (not across a restart
        #: of this server, after which a session's first turn reports its tokens alone).
        self.costs: dict[str, float] = {}
        #: The tools a person allowed "in this session", by chat URI.
        self._allowed: dict[str, set[str]] = {}

    def models(self) -> list[str]:
        """The models a session may pick: the configured list, else the one default model."""
        return list(self.config.models) or ([self.config.model] if self.config.model else [])

    def info(self) -> dict[str, Any]:
        """AgentInfo: the provider and the models a session may pick."""
        config = self.config
        return {
            "provider": config.provider,
            "displayName": config.display_name,
            "description": config.description or "Claude Code, run by the host",
            "models": [
                {"id": model, "provider": config.provider, "name": model} for model in self.models()
            ],
        }

    async def session_config_completions(self, key: str, query: str) -> list[dict[str, str]]:
        """Its models and permission modes are enums the schema lists whole."""
        return []

    def session_config_schema(self) -> dict[str, Any]:
        """The model to use and when the CLI asks a person before a tool runs."""
        model: dict[str, Any] = {"type": "string", "title": "Model"}
        models = self.models()
        modes = [
            (mode, label)
            for mode, label in zip(PERMISSION_MODES, PERMISSION_LABELS, strict=True)
            # The operator's lock takes Allow All away.
            if not (mode == "bypassPermissions" and config_locked(self.config))
        ]
        if models:
            model["enum"] = models
            model["default"] = self.config.model or models[0]
        return {
            "type": "object",
            "properties": {
                "model": model,
                "permissionMode": {
                    "type": "string",
                    "title": "Permission mode",
                    "enum": [mode for mode, _ in modes],
                    "default": "default",
                    "enumLabels": [label for _, label in modes],
                },
            },
        }

    async def open_chat(self, context: ChatContext) -> ClaudeChat:
        """Start the CLI on the chat's session (resumed when the chat has one)."""
        chat = ClaudeChat(self, context)
        try:
            await chat.start()
        except BaseException:
            await chat.close()
            raise
        return chat

    def home_for(self, context: ChatContext) -> Path:
        """The CLI's HOME: a folder of the session owner's own, under the chat's state folder
        (else one of this backend's), so one person's Claude state is theirs alone."""
        base = context.state_dir or self.data_dir / "claude" / self.config.provider
        person = context.jail.person if context.jail is not None else "server:host"
        return base / "homes" / home_name(person)

    def allowed_tools(self, chat: str) -> set[str]:
        """The tools a person allowed for the rest of `chat` (kept while the server runs)."""
        return self._allowed.setdefault(chat, set())
