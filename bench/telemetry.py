"""What telemetry costs the fan-out's hot path: a streamed turn's actions (chat/turnStarted,
then chat/delta after chat/delta, a tool call, chat/turnComplete) emitted on a chat with 50
watchers, by one Fanout with no telemetry and one with the host's Telemetry on it in each of
three states: nobody watching the telemetry channels (the histograms alone), a traces watcher
(spans built and said), and a logs/info watcher (lines too). In-process, the engine's own
objects, no sockets: interleaved rounds in one process, the median and the fastest round of
each, as ratios of the one without telemetry (the fastest is the one least disturbed by other
work on the machine). Usage: python bench/telemetry.py [--subscribers 50] [--deltas 2000]
[--rounds 25]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hosts.engine.channel import Channel  # noqa: E402
from hosts.engine.fanout import Fanout  # noqa: E402
from hosts.engine.other_nodes.remote_clients import NoSocket  # noqa: E402
from hosts.engine.principal import Principal  # noqa: E402
from hosts.engine.telemetry import Telemetry, TelemetrySettings  # noqa: E402

CHAT = "ahp-chat:/bench"


def made(subscribers: int, telemetry: str | None) -> tuple[Fanout, Channel, Telemetry | None]:
    core = Fanout(replay_count=1000, replay_bytes=lambda: 0, queue_limit=0, told={})
    core.start()
    chat = core.open(Channel(CHAT, "chat", {}))
    for n in range(subscribers):
        conn = core.connect(NoSocket(), f"peer-{n}")
        conn.client_id, conn.version_text, conn.version = f"c{n}", "1.0.0", (1, 0, 0)
        conn.principal = Principal(f"user:{n}", ("*:*",))
        core.subscribe(conn, chat)
    host_telemetry = None
    if telemetry is not None:
        host_telemetry = Telemetry(
            core,
            TelemetrySettings(loggers=("ahpd",), metrics_interval_s=3600),
            lambda uri: ("ahp-session:/bench", "local"),
            service_name="ahpd",
            service_version="bench",
        )
        host_telemetry.start()
        conn = core.connect(NoSocket(), "telemetry")
        conn.client_id, conn.version_text, conn.version = "t", "1.0.0", (1, 0, 0)
        conn.principal = Principal("user:t", ("*:*",))
        if telemetry == "traces":
            core.subscribe(conn, host_telemetry.traces)
        elif telemetry == "logs":
            host_telemetry.wake("ahp-otlp://logs/info")
            logs = core.channel("ahp-otlp://logs/info")
            assert logs is not None
            core.subscribe(conn, host_telemetry.traces)
            core.subscribe(conn, logs)
    return core, chat, host_telemetry


def turn_actions(turn: int, deltas: int) -> list[dict[str, Any]]:
    turn_id = f"turn-{turn}"
    actions: list[dict[str, Any]] = [{"type": "chat/turnStarted", "turnId": turn_id}]
    actions += [
        {"type": "chat/delta", "turnId": turn_id, "partId": "p", "content": f"word {i} "}
        for i in range(deltas)
    ]
    actions += [
        {
            "type": "chat/toolCallStart",
            "turnId": turn_id,
            "toolCallId": f"{turn_id}-call",
            "toolName": "read_file",
            "displayName": "Read",
        },
        {
            "type": "chat/toolCallComplete",
            "turnId": turn_id,
            "toolCallId": f"{turn_id}-call",
            "result": {"success": True, "pastTenseMessage": "Read"},
        },
        {"type": "chat/turnComplete", "turnId": turn_id, "duration": 1},
    ]
    return actions


async def one_round(subscribers: int, deltas: int, telemetry: str | None, turn: int) -> float:
    core, chat, host_telemetry = made(subscribers, telemetry)
    actions = turn_actions(turn, deltas)
    started = time.perf_counter()
    for action in actions:
        core.emit(chat, action, reduce_state=False)
        if telemetry == "logs" and action["type"] != "chat/delta":
            logging_line(action)
    await asyncio.sleep(0)
    elapsed = time.perf_counter() - started
    if host_telemetry is not None:
        await host_telemetry.stop()
    core.stop()
    return elapsed


def logging_line(action: dict[str, Any]) -> None:
    """The host logs a turn's start and end (turn_counts.py): the lines a logs watcher gets."""
    import logging

    logging.getLogger("ahpd.turns").info("%s %s", action["type"], action["turnId"])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subscribers", type=int, default=50)
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    import logging

    logging.getLogger("ahpd").setLevel(logging.INFO)
    logging.getLogger("ahpd").propagate = False
    kinds: list[str | None] = [None, "unwatched", "traces", "logs"]
    times: dict[str | None, list[float]] = {kind: [] for kind in kinds}
    for turn in range(args.rounds):
        order = kinds[turn % len(kinds) :] + kinds[: turn % len(kinds)]
        for kind in order:
            times[kind].append(await one_round(args.subscribers, args.deltas, kind, turn))
    base, fastest = statistics.median(times[None]), min(times[None])
    print(
        f"telemetry: a {args.deltas}-delta turn with a tool call to {args.subscribers} "
        f"watchers, {args.rounds} rounds"
    )
    print(f"{'':34} median ms  ratio  fastest ms  ratio")
    names = {
        None: "no telemetry",
        "unwatched": "telemetry, nobody watching",
        "traces": "telemetry, a traces watcher",
        "logs": "telemetry, traces + logs/info",
    }
    for kind in kinds:
        median, least = statistics.median(times[kind]), min(times[kind])
        print(
            f"{names[kind]:34} {median * 1000:9.2f}  {median / base:5.3f}"
            f"  {least * 1000:10.2f}  {least / fastest:5.3f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
