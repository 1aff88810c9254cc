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


def local_agent(
    model_url: str,
    provider: str = "local",
    display_name: str = "Local",
    model: str = "fake",
    **extra: object,
) -> dict[str, object]:
    """An AHPD_CONFIG agent entry: the openai loop on the fake model at `model_url`."""
    return {
        "provider": provider,
        "kind": "openai",
        "displayName": display_name,
        "baseUrl": model_url,
        "model": model,
        "apiKey": "none",
        **extra,
    }


def acp_agent(provider: str = "fake") -> dict[str, object]:
    """An AHPD_CONFIG agent entry: the fake ACP agent, each chat a process of its own."""
    return {
        "provider": provider,
        "kind": "acp",
        "displayName": "Fake ACP agent",
        "command": sys.executable,
        "args": [str(ACP_AGENT)],
        "promptTimeoutSeconds": 60,
    }


def local_agent_config(model_url: str) -> dict[str, object]:
    """An AHPD_CONFIG document whose one agent, `local`, is the openai loop on `model_url`."""
    return {"agents": [local_agent(model_url)]}


@contextmanager
def server_with_config(config: dict[str, object], **env: str) -> Iterator[ServerProcess]:
    """A started server given `config` as its AHPD_CONFIG file (a file of its own, gone with
    the server) and `env` beside it."""
    with tempfile.TemporaryDirectory(prefix="ahpd-agents-") as folder:
        path = Path(folder) / f"agents-{uuid.uuid4().hex}.json"
        path.write_text(json.dumps(config))
        process = ServerProcess(env_extra={"AHPD_CONFIG": str(path), **env}).start()
        try:
            yield process
        finally:
            process.close()


@contextmanager
def server_with_local_agent(**env: str) -> Iterator[ServerProcess]:
    """`local`: an openai agent on a FakeOpenAi; the server and the model go at the end."""
    model = FakeOpenAi()
    try:
        with server_with_config(local_agent_config(model.url), **env) as process:
            yield process
    finally:
        model.close()


def acp_agents_file(folder: Path) -> Path:
    """An AHPD_CONFIG file in `folder` whose one agent, `fake`, is the fake ACP agent."""
    config = folder / f"agents-{uuid.uuid4().hex}.json"
    config.write_text(json.dumps({"agents": [acp_agent()]}))
    return config


@contextmanager
def server_with_acp_agent(**env: str) -> Iterator[ServerProcess]:
    """`fake`: the fake ACP agent, each chat a process of its own."""
    with server_with_config({"agents": [acp_agent()]}, **env) as process:
        yield process
