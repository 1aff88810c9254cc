"""An operator's collector, named by the standard OTEL_EXPORTER_OTLP_* variables: a started
server sends it, over OTLP/HTTP with protobuf bodies, the lines, the spans of a real turn with
a tool call and the GenAI histograms, each body read by opentelemetry-proto's own messages,
with nobody watching the ahp-otlp channels. A protocol it does not speak stops the server at
start, naming the variable."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support.agents import server_with_local_agent
from tests.support.server import REPO, ServerProcess

SECRET = "Bearer collector-secret"


class Collector:
    """An OTLP/HTTP receiver on loopback: every body posted, by path, parsed as OTLP."""

    MESSAGES = {
        "/v1/logs": ExportLogsServiceRequest,
        "/v1/traces": ExportTraceServiceRequest,
        "/v1/metrics": ExportMetricsServiceRequest,
    }

    def __init__(self) -> None:
        self.received: dict[str, list[Any]] = {path: [] for path in self.MESSAGES}
        self.headers: list[str | None] = []
        self.arrived = threading.Condition()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                message = collector.MESSAGES[self.path].FromString(body)
                with collector.arrived:
                    collector.received[self.path].append(message)
                    collector.headers.append(self.headers.get("Authorization"))
                    collector.arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    async def wait(self, found: Callable[[], Any], timeout: float = 30) -> Any:
        def wait() -> Any:
            with self.arrived:
                assert self.arrived.wait_for(found, timeout), "the collector was not sent it"
                return found()

        return await asyncio.to_thread(wait)


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    receiver = Collector()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def server(collector: Collector) -> Iterator[ServerProcess]:
    with server_with_local_agent(
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
        OTEL_EXPORTER_OTLP_HEADERS=f"authorization={SECRET}",
        OTEL_METRIC_EXPORT_INTERVAL="300",
        # The SDK's batching processors, told to send within 100 ms rather than 1 s and 5 s.
        OTEL_BLRP_SCHEDULE_DELAY="100",
        OTEL_BSP_SCHEDULE_DELAY="100",
    ) as process:
        yield process


def spans(collector: Collector) -> list[Span]:
    return [
        span
        for request in collector.received["/v1/traces"]
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


def metric_names(collector: Collector) -> set[str]:
    return {
        metric.name
        for request in collector.received["/v1/metrics"]
        for resource in request.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


def log_bodies(collector: Collector) -> list[str]:
    return [
        record.body.string_value
        for request in collector.received["/v1/logs"]
        for resource in request.resource_logs
        for scope in resource.scope_logs
        for record in scope.log_records
    ]


async def test_a_collector_is_sent_the_lines_the_spans_and_the_histograms(
    server, connect, collector
):
    with tempfile.TemporaryDirectory(prefix="ahpd-collector-") as folder:
        (Path(folder) / "notes.txt").write_text("for the collector\n")
        client = await connect(server.url)
        offered = await client.initialize()
        assert offered["telemetry"]["traces"] == "ahp-otlp://traces"
        uri = f"ahp-session:/{uuid.uuid4()}"
        await client.request(
            "createSession",
            {"channel": uri, "provider": "local", "workingDirectories": [Path(folder).as_uri()]},
        )
        state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
        chat = state["defaultChat"]
        await client.request("subscribe", {"channel": chat})
        turn_id = str(uuid.uuid4())
        await client.dispatch(
            chat,
            {
                "type": "chat/turnStarted",
                "turnId": turn_id,
                "startedAt": "2026-12-06T20:00:00.000Z",
                "message": {"text": "read notes.txt", "origin": {"kind": "user"}},
            },
        )
        await client.wait_action(
            lambda e: (
                e["action"]["type"] == "chat/turnComplete" and e["action"]["turnId"] == turn_id
            ),
            timeout=30,
        )

    await collector.wait(lambda: len(spans(collector)) >= 2)
    (turn,) = [s for s in spans(collector) if s.kind == Span.SPAN_KIND_SERVER]
    (call,) = [s for s in spans(collector) if s.kind == Span.SPAN_KIND_CLIENT]
    assert call.parent_span_id == turn.span_id and call.trace_id == turn.trace_id
    assert {a.key: a.value.string_value for a in call.attributes}["gen_ai.tool.name"] == (
        "read_file"
    )
    await collector.wait(lambda: any(turn_id in body for body in log_bodies(collector)))
    await collector.wait(
        lambda: (
            {
                "gen_ai.invoke_agent.duration",
                "gen_ai.invoke_agent.tool_calls",
                "gen_ai.execute_tool.duration",
            }
            <= metric_names(collector)
        )
    )
    assert set(collector.headers) == {SECRET}
    # Nobody watched the ahp-otlp channels: nothing was said on them.
    assert not [name for name, _ in client.notifications if name.startswith("otlp/")]


def test_a_collector_protocol_other_than_http_protobuf_stops_the_server_at_start(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AHPD_", "DJANGO_", "OTEL_"))}
    env.update(
        {
            "AHPD_ENV_FILE": os.devnull,
            "AHPD_DATA_DIR": str(tmp_path / "data"),
            "DJANGO_SETTINGS_MODULE": "ahpsite.settings",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf here; got 'grpc'" in done.stderr
