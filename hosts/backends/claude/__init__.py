"""The claude backend: Claude Code, through claude-agent-sdk, in each person's sandbox."""

from .agent import ClaudeAgent
from .chat import ClaudeChat

__all__ = ["ClaudeAgent", "ClaudeChat"]
