"""The ACP backend: any Agent Client Protocol agent, run as a subprocess, behind `Agent`.

One chat is one agent process and one ACP session. The host plays the ACP *client*: it answers
the agent's permission questions by asking a person (through `TurnEvents.permission`), and it
serves the agent's file-system and terminal requests itself, confined to the chat's working
directories, so an agent that uses them cannot reach outside the workspace through the host;
its commands run in the host's terminals (the ChatContext's `terminals`), which clients watch.

The modules, along the seams:

* `agent`: the configured command, what root state announces of it, opening chats.
* `agent_process`: one run of the agent command and the ACP connection on its stdio.
* `pipe`: that stdio as the SDK's transport, where updates are taken out raw and in order.
* `session` and `chat`: the ACP session in the process, and the turns run in it.
* `updates`: one turn's `session/update` payloads translated into `TurnEvents` reports.
* `permissions`: the agent's permission questions, asked of a person.
* `client`, `files`, `terminals`: what the agent may ask of the host.
* `history`: the kept turns a new agent session is given on its first prompt.
"""

from __future__ import annotations

from .agent import AcpAgent
from .chat import AcpChat

__all__ = ["AcpAgent", "AcpChat"]
