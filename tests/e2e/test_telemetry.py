"""Telemetry over AHP: the ahp-otlp channels, read after real turns (one with a tool call)
through a started server and the local chat-completions model, each payload parsed by
OpenTelemetry's own protobuf messages (opentelemetry-proto's ExportLogsServiceRequest,
ExportTraceServiceRequest, ExportMetricsServiceRequest) with protobuf's strict JSON parser."""

from __future__ import annotations

import base64
import copy
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.e2e.test_grants import cli
from tests.support.agents import server_with_local_agent
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

TRACES = "ahp-otlp://traces"
METRICS = "ahp-otlp://metrics"
LOGS_DEBUG = "ahp-otlp://logs/debug"
#: The level is read case-blind; the channel keeps the spelling the client subscribed with.
LOGS_INFO = "ahp-otlp://logs/INFO"
OTLP_IDS = ("traceId", "spanId", "parentSpanId")


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    # DEBUG: the console writes debug lines, so there are some a logs/info watcher must miss.
    with server_with_local_agent(
        AHPD_LOG_LEVEL="DEBUG", OTEL_METRIC_EXPORT_INTERVAL="300"
    ) as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    made = {}
    for person, role in (("ana", "admin"), ("mia", "member")):
        cli(server, "user", "add", person, "--role", role)
        made[person] = cli(server, "user", "token", person)["token"]
    return made


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-telemetry-") as path:
        (Path(path) / "notes.txt").write_text("telemetry reads this file\n")
        yield Path(path)


# -- reading a payload the way OpenTelemetry reads one --------------------------------------


def otlp_to_proto_json(payload: dict[str, Any]) -> dict[str, Any]:
    """OTLP/JSON differs from protobuf's own JSON mapping in one thing: ids are hex, not
    base64. Each id is checked to be the hex OTLP/JSON requires and given to protobuf's parser
    in its own mapping; everything else goes to the parser as the host wrote it."""
    value = copy.deepcopy(payload)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                if key in OTLP_IDS and isinstance(item, str):
                    assert len(item) in (16, 32) and int(item, 16) >= 0, (key, item)
                    node[key] = base64.b64encode(bytes.fromhex(item)).decode()
                else:
                    walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return value


def parsed(payload: dict[str, Any], message: Any) -> Any:
    """The payload parsed strictly (an unknown field or a wrong type fails) into `message`."""
    import json

    return Parse(json.dumps(otlp_to_proto_json(payload)), message, ignore_unknown_fields=False)


def attributes(pairs: Any) -> dict[str, Any]:
    out = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        out[pair.key] = getattr(pair.value, pair.value.WhichOneof("value"))
    return out


def sent(client: Client, method: str, channel: str) -> list[dict[str, Any]]:
    return [
        params["payload"]
        for name, params in client.notifications
        if name == method and params["channel"] == channel
    ]


def spans_of(client: Client) -> list[Span]:
    spans = []
    for payload in sent(client, "otlp/exportTraces", TRACES):
        request = parsed(payload, ExportTraceServiceRequest())
        for resource in request.resource_spans:
            assert attributes(resource.resource.attributes)["service.name"] == "ahpd"
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    return spans


def log_records(client: Client, channel: str) -> list[Any]:
    records = []
    for payload in sent(client, "otlp/exportLogs", channel):
        request = parsed(payload, ExportLogsServiceRequest())
        for resource in request.resource_logs:
            for scope in resource.scope_logs:
                records.extend(scope.log_records)
    return records


def turn(text: str) -> dict[str, Any]:
    return {
        "type": "chat/turnStarted",
        "turnId": str(uuid.uuid4()),
        "startedAt": "2026-12-06T20:00:00.000Z",
        "message": {"text": text, "origin": {"kind": "user"}},
    }


async def ended(client: Client, chat: str, turn_id: str, timeout: float = 30) -> str:
    envelope = await client.wait_action(
        lambda e: (
            e["channel"] == chat
            and e["action"].get("turnId") == turn_id
            and e["action"]["type"] in ("chat/turnComplete", "chat/turnCancelled", "chat/error")
        ),
        timeout,
    )
    return str(envelope["action"]["type"])


