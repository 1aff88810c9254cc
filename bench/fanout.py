"""Fan-out: N subscribers of a channel, one client dispatching actions, three servers.

Two paths through ahpd, each measured on its own:

- hot: N subscribers of a chat, and a person (signed in with their own token, so their grants
  are checked on every action) sending `chat/draftChanged`, which ahpd says at once and writes
  behind: the path every keystroke and every streamed delta takes;
- root config: N subscribers of ahp-root://, and the deployment's token sending
  `root/configChanged`, which ahpd commits to its database before it says it: what one commit
  costs, shared by the actions that arrive together.

Runs ahpd (`manage.py serve`, embedded default unless DATABASE_URL/REDIS_URL are set) and two
minimal broadcast servers that stamp a serverSeq, serialize once and send to every subscriber:
Python `websockets` (bench/broadcast_baseline.py) and Node `ws` (bench/broadcast_node.js, `ws`
installed from npm into bench/.node/ on first use). Each is its own process; the clients are
bare sockets (bench/rawws.py) in this process. Two modes, each server in turn, in interleaved
rounds (the order rotating), medians of the rounds:

- back to back: M actions sent without waiting; deliveries per second (N * M / elapsed until
  every subscriber has the last);
- lockstep: one action in flight (the next is sent once every subscriber has the last);
  deliveries per second and p50 / p99 of the time from a dispatch until the last subscriber
  has its envelope.

For each, the server's CPU per delivery: utime + stime from /proc/<pid>/stat (its threads, and
its children if any) read before and after the phase, over N * M. The phase's reading is taken
once the server has been quiet for a moment after the last delivery, so that work it puts off
(ahpd's write-behind) is counted in the phase that caused it. Then ratios ahpd/python and
ahpd/node. Usage: python bench/fanout.py [--subscribers 100] [--actions 1000] [--lockstep 300]
[--rounds 3] [--path hot|root|both]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.procs import Cpu, Served, cpu, thread_cpu  # noqa: E402
from bench.rawws import RawSocket  # noqa: E402
from tests.support.server import TOKEN, URL_LINE, ServerProcess  # noqa: E402

ROOT = "ahp-root://"
HOT = "hot"
ROOT_CONFIG = "root"
PATHS = {
    HOT: "hot path (chat/draftChanged, written behind)",
    ROOT_CONFIG: "root config (committed)",
}
NODE_DIR = REPO / "bench" / ".node"
WS_VERSION = "8.23.0"
#: How long a server must have been left alone before its CPU is read: past ahpd's
#: write-behind delay (0.25 s), so the writes a phase caused are counted in it.
SETTLE = 0.4


def ensure_node_ws() -> str | None:
    """Install `ws` into bench/.node/ unless it is there; why not, or None when it is ready."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "node or npm is not on PATH"
    manifest = NODE_DIR / "node_modules" / "ws" / "package.json"
    if manifest.exists() and orjson.loads(manifest.read_bytes()).get("version") == WS_VERSION:
        return None
    try:
        done = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(NODE_DIR),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"ws@{WS_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return "npm install ws timed out"
    if done.returncode != 0:
        return f"npm install ws failed: {done.stderr.strip()[-500:]}"
    return None


class Arrivals:
    """When the last of N subscribers had each action (by clientSeq), and who is waiting."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.counts: dict[int, int] = {}
        self.last: dict[int, float] = {}
        self.waiting: dict[int, asyncio.Future[None]] = {}

    def arrived(self, seq: int, now: float) -> None:
        count = self.counts.get(seq, 0) + 1
        self.counts[seq] = count
        if count == self.n:
            self.last[seq] = now
            waiter = self.waiting.pop(seq, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    async def all_have(self, seq: int, timeout: float = 60) -> None:
        if self.counts.get(seq, 0) >= self.n:
            return
        waiter = asyncio.get_running_loop().create_future()
        self.waiting[seq] = waiter
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            got = self.counts.get(seq, 0)
            raise TimeoutError(f"{got} of {self.n} subscribers got action {seq}") from None


class Client:
    """One bare socket: its initialize answered, then every envelope's clientSeq to `on_seq`."""

    def __init__(self, on_seq: Callable[[int, float], None] | None) -> None:
        self.on_seq = on_seq
        self.reply: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.socket: RawSocket | None = None

    @classmethod
    async def open(cls, url: str, hello_frame: str, on_seq: Callable[[int, float], None] | None):
        client = cls(on_seq)
        client.socket = await RawSocket.open(url, client.take)
        client.socket.send_text(hello_frame)
        await asyncio.wait_for(client.reply, 30)
        return client

    def take(self, payload: bytes, now: float) -> None:
        if not self.reply.done() and payload.startswith(b'{"jsonrpc":"2.0","id"'):
            self.reply.set_result(None)
            return
        if self.on_seq is None:
            return
        params = orjson.loads(payload).get("params")
        if params is not None and "origin" in params:
            self.on_seq(params["origin"]["clientSeq"], now)

    def send(self, text: str) -> None:
        assert self.socket is not None
        self.socket.send_text(text)

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()


