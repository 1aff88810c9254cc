"""A started server whose one agent is the OpenAI-compatible loop against a local fake model."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.fake_openai import FakeOpenAi
from tests.support.server import ServerProcess


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
