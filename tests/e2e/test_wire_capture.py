"""AHPD_WIRE (and `serve --wire`): every frame, both directions, in the capture, as the
client sent and read it, with VS Code's `_ahpLog` beside it and its credentials redacted."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from hosts.edge import wire_capture
from tests.support.client import RpcError
from tests.support.server import REPO, TOKEN, ServerProcess

ROOT = "ahp-root://"


@pytest.fixture(scope="module")
def capture_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wire") / "wire.jsonl"


@pytest.fixture(scope="module")
def server(capture_file: Path):
    process = ServerProcess(env_extra={"AHPD_WIRE": str(capture_file)}).start()
    yield process
    process.close()


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def of_connection(path: Path, client: Any) -> list[dict[str, Any]]:
    host, port = client.ws.local_address[:2]
    return [line for line in lines(path) if line["_ahpLog"]["connectionId"] == f"{host}:{port}"]


def message(line: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in line.items() if key != "_ahpLog"}


async def test_every_frame_is_captured_both_ways_as_it_was_sent(server, capture_file, connect):
    client = await connect(server.url)
    await client.initialize()
    await client.request("subscribe", {"channel": ROOT})
    await client.request("listSessions", {"channel": ROOT})
    await client.request("ping", {"channel": ROOT})
    await client.send_raw("this is not JSON")
    await client.wait_for(lambda: client._errors_without_id or None)

    captured = of_connection(capture_file, client)
    read = [message(line) for line in captured if line["_ahpLog"]["dir"] == "s2c"]
    sent = [line for line in captured if line["_ahpLog"]["dir"] == "c2s"]
    # What the client read is what the capture holds it was sent, frame for frame, in order.
    assert read == client.frames
    assert [message(line).get("method") for line in sent[:4]] == [
        "initialize",
        "subscribe",
        "listSessions",
        "ping",
    ]
    assert sent[-1]["raw"] == "this is not JSON" and sent[-1]["_ahpLog"]["unparsed"] is True
    for line in captured:
        meta = line["_ahpLog"]
        assert meta["ts"].endswith("Z") and "T" in meta["ts"]
        assert meta["transport"] == "websocket"
        assert meta["byteLength"] > 0
    ping = next(line for line in sent if message(line).get("method") == "ping")
    assert ping["_ahpLog"]["byteLength"] == len(orjson.dumps(message(ping)))


async def test_an_authenticate_token_never_reaches_the_capture(server, capture_file, connect):
    client = await connect(server.url)
    await client.initialize()
    secret = "not-a-real-token-but-a-secret-one"
    with pytest.raises(RpcError):
        await client.request(
            "authenticate", {"channel": ROOT, "resource": "ahpd://users", "token": secret}
        )
    text = capture_file.read_text(encoding="utf-8")
    assert secret not in text
    sent = [line for line in of_connection(capture_file, client) if line.get("method")]
    asked = next(line for line in sent if line["method"] == "authenticate")
    assert asked["params"]["token"] == "<redacted>"
    assert asked["params"]["resource"] == "ahpd://users"


def test_the_capture_is_the_servers_alone(server, capture_file):
    assert stat.S_IMODE(capture_file.stat().st_mode) == 0o600
    # The connection token is in no line: the socket takes it at the upgrade, not in a frame.
    assert TOKEN not in capture_file.read_text(encoding="utf-8")


def test_redactions_and_a_long_line_cut():
    result = {"jsonrpc": "2.0", "id": 1, "result": {"certificates": ["PEM"], "x": "y"}}
    line = json.loads(wire_capture.line_for("s2c", json.dumps(result), "c"))
    assert line["result"] == {"certificates": "<redacted>", "x": "y"}
    header = {"jsonrpc": "2.0", "method": "m", "params": {"headers": {"Authorization": "Bearer s"}}}
    line = json.loads(wire_capture.line_for("s2c", json.dumps(header), "c"))
    assert line["params"]["headers"]["Authorization"] == "<redacted>"
    frame = {"jsonrpc": "2.0", "method": "channel/frame", "params": {"channel": "c", "data": "x"}}
    line = json.loads(wire_capture.line_for("c2s", json.dumps(frame), "c"))
    assert line["params"]["data"] == "<redacted channel payload>"
    big = {"jsonrpc": "2.0", "id": 2, "result": {"contents": "a" * (2 * 1024 * 1024)}}
    text = wire_capture.line_for("s2c", orjson.dumps(big).decode(), "c")
    line = json.loads(text)
    assert len(text.encode()) < wire_capture.MAX_LINE_BYTES
    assert line["_ahpLog"]["truncated"] is True
    assert line["_ahpLog"]["byteLength"] > 2 * 1024 * 1024
    assert line["result"]["contents"].startswith("aaaa")


def test_the_file_rolls_over_and_keeps_five(tmp_path):
    capture = wire_capture.WireCapture(tmp_path / "w.jsonl", max_bytes=2000, backups=5)
    frame = '{"jsonrpc":"2.0","method":"action","params":{"pad":"' + "p" * 300 + '"}}'
    for _ in range(100):
        capture.record("s2c", frame, "c")
    capture.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["w.jsonl", *(f"w.jsonl.{n}" for n in range(1, 6))]
    for path in tmp_path.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert all(json.loads(line)["params"]["pad"] for line in path.read_text().splitlines())


def serve_refusal(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "serve", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ahpd: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("planted", ["link", "pipe", "folder"])
def test_a_capture_path_that_is_not_a_plain_file_is_refused_at_start(tmp_path, planted):
    target = tmp_path / "wire.jsonl"
    elsewhere = tmp_path / "elsewhere"
    if planted == "link":
        elsewhere.write_text("")
        target.symlink_to(elsewhere)
    elif planted == "pipe":
        os.mkfifo(target)
    else:
        target.mkdir()
    process = ServerProcess()
    try:
        line = serve_refusal(process.env(), "--wire", str(target))
    finally:
        process.close()
    assert "wire" in line and str(target) in line and "not a regular file" in line
    if planted == "link":
        assert elsewhere.read_text() == ""