def hello(client_id: str, subscriptions: list[str]) -> str:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "channel": ROOT,
                "protocolVersions": ["1.0.0"],
                "clientId": client_id,
                "initialSubscriptions": subscriptions,
            },
        }
    ).decode()


def action_frame(path: str, channel: str, seq: int, run: str) -> str:
    """One dispatch: a draft typed into a chat (hot), or a root config push (root)."""
    if path == HOT:
        action = {"type": "chat/draftChanged", "draft": {"text": f"{run}-{seq}"}}
    else:
        action = {"type": "root/configChanged", "config": {"bench": f"{run}-{seq}"}}
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "method": "dispatchAction",
            "params": {"channel": channel, "clientSeq": seq, "action": action},
        }
    ).decode()


@dataclass
class Target:
    """Where one path's subscribers connect and watch, and where its sender connects."""

    url: str
    channel: str
    sender_url: str


@dataclass
class Server:
    name: str
    pid: int
    targets: dict[str, Target]
    rounds: dict[tuple[str, str], list[dict[str, float]]] = field(default_factory=dict)


class Meter:
    """The server's CPU (and, for the breakdown, its main thread's) across one phase."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    async def __aenter__(self) -> Meter:
        await asyncio.sleep(SETTLE)
        self.cpu = cpu(self.pid)
        self.main = thread_cpu(self.pid).get(self.pid, Cpu(0, 0))
        self.wall = time.perf_counter()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if exc[0] is not None:
            return
        wall = time.perf_counter() - self.wall
        await asyncio.sleep(SETTLE)
        self.used = cpu(self.pid) - self.cpu
        self.main_used = thread_cpu(self.pid).get(self.pid, Cpu(0, 0)) - self.main
        self.busy = self.used.total / wall  # what it did while settling is the phase's too

    def figures(self, deliveries: int) -> dict[str, float]:
        return {
            "cpu_us": self.used.total / deliveries * 1e6,
            "user_us": self.used.user / deliveries * 1e6,
            "sys_us": self.used.system / deliveries * 1e6,
            "busy": self.busy,
            "main_share": self.main_used.total / self.used.total if self.used.total else 0.0,
        }


async def measure(
    server: Server, path: str, n: int, m: int, lockstep: int
) -> dict[str, dict[str, float]]:
    target = server.targets[path]
    arrivals = Arrivals(n)
    subs = [
        await Client.open(
            target.url, hello(f"{server.name}-{path}-sub-{i}", [target.channel]), arrivals.arrived
        )
        for i in range(n)
    ]
    sender = await Client.open(target.sender_url, hello(f"{server.name}-{path}-sender", []), None)
    run = f"{server.name}-{time.time_ns()}"

    def send(seq: int) -> None:
        sender.send(action_frame(path, target.channel, seq, run))

    try:
        for seq in range(1, 21):  # warm-up
            send(seq)
        await arrivals.all_have(20)

        first = 21
        async with Meter(server.pid) as meter:
            start = time.perf_counter()
            for seq in range(first, first + m):
                send(seq)
            await arrivals.all_have(first + m - 1)
            elapsed = time.perf_counter() - start
        got = sum(arrivals.counts[s] for s in range(first, first + m))
        assert got == n * m, f"{server.name}: {got} deliveries of {n * m}"
        back_to_back = {"deliveries_per_s": n * m / elapsed, **meter.figures(n * m)}

        first += m
        latencies = []
        async with Meter(server.pid) as meter:
            start = time.perf_counter()
            for seq in range(first, first + lockstep):
                sent = time.perf_counter()
                send(seq)
                await arrivals.all_have(seq)
                latencies.append(arrivals.last[seq] - sent)
            elapsed = time.perf_counter() - start
        latencies.sort()
        locked = {
            "deliveries_per_s": n * lockstep / elapsed,
            "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
            **meter.figures(n * lockstep),
        }
    finally:
        sender.close()
        for sub in subs:
            sub.close()
    return {"back to back": back_to_back, "lockstep": locked}


#: Made in ahpd's database before it starts: a member, with a token of their own.
PERSON_SCRIPT = """
from django.contrib.auth import get_user_model
from hosts.models import Role
from hosts.store import ensure_builtin_roles, mint_token, set_host_roles
ensure_builtin_roles()
person = get_user_model().objects.create(username="bench")
set_host_roles(person, [Role.objects.get(name="member")])
print(mint_token("bench", "bench").secret)
"""


async def ahpd_chat(url: str, folder: str) -> str:
    """A session made by the person whose token `url` carries; its default chat's URI."""
    replies: dict[int, asyncio.Future[Any]] = {}

    def take(payload: bytes, now: float) -> None:
        message = orjson.loads(payload)
        waiter = replies.pop(message.get("id"), None) if "id" in message else None
        if waiter is not None:
            waiter.set_result(message)

    socket = await RawSocket.open(url, take)

    async def call(request_id: int, method: str, params: dict[str, Any]) -> Any:
        replies[request_id] = asyncio.get_running_loop().create_future()
        socket.send_text(
            orjson.dumps(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            ).decode()
        )
        answer = await asyncio.wait_for(replies[request_id], 30)
        assert "result" in answer, f"{method}: {answer}"
        return answer["result"]

    try:
        await call(
            1,
            "initialize",
            {"channel": ROOT, "protocolVersions": ["1.0.0"], "clientId": "bench-maker"},
        )
        session = f"ahp-session:/{uuid.uuid4()}"
        await call(
            2,
            "createSession",
            {"channel": session, "provider": "bench", "workingDirectories": [folder]},
        )
        snapshot = await call(3, "subscribe", {"channel": session})
        return str(snapshot["snapshot"]["state"]["defaultChat"])
    finally:
        socket.close()


