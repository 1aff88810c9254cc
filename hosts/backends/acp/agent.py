"""One configured ACP agent command, behind `Agent`: what root state announces, and its chats."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hosts.backends.base import AgentConfig, ChatContext

from .chat import AcpChat
from .session_facts import SessionFacts


class AcpAgent:
    """One configured ACP agent command. It learns modes and models from the sessions it opens."""

    #: Each chat is an agent process; let go while idle, it is woken with `session/load`.
    holds_process = True
    #: The agent starts the session's MCP servers itself, handed them in session/new.
    starts_mcp_servers = True
    #: An ACP agent runs no turn again: its errors carry no resumable (seed 000).
    resumes_turns = False

    def __init__(self, config: AgentConfig, data_dir: Path) -> None:
        self.config = config
        self.data_dir = data_dir
        self._facts = SessionFacts()
        #: Whether the agent said it takes more than one folder (sessionCapabilities.
        #: additionalDirectories at its initialize); unknown until one has started.
        self._more_directories = False
        #: Told when what `info` says has changed (the host says root/agentsChanged).
        self.on_info_changed: Callable[[], None] | None = None

    def info(self) -> dict[str, Any]:
        """AgentInfo; models only once an agent has reported them (never a guessed list)."""
        return {
            "provider": self.config.provider,
            "displayName": self.config.display_name,
            "description": self.config.description,
            "models": [
                {"id": model_id, "provider": self.config.provider, "name": name}
                for model_id, name in self._facts.models
            ],
        }

    async def session_config_completions(self, key: str, query: str) -> list[dict[str, str]]:
        """Its modes and models are enums the schema lists whole."""
        return []

    def session_config_schema(self) -> dict[str, Any]:
        """Only what the agent said it has: its modes, and its models when it reported them."""
        properties: dict[str, Any] = {}
        facts = self._facts
        if facts.modes:
            properties["mode"] = {
                "type": "string",
                "title": "Mode",
                "enum": [mode["id"] for mode in facts.modes],
                "enumLabels": [mode["name"] for mode in facts.modes],
                **({"default": facts.current_mode} if facts.current_mode else {}),
            }
        if facts.models:
            properties["model"] = {
                "type": "string",
                "title": "Model",
                "enum": [model_id for model_id, _ in facts.models],
                "enumLabels": [name for _, name in facts.models],
                **({"default": facts.current_model} if facts.current_model else {}),
            }
        return {"type": "object", "properties": properties}

    async def open_chat(self, context: ChatContext) -> AcpChat:
        """Start the agent process and open (or load) the chat's session in it."""
        chat = AcpChat(self, context)
        try:
            await chat.start()
        except BaseException:
            await chat.close()
            raise
        return chat

    def home_for(self, context: ChatContext) -> Path:
        """The agent's HOME: the operator's, else the chat's state folder, else one of our own."""
        if self.config.home:
            return Path(self.config.home)
        if context.state_dir is not None:
            return context.state_dir
        return self.data_dir / "acp" / self.config.provider

    @property
    def multiple_working_directories(self) -> bool:
        """Only where the agent said it takes additionalDirectories: the folders after the
        first reach it nowhere else."""
        return self._more_directories

    def learn_directories(self, takes_more: bool) -> None:
        """What an agent's initialize said of more than one folder (said to every client)."""
        if takes_more != self._more_directories:
            self._more_directories = takes_more
            if self.on_info_changed is not None:
                self.on_info_changed()

    def learn(self, facts: SessionFacts) -> None:
        """Keep what a session reported, so root state and config schemas can offer it."""
        if facts.modes or facts.models:
            before = self._facts.models
            self._facts = self._facts.merged(facts)
            if self._facts.models != before and self.on_info_changed is not None:
                self.on_info_changed()
