"""/metrics: the engine's figures (engine/host_status.py) in Prometheus's text format.

Read with a bearer token that holds `diagnostics:read` (the deployment's own, or an admin's):
the figures say how busy the host is and which agents fail, which is nobody else's business.
Each scrape reads the figures once, on the engine's loop; nothing is counted here.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..edge import connection_token, engine_client
from ..engine.host import Host
from ..engine.host_status import HostStatus, read_status
from .auth import bearer_token, principal_for

#: The grant reading /metrics needs.
GRANT = "diagnostics:read"


class HostStatusCollector(Collector):
    """One reading of the figures, as Prometheus metric families."""

    def __init__(self, read: HostStatus) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        f = self.read
        info = GaugeMetricFamily("ahpd_build_info", "The server's version.", labels=["version"])
        info.add_metric([f.version], 1)
        yield info
        sandbox = GaugeMetricFamily(
            "ahpd_sandbox_info",
            "Where people's processes run: bwrap (a sandbox each) or off (the server's user).",
            labels=["mode"],
        )
        sandbox.add_metric([f.sandbox], 1)
        yield sandbox
        yield GaugeMetricFamily(
            "ahpd_uptime_seconds", "Seconds since the engine started.", value=f.uptime_s
        )
        for name, doc, value in (
            ("ahpd_connections", "Client connections open now.", f.connections),
            (
                "ahpd_subscriptions",
                "Channel subscriptions, over every connection.",
                f.subscriptions,
            ),
            ("ahpd_sessions", "Sessions the engine holds.", f.sessions),
            ("ahpd_turns_running", "Turns running now.", f.running_turns),
            ("ahpd_agents", "Agents the operator configured.", len(f.agents)),
        ):
            yield GaugeMetricFamily(name, doc, value=value)
        for name, doc, value in (
            ("ahpd_connections_opened", "Client connections admitted.", f.connections_opened),
            ("ahpd_envelopes", "Action envelopes sequenced (refusals included).", f.envelopes),
            ("ahpd_deliveries", "Frames sent to clients: envelopes, answers.", f.deliveries),
            ("ahpd_queue_drops", "Clients closed past clientQueueBytes.", f.queue_drops),
        ):
            yield CounterMetricFamily(name, doc, value=value)
        started = CounterMetricFamily("ahpd_turns_started", "Turns started.", labels=["provider"])
        for provider, count in sorted(f.turns_started.items()):
            started.add_metric([provider], count)
        yield started
        finished = CounterMetricFamily(
            "ahpd_turns_finished", "Turns ended, by how.", labels=["provider", "ending"]
        )
        for provider, endings in sorted(f.turns_finished.items()):
            for ending, count in sorted(endings.items()):
                finished.add_metric([provider, ending], count)
        yield finished
        errors = CounterMetricFamily(
            "ahpd_backend_errors", "Turns the backend failed.", labels=["provider"]
        )
        for provider, count in sorted(f.backend_errors.items()):
            errors.add_metric([provider], count)
        yield errors
        durations = HistogramMetricFamily(
            "ahpd_turn_duration_seconds", "How long turns ran.", labels=["provider"]
        )
        for provider, d in sorted(f.turn_durations.items()):
            buckets = [("+Inf" if b == float("inf") else str(b), n) for b, n in d.cumulative()]
            durations.add_metric([provider], buckets, d.total_s)
        yield durations


def metrics(request: HttpRequest) -> HttpResponse:
    """The figures in Prometheus's text format, for a token holding diagnostics:read."""
    token = bearer_token(request)
    principal = principal_for(token) if token is not None else None
    if principal is None:
        refused = HttpResponse("a bearer token is needed\n", status=401, content_type="text/plain")
        refused["WWW-Authenticate"] = connection_token.challenge(token)
        return refused
    if not principal.may(GRANT):
        return HttpResponse(
            f"{principal.ref} may not {GRANT} here\n", status=403, content_type="text/plain"
        )
    registry = CollectorRegistry(auto_describe=False)
    try:
        read = read_host_status()
    except engine_client.EngineUnavailable as error:
        return HttpResponse(f"{error}\n", status=503, content_type="text/plain")
    registry.register(HostStatusCollector(read))
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def read_host_status() -> HostStatus:
    """The engine's figures now, read on its loop (from a view's thread)."""

    async def read(host: Host) -> HostStatus:
        return read_status(host)

    return engine_client.read(read, what="the figures")