def bench_agents(folder: Path) -> Path:
    """An AHPD_CONFIG file in `folder` naming one agent, `bench`, to make a session with:
    drafts never start a turn, so its model is never asked."""
    agents = folder / "agents.json"
    agents.write_text(
        orjson.dumps(
            {
                "agents": [
                    {
                        "provider": "bench",
                        "kind": "openai",
                        "displayName": "bench",
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "model": "none",
                        "apiKey": "none",
                    }
                ]
            }
        ).decode()
    )
    return agents


async def start_ahpd(stack: list[Callable[[], None]]) -> Server:
    folder = Path(tempfile.mkdtemp(prefix="ahpd-bench-"))
    stack.append(lambda: shutil.rmtree(folder, ignore_errors=True))
    agents = bench_agents(folder)
    # The data directory (or database) and environment the tests use.
    config = ServerProcess(env_extra={"AHPD_CONFIG": str(agents)})
    stack.append(config.close)
    env = config.env()
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    person = config.shell(PERSON_SCRIPT).strip().splitlines()[-1]
    served = Served([sys.executable, "manage.py", "serve"], URL_LINE.pattern, env=env, cwd=REPO)
    stack.append(served.stop)
    assert served.match is not None
    base = served.match.group(1).split("?", 1)[0]
    root_url, person_url = f"{base}?tkn={TOKEN}", f"{base}?tkn={person}"
    chat = await ahpd_chat(person_url, folder.as_uri())
    return Server(
        "ahpd",
        served.pid,
        {
            HOT: Target(root_url, chat, person_url),
            ROOT_CONFIG: Target(root_url, ROOT, root_url),
        },
    )


