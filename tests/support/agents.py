"""A started server whose one agent is the OpenAI-compatible loop against a local fake model,
or the small ACP agent under tests/agents run as a real subprocess."""

from __future__ import annotations

import json
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.fake_openai import FakeOpenAi
from tests.support.server import REPO, ServerProcess

#: The fake ACP agent's script: also how its processes are told from the server's others.
ACP_AGENT = REPO / "tests" / "agents" / "fake_acp_agent.py"


def local_agent_config(model_url: str) -> dict[str, object]:
    """An AHPD_CONFIG document whose one agent, `local`, is the openai loop on `model_url`."""
    return {
        "agents": [
            {
                "provider": "local",
                "kind": "openai",
                "displayName": "Local",
                "baseUrl": model_url,
                "model": "fake",
                "apiKey": "none",
            }
        ]
    }


@contextmanager
def server_with_local_agent(**env: str) -> Iterator[ServerProcess]:
    """`local`: an openai agent on a FakeOpenAi; the server and the model go at the end."""
    model = FakeOpenAi()
    with tempfile.TemporaryDirectory(prefix="ahpd-agents-") as folder:
        config = Path(folder) / f"agents-{uuid.uuid4().hex}.json"
        config.write_text(json.dumps(local_agent_config(model.url)))
        process = ServerProcess(env_extra={"AHPD_CONFIG": str(config), **env}).start()
        try:
            yield process
        finally:
            process.close()
            model.close()


def acp_agents_file(folder: Path) -> Path:
    """An AHPD_CONFIG file in `folder` whose one agent, `fake`, is the fake ACP agent."""
    entry = {
        "provider": "fake",
        "kind": "acp",
        "displayName": "Fake ACP agent",
        "command": sys.executable,
        "args": [str(ACP_AGENT)],
        "promptTimeoutSeconds": 60,
    }
    config = folder / f"agents-{uuid.uuid4().hex}.json"
    config.write_text(json.dumps({"agents": [entry]}))
    return config


@contextmanager
def server_with_acp_agent(**env: str) -> Iterator[ServerProcess]:
    """`fake`: the fake ACP agent, each chat a process of its own."""
    with tempfile.TemporaryDirectory(prefix="ahpd-agents-") as folder:
        config = acp_agents_file(Path(folder))
        process = ServerProcess(env_extra={"AHPD_CONFIG": str(config), **env}).start()
        try:
            yield process
        finally:
            process.close()