async def a_chat(client: Client, workdir: Path) -> tuple[str, str]:
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "local", "workingDirectories": [workdir.as_uri()]},
    )
    chat = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    return uri, chat


# -- the tests ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def watched(server, tokens, workdir) -> dict[str, Any]:
    """An admin watching debug lines, traces and metrics, another watching info lines, while
    three turns run: one reads a file (a tool call), one fails, one is cancelled."""
    watcher = await Client.open(server.url, token=tokens["ana"])
    info = await Client.open(server.url, token=tokens["ana"])
    offered = await watcher.initialize()
    await info.initialize()
    answers = [
        await watcher.request("subscribe", {"channel": uri})
        for uri in (LOGS_DEBUG, TRACES, METRICS)
    ]
    answers.append(await info.request("subscribe", {"channel": LOGS_INFO}))
    # The info watcher's subscribe is logged at debug: the debug watcher is told of it.
    await watcher.wait_for(
        lambda: any(
            r.severity_number == 5 and LOGS_INFO in r.body.string_value
            for r in log_records(watcher, LOGS_DEBUG)
        )
    )

    owner = watcher
    session, chat = await a_chat(owner, workdir)
    reading, failing, stopped = turn("read notes.txt"), turn("fail"), turn("slow")
    await owner.dispatch(chat, reading)
    endings = {"reading": await ended(owner, chat, reading["turnId"])}
    await owner.dispatch(chat, failing)
    endings["failing"] = await ended(owner, chat, failing["turnId"])
    await owner.dispatch(chat, stopped)
    await owner.wait_action(
        lambda e: e["action"]["type"] == "chat/delta" and e["action"]["turnId"] == stopped["turnId"]
    )
    await owner.dispatch(chat, {"type": "chat/turnCancelled", "turnId": stopped["turnId"]})
    endings["stopped"] = await ended(owner, chat, stopped["turnId"])
    # Every turn's span is sent as it ends.
    await watcher.wait_for(
        lambda: (
            {s.name for s in spans_of(watcher) if s.kind == Span.SPAN_KIND_SERVER}
            >= {"invoke_agent local"}
            and len([s for s in spans_of(watcher) if s.kind == Span.SPAN_KIND_SERVER]) >= 3
        )
    )
    # The info watcher has the line saying the last turn ended: every line before it is here.
    await info.wait_for(
        lambda: any(
            stopped["turnId"] in r.body.string_value and "ended" in r.body.string_value
            for r in log_records(info, LOGS_INFO)
        ),
        timeout=15,
    )
    yield {
        "watcher": watcher,
        "info": info,
        "offered": offered,
        "answers": answers,
        "session": session,
        "chat": chat,
        "turns": {"reading": reading, "failing": failing, "stopped": stopped},
        "endings": endings,
    }
    for client in (watcher, info):
        await client.close()
        client.assert_schema_clean()


async def test_subscribing_answers_an_empty_result_with_no_snapshot(watched):
    assert watched["answers"] == [{}, {}, {}, {}]
    assert watched["offered"]["telemetry"] == {
        "logs": "ahp-otlp://logs/{level}",
        "traces": TRACES,
        "metrics": METRICS,
    }


async def test_a_turn_is_a_server_span_and_its_tool_call_a_client_child(watched):
    spans = spans_of(watched["watcher"])
    reading = watched["turns"]["reading"]["turnId"]
    assert watched["endings"]["reading"] == "chat/turnComplete"
    (turn_span,) = [
        s
        for s in spans
        if s.kind == Span.SPAN_KIND_SERVER and attributes(s.attributes)["ahp.turn.id"] == reading
    ]
    turn_attributes = attributes(turn_span.attributes)
    assert turn_attributes["ahp.session.id"] == watched["session"].partition(":/")[2]
    assert turn_span.status.code == Status.STATUS_CODE_UNSET
    (call_span,) = [s for s in spans if s.parent_span_id == turn_span.span_id]
    assert call_span.kind == Span.SPAN_KIND_CLIENT
    assert call_span.trace_id == turn_span.trace_id
    call_attributes = attributes(call_span.attributes)
    assert call_attributes["gen_ai.tool.name"] == "read_file"
    assert call_attributes["ahp.turn.id"] == reading
    assert call_attributes["ahp.session.id"] == turn_attributes["ahp.session.id"]
    assert call_attributes["ahp.tool_call.id"]
    assert turn_span.start_time_unix_nano <= call_span.start_time_unix_nano
    assert call_span.end_time_unix_nano <= turn_span.end_time_unix_nano