def start_baseline(name: str, argv: list[str], stack: list[Callable[[], None]]) -> Server:
    served = Served(argv, r"serving (ws://\S+)", cwd=REPO)
    stack.append(served.stop)
    assert served.match is not None
    url = served.match.group(1)
    # The baselines broadcast whatever is dispatched to whoever subscribed to anything.
    targets = {
        HOT: Target(url, "ahp-chat:/bench/chat", url),
        ROOT_CONFIG: Target(url, ROOT, url),
    }
    return Server(name, served.pid, targets)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def report(
    path: str, mode: str, servers: list[Server], args: argparse.Namespace, node_note: str | None
) -> None:
    rows = {
        s.name: {
            k: statistics.median(r[k] for r in s.rounds[path, mode])
            for k in s.rounds[path, mode][0]
        }
        for s in servers
    }
    count = args.actions if mode == "back to back" else args.lockstep
    print(
        f"fan-out, {PATHS[path]}, {mode}: {args.subscribers} subscribers, {count} actions; "
        f"median of {args.rounds} interleaved rounds"
    )
    latency = mode == "lockstep"
    head = f"{'':8} {'deliveries/s':>13}"
    if latency:
        head += f" {'p50 ms':>8} {'p99 ms':>8}"
    head += f" {'CPU us/delivery':>16} {'user':>6} {'sys':>6} {'cores busy':>11}"
    print(head)
    for name, r in rows.items():
        line = f"{name:8} {r['deliveries_per_s']:>13,.0f}"
        if latency:
            line += f" {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}"
        line += f" {r['cpu_us']:>16.2f} {r['user_us']:>6.2f} {r['sys_us']:>6.2f} {r['busy']:>11.2f}"
        print(line)
    ours = rows["ahpd"]
    for other in ("python", "node"):
        if other not in rows:
            print(f"ratio ahpd/{other}: n/a ({node_note})")
            continue
        base = rows[other]
        speed = ratio(ours["deliveries_per_s"], base["deliveries_per_s"])
        text = f"ratio ahpd/{other}: deliveries/s {speed}"
        if latency:
            text += (
                f", p50 {ratio(ours['p50_ms'], base['p50_ms'])}"
                f", p99 {ratio(ours['p99_ms'], base['p99_ms'])}"
            )
        text += f", CPU/delivery {ratio(ours['cpu_us'], base['cpu_us'])}"
        per_round = [
            ratio(a["cpu_us"], b["cpu_us"])
            for a, b in zip(
                servers[0].rounds[path, mode],
                next(s for s in servers if s.name == other).rounds[path, mode],
                strict=True,
            )
        ]
        text += f" (rounds: {' '.join(per_round)})"
        print(text)
    print(f"ahpd's main thread did {ours['main_share']:.0%} of its CPU")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--actions", type=int, default=1000, help="back to back, per round")
    parser.add_argument("--lockstep", type=int, default=300, help="one at a time, per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--path", choices=(HOT, ROOT_CONFIG, "both"), default="both")
    args = parser.parse_args()
    paths = [HOT, ROOT_CONFIG] if args.path == "both" else [args.path]

    node_note = ensure_node_ws()
    if node_note:
        print(f"fan-out: without the Node baseline: {node_note}", file=sys.stderr)
    stack: list[Callable[[], None]] = []
    try:
        servers = [
            await start_ahpd(stack),
            start_baseline(
                "python", [sys.executable, str(REPO / "bench" / "broadcast_baseline.py")], stack
            ),
        ]
        if node_note is None:
            node = shutil.which("node")
            assert node is not None
            servers.append(
                start_baseline("node", [node, str(REPO / "bench" / "broadcast_node.js")], stack)
            )
        # Interleaved rounds, the order rotating, medians reported: two cores carry the servers
        # and every client, so one round alone swings with whatever else the machine is doing.
        for index in range(args.rounds):
            shift = index % len(servers)
            for path in paths:
                for server in servers[shift:] + servers[:shift]:
                    figures = await measure(
                        server, path, args.subscribers, args.actions, args.lockstep
                    )
                    for mode, values in figures.items():
                        server.rounds.setdefault((path, mode), []).append(values)
    finally:
        for undo in reversed(stack):
            undo()
    first = True
    for path in paths:
        for mode in ("back to back", "lockstep"):
            if not first:
                print()
            first = False
            report(path, mode, servers, args, node_note)


if __name__ == "__main__":
    asyncio.run(main())
