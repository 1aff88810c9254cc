"""Several nodes: what it costs to deliver a session's actions to clients spread over two nodes,
against the same clients on the one node that runs the session, in the same run.

Two `manage.py serve` processes on one PostgreSQL database and one Redis (DATABASE_URL and
REDIS_URL must be set): node A runs a session; a person's client on A sends `chat/draftChanged`
to its chat (the hot path: said at once, written behind). N subscribers watch the chat:

- one node: all N on A;
- two nodes: N/2 on A, N/2 on B, which serves them from its mirror of the chat, fed by A over
  the channel layer (hosts/engine/other_nodes/).

For each, in interleaved rounds (medians), M actions back to back: deliveries per second (N * M
over the time until every subscriber has the last) and the CPU per delivery of both nodes
together (utime + stime from /proc, read once each node has been quiet for a moment), with the
Redis server's CPU beside it where its process is readable here. Then the ratios two/one: the
relay's cost. Usage: python bench/nodes.py [--subscribers 100] [--actions 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.fanout import (  # noqa: E402
    HOT,
    PERSON_SCRIPT,
    SETTLE,
    Arrivals,
    Client,
    action_frame,
    ahpd_chat,
    bench_agents,
    hello,
)
from bench.procs import Cpu, Served, cpu  # noqa: E402
from tests.support.server import TOKEN, URL_LINE, ServerProcess  # noqa: E402

ONE, TWO = "one node", "two nodes"


def redis_pid() -> int | None:
    """The local Redis server's pid, where its /proc entry can be read here."""
    try:
        found = subprocess.run(["pgrep", "-x", "redis-server"], capture_output=True, text=True)
    except OSError:
        return None
    for line in found.stdout.split():
        try:
            cpu(int(line))
        except OSError:
            continue
        return int(line)
    return None


class Meter:
    """The CPU of several processes across one phase."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    def _now(self) -> list[Cpu]:
        return [cpu(pid) for pid in self.pids]

    async def __aenter__(self) -> Meter:
        await asyncio.sleep(SETTLE)
        self.before = self._now()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.sleep(SETTLE)
        self.used = [after - before for after, before in zip(self._now(), self.before, strict=True)]


async def measure(
    urls: list[str], sender_url: str, chat: str, n: int, m: int, pids: list[int], name: str
) -> dict[str, float]:
    """N subscribers, spread round-robin over `urls`; M actions back to back."""
    arrivals = Arrivals(n)
    subs = [
        await Client.open(
            urls[i % len(urls)], hello(f"{name}-sub-{i}-{time.time_ns()}", [chat]), arrivals.arrived
        )
        for i in range(n)
    ]
    sender = await Client.open(sender_url, hello(f"{name}-sender-{time.time_ns()}", []), None)
    run = f"{name}-{time.time_ns()}"
    try:
        for seq in range(1, 21):  # warm-up
            sender.send(action_frame(HOT, chat, seq, run))
        await arrivals.all_have(20)
        first = 21
        async with Meter(pids) as meter:
            start = time.perf_counter()
            for seq in range(first, first + m):
                sender.send(action_frame(HOT, chat, seq, run))
            await arrivals.all_have(first + m - 1)
            elapsed = time.perf_counter() - start
        got = sum(arrivals.counts[s] for s in range(first, first + m))
        assert got == n * m, f"{name}: {got} deliveries of {n * m}"
    finally:
        sender.close()
        for sub in subs:
            sub.close()
    deliveries = n * m
    nodes_cpu = sum(used.total for used in meter.used[:2])
    figures = {
        "deliveries_per_s": deliveries / elapsed,
        "cpu_us": nodes_cpu / deliveries * 1e6,
    }
    if len(meter.used) > 2:
        figures["redis_us"] = meter.used[2].total / deliveries * 1e6
    return figures


def start_nodes(stack: list[Callable[[], None]]) -> tuple[list[Served], str, str]:
    """Nodes A and B on one database and one Redis; the person's token, the served folder."""
    folder = Path(tempfile.mkdtemp(prefix="ahpd-bench-nodes-"))
    stack.append(lambda: shutil.rmtree(folder, ignore_errors=True))
    agents = bench_agents(folder)
    first = ServerProcess(env_extra={"AHPD_CONFIG": str(agents), "AHPD_NODE_ID": "bench-a"})
    stack.append(first.close)
    env = first.env()
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    person = first.shell(PERSON_SCRIPT).strip().splitlines()[-1]
    shared = {key: env[key] for key in ("DATABASE_URL", "AHPD_REDIS_PREFIX")}
    second = ServerProcess(
        env_extra={"AHPD_CONFIG": str(agents), "AHPD_NODE_ID": "bench-b", **shared}
    )
    stack.append(second.close)
    served = []
    for process in (first, second):
        node = Served(
            [sys.executable, "manage.py", "serve"], URL_LINE.pattern, env=process.env(), cwd=REPO
        )
        stack.append(node.stop)
        served.append(node)
    return served, person, folder.as_uri()


