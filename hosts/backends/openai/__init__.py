"""The openai backend: an agent loop the host runs itself, on any OpenAI-compatible endpoint.

Local model servers (ollama, llama.cpp's llama-server, vLLM) and hosted APIs all speak the same
streaming Chat Completions wire format, but none of them is an agent. The modules:

* `agent`: the configured endpoint, its models and its session config.
* `loop`: one chat's conversation and its turns: stream, run tools, repeat.
* `stream`: one streamed answer assembled into text and tool calls.
* `tools`: the tools offered to the model, and when a person is asked first.
* `sandbox`: what the tools do, inside the chat's working folders.
"""

from __future__ import annotations

from .agent import OpenAiAgent
from .loop import OpenAiChat

__all__ = ["OpenAiAgent", "OpenAiChat"]
