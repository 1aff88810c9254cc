"""What a host is made with: its limits, its windows, the folders it serves (HostSettings).

The edge fills one from Django's settings (hosts/edge/runtime.py); tests make their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..backends.sandbox import SandboxSettings
from . import root_config
from .telemetry import TelemetrySettings
from .terminals import TerminalSettings


@dataclass(frozen=True, slots=True)
class HostSettings:
    server_name: str = "ahpd"
    server_version: str = "0.1.0"
    client_queue_bytes: int = 16 * root_config.MIB
    replay_bytes: int = 32 * root_config.MIB
    replay_count: int = 1000
    #: A client record is forgotten once its client has been gone ten 30 s windows.
    client_record_ttl_s: float = 300.0
    #: Streamed text is gathered per part this long before it is said; 0 says every chunk.
    delta_window_ms: int = 75
    #: The name `root:<host>` says for the deployment's own token.
    host_name: str = "ahpd"
    #: How long a client that dropped stays in the sessions it was in.
    presence_grace_s: float = 30.0
    #: Where backends keep their own state (agents' HOME folders).
    state_dir: Path | None = None
    #: How long a chat's agent process stays idle before it is let go (sleepAfterMinutes,
    #: AHPD_SLEEP_AFTER_MINUTES); 0 never lets one go on time alone.
    sleep_after_s: float = 30 * 60.0
    #: How many sessions run agents before the least recently used idle one's are let go
    #: (sessionResidencyLimit, AHPD_SESSION_RESIDENCY_LIMIT); 0 sets no limit.
    session_residency_limit: int = 10
    #: How many agents one person's sessions may have at work at once
    #: (AHPD_AGENTS_PER_PERSON); 0 sets no cap.
    agents_per_person: int = 10
    #: Schedules one automation may carry (AHPD_AUTOMATION_TRIGGERS_MAX); 0 sets no bound.
    automation_triggers_max: int = 10
    #: Automations one person may keep (AHPD_AUTOMATIONS_PER_PERSON); 0 sets no bound.
    automations_per_person: int = 50
    #: Runs one person's automations may start in a rolling hour
    #: (AHPD_AUTOMATION_RUNS_PER_HOUR); 0 sets no bound.
    automation_runs_per_hour: int = 60
    #: How many resource watches one person may hold open (AHPD_WATCHES_PER_PERSON); 0 sets
    #: no cap.
    watches_per_person: int = 32
    #: What every client's queue may hold together, in bytes (AHPD_CLIENT_QUEUES_TOTAL_BYTES):
    #: past it the clients furthest behind are closed; 0 sets no bound.
    client_queues_total_bytes: int = 256 * root_config.MIB
    #: How long a stop waits for clients to answer its close frame before going on.
    close_wait_s: float = 5.0
    #: The folders served (AHPD_PATHS); none: the directory the server started in.
    served_paths: tuple[Path, ...] = ()
    #: A resourceRead over this many bytes is refused (AHPD_RESOURCE_READ_LIMIT_BYTES).
    resource_read_limit: int = 32 * root_config.MIB
    #: What is never served, wherever it lies (the env file, a token file); the state
    #: directory never is either.
    private_paths: tuple[Path, ...] = ()
    #: A file attached to a message is read for its agent up to this many bytes
    #: (AHPD_ATTACHMENT_FETCH_LIMIT_BYTES); a larger one is left as sent.
    attachment_fetch_limit: int = 32 * root_config.MIB
    #: The terminals' scrollback cap, the shells' environment, the grace of a kill, a
    #: person's cap.
    terminals: TerminalSettings = field(default_factory=TerminalSettings)
    #: How people's processes are started: in bubblewrap, or (off) as the server's user.
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    #: The loggers the ahp-otlp logs channels read, how often metrics are said, and which
    #: signals go to a collector (OTEL_EXPORTER_OTLP_*).
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)