async def test_a_failed_turn_is_an_error_and_a_cancelled_one_is_left_unset(watched):
    spans = {
        attributes(s.attributes)["ahp.turn.id"]: s
        for s in spans_of(watched["watcher"])
        if s.kind == Span.SPAN_KIND_SERVER
    }
    assert watched["endings"]["failing"] == "chat/error"
    failed = spans[watched["turns"]["failing"]["turnId"]]
    assert failed.status.code == Status.STATUS_CODE_ERROR
    assert "500" in failed.status.message
    assert watched["endings"]["stopped"] == "chat/turnCancelled"
    assert spans[watched["turns"]["stopped"]["turnId"]].status.code == Status.STATUS_CODE_UNSET


async def test_the_genai_histograms_are_cumulative_with_the_conventions_buckets(watched):
    watcher = watched["watcher"]
    # The next exports after every turn ended: each counts all three.
    already = len(sent(watcher, "otlp/exportMetrics", METRICS))
    await watcher.wait_for(lambda: len(sent(watcher, "otlp/exportMetrics", METRICS)) >= already + 2)
    exports = []
    for payload in sent(watcher, "otlp/exportMetrics", METRICS)[already:]:
        request = parsed(payload, ExportMetricsServiceRequest())
        exports.append(
            {
                metric.name: metric
                for resource in request.resource_metrics
                for scope in resource.scope_metrics
                for metric in scope.metrics
            }
        )
    metrics = exports[-1]
    expected = {
        "gen_ai.invoke_agent.duration": (
            "s",
            [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6],
        ),
        "gen_ai.invoke_agent.tool_calls": ("{tool_call}", [1, 2, 4, 8, 16, 32, 64, 128]),
        "gen_ai.execute_tool.duration": (
            "s",
            [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96]
            + [81.92],
        ),
    }
    for name, (unit, bounds) in expected.items():
        metric = metrics[name]
        assert metric.unit == unit
        assert metric.histogram.aggregation_temporality == (
            AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
        )
        for point in metric.histogram.data_points:
            assert list(point.explicit_bounds) == bounds
    turns = sum(p.count for p in metrics["gen_ai.invoke_agent.duration"].histogram.data_points)
    assert turns >= 3
    calls = metrics["gen_ai.invoke_agent.tool_calls"].histogram.data_points
    assert sum(p.sum for p in calls) >= 1
    tools = metrics["gen_ai.execute_tool.duration"].histogram.data_points
    assert {attributes(p.attributes)["gen_ai.tool.name"] for p in tools} == {"read_file"}
    failed = [
        attributes(p.attributes).get("error.type")
        for p in metrics["gen_ai.invoke_agent.duration"].histogram.data_points
    ]
    assert any(failed), failed

    # Cumulative: each series keeps the start it began at, and a later export counts no fewer.
    def series(export: dict[str, Any], name: str) -> dict[Any, Any]:
        return {
            tuple(sorted(attributes(p.attributes).items())): p
            for p in export[name].histogram.data_points
        }

    first, last = exports[0], exports[-1]
    for name in expected:
        for key, point in series(first, name).items():
            later = series(last, name)[key]
            assert later.start_time_unix_nano == point.start_time_unix_nano, (name, key)
            assert later.count >= point.count, (name, key)


async def test_log_lines_reach_every_level_they_meet_and_no_lower_one(watched, server):
    debug = log_records(watched["watcher"], LOGS_DEBUG)
    info = log_records(watched["info"], LOGS_INFO)
    assert any(r.severity_number == 5 for r in debug), "the debug watcher saw debug lines"
    assert info and all(r.severity_number >= 9 for r in info), [r.severity_text for r in info]
    # An info line reaches both, and it is the line the console wrote.
    started = watched["turns"]["reading"]["turnId"]
    lines = [r.body.string_value for r in info if started in r.body.string_value]
    assert lines and all(line in [r.body.string_value for r in debug] for line in lines), (
        "an info line reaches the debug watcher too"
    )
    console = server.log_text()
    assert all(line in console for line in lines)
    (first,) = [r for r in info if r.body.string_value == lines[0]][:1]
    assert first.severity_text == "INFO"
    assert attributes(first.attributes)["turn"] == started


