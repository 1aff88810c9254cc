"""One configured OpenAI-compatible endpoint behind `Agent`: its models, and its chats."""

from __future__ import annotations

from typing import Any

from hosts.backends.base import AgentConfig, ChatContext

from .loop import OpenAiChat
from .tools import PERMISSION_LABELS, PERMISSION_MODES


class OpenAiAgent:
    """One configured OpenAI-compatible endpoint, announced with its models."""

    #: A chat is the loop's own object in this process, holding its conversation: kept.
    holds_process = False
    #: The host connects to the session's MCP servers for its loop (ChatContext.mcp).
    starts_mcp_servers = False
    #: A failed model call leaves the conversation where it was: asked again on a resume.
    resumes_turns = True
    #: Its tools are fenced to every folder of the session (a reopened loop takes a new set).
    multiple_working_directories = True

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    def models(self) -> list[str]:
        """The models a session may pick: the configured list, else the one default model."""
        return list(self.config.models) or ([self.config.model] if self.config.model else [])

    def info(self) -> dict[str, Any]:
        """AgentInfo: the provider and the models a session may pick."""
        config = self.config
        return {
            "provider": config.provider,
            "displayName": config.display_name,
            "description": config.description or f"A model at {config.base_url}, run by the host",
            "models": [
                {"id": model, "provider": config.provider, "name": model} for model in self.models()
            ],
        }

    async def session_config_completions(self, key: str, query: str) -> list[dict[str, str]]:
        """Its models and permission modes are enums the schema lists whole."""
        return []

    def session_config_schema(self) -> dict[str, Any]:
        """The model to use and when a person is asked before a tool runs."""
        model: dict[str, Any] = {"type": "string", "title": "Model"}
        models = self.models()
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
                    "enum": list(PERMISSION_MODES),
                    "default": "default",
                    "enumLabels": list(PERMISSION_LABELS),
                },
            },
        }

    async def open_chat(self, context: ChatContext) -> OpenAiChat:
        """A conversation; nothing is started until its first turn."""
        return OpenAiChat(self.config, context)
