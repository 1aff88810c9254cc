"""VS Code's debug-log collection against a started server: `vscode/collectAgentHostDebugLogs`
packs a session's record and the host's log lines as a zip archive (read back a megabyte at a
time by `vscode/readAgentHostDebugLogsChunk`, only an archive this host made) or a directory;
under a progressToken the asker is told `root/progress` as it goes, the last frame settling it
(progress equal to total). Only to a principal holding diagnostics:read."""

from __future__ import annotations

import base64
import io
import json
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.test_grants import cli
from tests.e2e.test_sessions import new_session, run_turn
from tests.support.agents import server_with_local_agent
from tests.support.client import RpcError
from tests.support.server import ServerProcess

COLLECT = "vscode/collectAgentHostDebugLogs"
READ = "vscode/readAgentHostDebugLogsChunk"


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_local_agent() as process:
        yield process


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-debug-logs-") as path:
        yield Path(path)


async def read_back(client, resource: str) -> bytes:
    data, position = b"", 0
    while True:
        chunk = await client.request(READ, {"resource": resource, "position": position})
        piece = base64.b64decode(chunk["data"])
        data += piece
        position += len(piece)
        if chunk["eof"]:
            return data


async def test_a_sessions_record_and_the_hosts_lines_are_collected_with_progress(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, workdir)
    await run_turn(client, chat, "remember this")
    result = await client.request(
        COLLECT, {"session": session, "kind": "archive", "progressToken": "logs-1"}
    )
    assert result["kind"] == "archive" and result["providerLogsIncluded"] is False
    assert [entry["path"] for entry in result["entries"]] == ["events.jsonl", "agenthost/ahpd.log"]
    assert result["uncompressedSize"] == sum(entry["size"] for entry in result["entries"])
    # Told as it went, to the asker alone, and settled before the answer.
    told = [params for method, params in client.notifications if method == "root/progress"]
    assert [(p["progress"], p["total"]) for p in told] == [(1, 2), (2, 2)]
    assert all(p["progressToken"] == "logs-1" and p["channel"] == "ahp-root://" for p in told)
    assert told[-1]["_meta"] == {"vscode.debugLogs": True}

    archive = await read_back(client, result["resource"])
    assert len(archive) == result["size"]
    with zipfile.ZipFile(io.BytesIO(archive)) as unpacked:
        events = [json.loads(line) for line in unpacked.read("events.jsonl").splitlines()]
        host_lines = unpacked.read("agenthost/ahpd.log").decode()
    assert events[0]["type"] == "session" and events[0]["session"] == session
    turns = [e["turn"] for e in events if e["type"] == "turn"]
    assert [t["message"]["text"] for t in turns] == ["remember this"]
    assert f"started in {chat}" in host_lines

    # A directory is left where it is, every entry a file under it.
    other = await client.request(COLLECT, {"chat": chat, "kind": "directory"})
    folder = Path(urlsplit(other["resource"]).path)
    assert (folder / "events.jsonl").is_file() and (folder / "agenthost" / "ahpd.log").is_file()
    # Nothing said without a token.
    assert len([m for m, _ in client.notifications if m == "root/progress"]) == 2
    # Only an archive this host made is read back.
    for resource in (other["resource"], (workdir / "x.zip").as_uri()):
        with pytest.raises(RpcError) as refused:
            await client.request(READ, {"resource": resource, "position": 0})
        assert refused.value.code == -32008


@pytest.mark.parametrize(
    "params, words",
    [
        ({}, "kind must be one of archive, directory"),
        ({"kind": "tarball"}, "kind must be one of archive, directory"),
        ({"kind": "archive", "progressToken": 7}, "progressToken must be a non-empty string"),
        ({"kind": "archive", "session": ""}, "session must be a non-empty string"),
    ],
)
async def test_a_collection_asked_wrongly_is_refused_naming_what(server, connect, params, words):
    client = await connect(server.url)
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.request(COLLECT, params)
    assert refused.value.code == -32602 and words in refused.value.message
    with pytest.raises(RpcError) as refused:
        await client.request(COLLECT, {"kind": "archive", "session": "ahp-session:/none"})
    assert refused.value.code == -32001
    with pytest.raises(RpcError) as refused:
        await client.request(READ, {"resource": "file:///etc/passwd", "position": -1})
    assert refused.value.code == -32602


async def test_only_a_principal_holding_diagnostics_read_collects(server, connect, workdir):
    cli(server, "user", "add", "dee", "--role", "member")
    member = await connect(server.url, token=str(cli(server, "user", "token", "dee")["token"]))
    await member.initialize()
    session, _ = await new_session(member, workdir)
    for method, params in (
        (COLLECT, {"session": session, "kind": "archive"}),
        (READ, {"resource": "file:///x.zip", "position": 0}),
    ):
        with pytest.raises(RpcError) as refused:
            await member.request(method, params)
        assert refused.value.code == -32009
        assert "may not diagnostics:read here" in refused.value.message