async def test_a_member_without_diagnostics_read_is_refused_and_offered_nothing(
    server, connect, tokens
):
    member = await connect(server.url, token=tokens["mia"])
    offered = await member.initialize(subscriptions=["ahp-root://", TRACES])
    assert "telemetry" not in offered
    assert [s["resource"] for s in offered["snapshots"]] == ["ahp-root://"]
    for uri in (TRACES, METRICS, LOGS_DEBUG, "ahp-otlp://logs/info"):
        with pytest.raises(RpcError) as refused:
            await member.request("subscribe", {"channel": uri})
        assert refused.value.code == -32009, uri
        assert "may not diagnostics:read here" in refused.value.message, uri


async def test_a_level_nobody_defined_is_no_channel(server, connect, tokens):
    admin = await connect(server.url, token=tokens["ana"])
    await admin.initialize()
    with pytest.raises(RpcError) as refused:
        await admin.request("subscribe", {"channel": "ahp-otlp://logs/verbose"})
    assert refused.value.code == -32001


async def test_a_reconnect_joins_the_telemetry_channels_again_and_replays_none(
    server, connect, tokens, workdir
):
    admin = await connect(server.url, token=tokens["ana"])
    await admin.initialize(subscriptions=["ahp-root://", TRACES])
    session, chat = await a_chat(admin, workdir)
    first = turn("hello")
    await admin.dispatch(chat, first)
    await ended(admin, chat, first["turnId"])
    await admin.wait_for(lambda: sent(admin, "otlp/exportTraces", TRACES))
    seen_before = admin.last_seq
    await admin.close()

    again = await connect(server.url, token=tokens["ana"], client_id=admin.client_id)
    result = await again.request(
        "reconnect",
        {
            "channel": "ahp-root://",
            "clientId": admin.client_id,
            "lastSeenServerSeq": seen_before - 1,
            "subscriptions": ["ahp-root://", TRACES, chat],
        },
    )
    assert TRACES not in result.get("missing", [])
    held = result.get("actions", []) + result.get("snapshots", [])
    assert all("ahp-otlp" not in str(item.get("channel", item.get("resource"))) for item in held)
    await again.settle()
    assert not sent(again, "otlp/exportTraces", TRACES), "nothing said before is said again"
    # Joined again: the next turn's span reaches it.
    second = turn("hello again")
    await again.dispatch(chat, second)
    await ended(again, chat, second["turnId"])
    await again.wait_for(
        lambda: any(
            attributes(s.attributes).get("ahp.turn.id") == second["turnId"] for s in spans_of(again)
        )
    )


async def test_a_watcher_whose_diagnostics_read_is_taken_away_is_told_nothing_more(
    server, connect, tokens, workdir
):
    from tests.e2e.test_reconnect_principal import set_roles

    cli(server, "user", "add", "ops", "--role", "admin")
    ops = await connect(server.url, token=cli(server, "user", "token", "ops")["token"])
    await ops.initialize()
    assert await ops.request("subscribe", {"channel": TRACES}) == {}
    set_roles(server, "ops", "member")
    # Their next command reads who they are now: the channel is theirs no longer.
    with pytest.raises(RpcError) as refused:
        await ops.request("subscribe", {"channel": TRACES})
    assert refused.value.code == -32009

    admin = await connect(server.url, token=tokens["ana"])
    await admin.initialize(subscriptions=["ahp-root://", TRACES])
    _, chat = await a_chat(admin, workdir)
    action = turn("after the change")
    await admin.dispatch(chat, action)
    await ended(admin, chat, action["turnId"])
    await admin.wait_for(
        lambda: any(
            attributes(s.attributes).get("ahp.turn.id") == action["turnId"] for s in spans_of(admin)
        )
    )
    await ops.settle()
    assert not sent(ops, "otlp/exportTraces", TRACES)