def base(node: Served) -> str:
    assert node.match is not None
    return node.match.group(1).split("?", 1)[0]


async def main(args: argparse.Namespace) -> None:
    stack: list[Callable[[], None]] = []
    try:
        nodes, person, folder = start_nodes(stack)
        a, b = (base(node) for node in nodes)
        chat = await ahpd_chat(f"{a}?tkn={person}", folder)
        pids = [node.pid for node in nodes]
        redis = redis_pid()
        if redis is not None:
            pids.append(redis)
        layouts = {
            ONE: [f"{a}?tkn={TOKEN}"],
            TWO: [f"{a}?tkn={TOKEN}", f"{b}?tkn={TOKEN}"],
        }
        rounds: dict[str, list[dict[str, float]]] = {ONE: [], TWO: []}
        order = [ONE, TWO]
        for round_no in range(args.rounds):
            for layout in order if round_no % 2 == 0 else reversed(order):
                rounds[layout].append(
                    await measure(
                        layouts[layout],
                        f"{a}?tkn={person}",
                        chat,
                        args.subscribers,
                        args.actions,
                        pids,
                        layout.replace(" ", "-"),
                    )
                )
        report(rounds, args, redis is not None)
    finally:
        for undo in reversed(stack):
            undo()


def report(
    rounds: dict[str, list[dict[str, float]]], args: argparse.Namespace, redis: bool
) -> None:
    def median(layout: str, key: str) -> float:
        return statistics.median(r[key] for r in rounds[layout])

    print(
        f"nodes: {args.subscribers} subscribers of one chat, {args.actions} chat/draftChanged "
        f"back to back, {args.rounds} rounds (medians); "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} CPUs"
    )
    print(f"{'':<44}{'deliveries/s':>14}{'CPU us/delivery':>18}{'Redis us':>10}")
    for layout, what in ((ONE, "all on node A (runs the chat)"), (TWO, "half on A, half on B")):
        redis_us = f"{median(layout, 'redis_us'):>10.2f}" if redis else f"{'n/a':>10}"
        print(
            f"{layout + ': ' + what:<44}{median(layout, 'deliveries_per_s'):>14,.0f}"
            f"{median(layout, 'cpu_us'):>18.2f}{redis_us}"
        )
    cpu_ratio = median(TWO, "cpu_us") / median(ONE, "cpu_us")
    rate_ratio = median(TWO, "deliveries_per_s") / median(ONE, "deliveries_per_s")
    print(
        f"two nodes / one node: CPU per delivery {cpu_ratio:.2f}x (goal <= 1.3x), "
        f"deliveries per second {rate_ratio:.2f}x"
    )
    if redis:
        with_redis = (median(TWO, "cpu_us") + median(TWO, "redis_us")) / (
            median(ONE, "cpu_us") + median(ONE, "redis_us")
        )
        print(f"with Redis's CPU counted: {with_redis:.2f}x")


if __name__ == "__main__":
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        sys.exit("bench/nodes.py: set DATABASE_URL and REDIS_URL (nodes share both)")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--actions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
