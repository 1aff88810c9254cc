"""The session catalogue: listSessions with 1k, 10k and 100k sessions stored.

For each size, a fresh data directory is migrated and seeded straight into its SQLite database
(through the ORM's bulk_create, in a subprocess: one announced session a row, one chat each, no
turns, distinct modified times), then `manage.py serve` starts over it and this prints:

- the time from spawning the server until it says it is serving, and until the first
  initialize is answered (the engine loads every stored session before it answers);
- the server's RSS (/proc) before and after one full listing;
- median times of `listSessions` with no limit (every session), with `limit: 50` (the first
  page) and with `limit: 50` at a page half way down (reached by passing back the nextCursor
  of larger pages: the cursor is opaque), and of `ping`, the round-trip floor;

beside the baseline: the same rows in a plain SQLite table of this process with an index on
(modified, uri), the same listing as one query (all rows; the first 50; the 50 after a key,
keyset `WHERE (modified, uri) < (?, ?)`), timed here in the same run. The baseline is the query
alone, so each ratio also holds what ahpd adds around it: JSON-RPC, the socket, serializing.
Always on the embedded default (SQLite), whatever DATABASE_URL says.

Usage: python bench/catalogue.py [--sizes 1000,10000,100000] [--calls 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.procs import Served, rss_bytes  # noqa: E402
from bench.rawws import RawSocket  # noqa: E402
from tests.support.server import TOKEN, URL_LINE  # noqa: E402

ROOT = "ahp-root://"
HOST_NAME = "bench"
OWNER = f"root:{HOST_NAME}"  # the deployment token signs in as root:<AHPD_HOST_NAME>
BASE_MS = 1_700_000_000_000
PAGE = 50
#: The largest page asked for while walking down to the deep page.
STRIDE = 5000
#: Timed calls of each page, unless they take longer than PHASE_SECONDS (then three at least).
PAGE_CALLS = 21
PHASE_SECONDS = 10.0
REPLY_HEAD = re.compile(rb'^\{"jsonrpc":"2\.0","id":(\d+)')


def server_env(data_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AHPD_", "PYTEST"))
        and k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        {
            "AHPD_PORT": "0",
            "AHPD_HOST": "127.0.0.1",
            "AHPD_DATA_DIR": str(data_dir),
            "AHPD_CONNECTION_TOKEN": TOKEN,
            "AHPD_HOST_NAME": HOST_NAME,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


# -- seeding (run in a subprocess, with AHPD_DATA_DIR set) ----------------------------------


def seed(count: int) -> None:
    """Migrate the data directory's database and store `count` sessions with a chat each."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ahpsite.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from hosts.models import StoredChat, StoredSession

    call_command("migrate", verbosity=0)
    batch = 2000
    with transaction.atomic():
        for start in range(0, count, batch):
            sessions, chats = [], []
            for i in range(start, min(count, start + batch)):
                uri = f"ahp-session:/00000000-0000-4000-8000-{i:012d}"
                chat = f"ahp-chat:/00000000-0000-4000-9000-{i:012d}"
                created = BASE_MS + i * 1000
                sessions.append(
                    StoredSession(
                        uri=uri,
                        provider="bench",
                        title=f"bench session {i}",
                        created_ms=created,
                        modified_ms=created + 500,
                        default_chat=chat,
                        working_directories=[f"file:///work/bench/{i}"],
                        config={},
                        announced=True,
                        chats=[chat],
                        owner=OWNER,
                    )
                )
                chats.append(StoredChat(uri=chat, session_id=uri, title="", created_ms=created))
            StoredSession.objects.bulk_create(sessions)
            StoredChat.objects.bulk_create(chats)


# -- the baseline -------------------------------------------------------------------------


class Baseline:
    """The same rows in a plain table indexed on (modified, uri), queried in this process."""

    COLUMNS = "uri, provider, title, created, modified, default_chat, directories, chats"
    ORDER = "ORDER BY modified DESC, uri DESC"

    def __init__(self, source: Path, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE sessions (uri TEXT PRIMARY KEY, provider TEXT, title TEXT, "
            "created INTEGER, modified INTEGER, default_chat TEXT, directories TEXT, chats TEXT)"
        )
        self.db.execute(f"ATTACH DATABASE '{source}' AS stored")
        self.db.execute(
            "INSERT INTO sessions SELECT s.uri, s.provider, s.title, s.created_ms, s.modified_ms, "
            "s.default_chat, s.working_directories, json_group_array(json_object("
            "'resource', c.uri, 'title', c.title, 'status', 1)) "
            "FROM stored.hosts_storedsession s JOIN stored.hosts_storedchat c "
            "ON c.session_id = s.uri WHERE s.announced GROUP BY s.uri"
        )
        self.db.commit()
        self.db.execute("DETACH DATABASE stored")
        self.db.execute("CREATE INDEX sessions_modified_uri ON sessions (modified, uri)")
        self.db.execute("ANALYZE")
        self.db.commit()

    def all(self) -> list[tuple[Any, ...]]:
        return self.db.execute(f"SELECT {self.COLUMNS} FROM sessions {self.ORDER}").fetchall()

    def first_page(self) -> list[tuple[Any, ...]]:
        return self.db.execute(
            f"SELECT {self.COLUMNS} FROM sessions {self.ORDER} LIMIT {PAGE}"
        ).fetchall()

    def key_before(self, offset: int) -> tuple[int, str]:
        """(modified, uri) of the row just before `offset` in the listing's order."""
        row = self.db.execute(
            f"SELECT modified, uri FROM sessions {self.ORDER} LIMIT 1 OFFSET ?", (offset - 1,)
        ).fetchone()
        return row[0], row[1]

    def page_after(self, key: tuple[int, str]) -> list[tuple[Any, ...]]:
        return self.db.execute(
            f"SELECT {self.COLUMNS} FROM sessions WHERE (modified, uri) < (?, ?) "
            f"{self.ORDER} LIMIT {PAGE}",
            key,
        ).fetchall()

    def close(self) -> None:
        self.db.close()


# -- the client ---------------------------------------------------------------------------


class Rpc(RawSocket):
    """A bare socket that matches replies to requests; a close fails whatever is waiting."""

    def __init__(self, _on_message: object = None) -> None:
        super().__init__(self.reply)
        self.pending: dict[int, asyncio.Future[tuple[bytes, float]]] = {}
        self.next_id = 0

    @classmethod
    async def connect(cls, url: str) -> Rpc:
        rpc = await cls.open(url, lambda payload, now: None)
        assert isinstance(rpc, Rpc)
        return rpc

    def reply(self, payload: bytes, now: float) -> None:
        match = REPLY_HEAD.match(payload)
        if match is None:
            return  # a notification, or a close frame (the connection ending tells the rest)
        waiter = self.pending.pop(int(match.group(1)), None)
        if waiter is not None and not waiter.done():
            waiter.set_result((payload, now))

    def connection_lost(self, exc: Exception | None) -> None:
        for waiter in self.pending.values():
            if not waiter.done():
                waiter.set_exception(ConnectionError("the server closed the connection"))
        if not self.upgraded.done():
            self.upgraded.set_exception(ConnectionError("the server closed the connection"))

    async def call(
        self, method: str, params: dict[str, Any], timeout: float = 120
    ) -> tuple[Any, float, int]:
        """The result, the seconds until its last byte arrived, and the reply's size."""
        self.next_id += 1
        waiter = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = waiter
        sent = time.perf_counter()
        self.send_text(
            orjson.dumps(
                {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
            ).decode()
        )
        payload, arrived = await asyncio.wait_for(waiter, timeout)
        reply = orjson.loads(payload)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"], arrived - sent, len(payload)


def initialize_params() -> dict[str, Any]:
    return {
        "channel": ROOT,
        "protocolVersions": ["1.0.0"],
        "clientId": "bench-catalogue",
        "initialSubscriptions": [],
    }


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def timed(function: Any, calls: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(calls):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return median_ms(times), result


async def ahpd_timed(rpc: Rpc, params: dict[str, Any], calls: int) -> tuple[float, Any]:
    """The median over `calls` listSessions calls (fewer past PHASE_SECONDS, three at least)."""
    times, result = [], None
    deadline = time.perf_counter() + PHASE_SECONDS
    while len(times) < calls and (len(times) < 3 or time.perf_counter() < deadline):
        result, elapsed, _ = await rpc.call("listSessions", params)
        times.append(elapsed)
    return median_ms(times), result


# -- one size -----------------------------------------------------------------------------


async def measure(size: int, calls: int, budget: float) -> dict[str, Any]:
    out: dict[str, Any] = {"size": size}
    data_dir = Path(tempfile.mkdtemp(prefix="ahpd-bench-catalogue-"))
    served: Served | None = None
    baseline: Baseline | None = None
    rpc: Rpc | None = None
    try:
        env = server_env(data_dir)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--seed", str(size)],
            cwd=REPO,
            env=env,
            check=True,
            timeout=budget,
        )
        out["seed_s"] = time.perf_counter() - start
        baseline = Baseline(data_dir / "ahpd.sqlite3", data_dir / "baseline.sqlite3")

        served = Served([sys.executable, "manage.py", "serve"], URL_LINE.pattern, env=env, cwd=REPO)
        assert served.match is not None
        out["serving_s"] = served.serving - served.started
        url = served.match.group(1)
        # Until the engine has loaded, a connection may be dropped (daphne gives up on an
        # upgrade the application has not accepted in time): count those, and try again.
        out["dropped"] = 0
        deadline = served.started + budget
        while True:
            try:
                rpc = await Rpc.connect(url)
                await rpc.call("initialize", initialize_params(), timeout=budget)
                break
            except ConnectionError:
                if rpc is not None:
                    rpc.close()
                    rpc = None
                out["dropped"] += 1
                if time.perf_counter() > deadline:
                    raise
                await asyncio.sleep(0.1)
        out["initialized_s"] = time.perf_counter() - served.started

        ping = [(await rpc.call("ping", {"channel": ROOT}))[1] for _ in range(20)]
        out["ping"] = (median_ms(ping), None)

        out["rss_before"] = rss_bytes(served.pid)
        try:
            result, first, out["all_bytes"] = await rpc.call("listSessions", {"channel": ROOT})
            out["rss_after"] = rss_bytes(served.pid)
            assert len(result["items"]) == size, f"{len(result['items'])} of {size} listed"
            ours: float | None = median_ms(
                [first]
                + [(await rpc.call("listSessions", {"channel": ROOT}))[1] for _ in range(calls - 1)]
            )
        except ConnectionError as exc:
            # A reply past the connection's send bound closes it: say so, and go on afresh.
            out["all_failed"] = str(exc)
            out["rss_after"] = rss_bytes(served.pid)
            ours = None
            rpc.close()
            rpc = await Rpc.connect(url)
            await rpc.call("initialize", initialize_params())
        base_ms, rows = timed(baseline.all, calls)
        assert len(rows) == size
        out["all"] = (ours, base_ms)

        ours, result = await ahpd_timed(rpc, {"channel": ROOT, "limit": PAGE}, PAGE_CALLS)
        base_ms, rows = timed(baseline.first_page, PAGE_CALLS)
        assert [item["resource"] for item in result["items"]] == [row[0] for row in rows]
        out["first"] = (ours, base_ms)

        # Down to half way with the largest pages, then a page of 50 from there.
        offset, cursor = 0, None
        target = size // 2
        while offset < target:
            stride = min(STRIDE, target - offset)
            params: dict[str, Any] = {"channel": ROOT, "limit": stride}
            if cursor is not None:
                params["cursor"] = cursor
            result, _, _ = await rpc.call("listSessions", params)
            offset += len(result["items"])
            cursor = result["nextCursor"]
        deep = {"channel": ROOT, "limit": PAGE, "cursor": cursor}
        ours, result = await ahpd_timed(rpc, deep, PAGE_CALLS)
        key = baseline.key_before(offset)
        base_ms, rows = timed(lambda: baseline.page_after(key), PAGE_CALLS)
        assert [item["resource"] for item in result["items"]] == [row[0] for row in rows]
        out["deep"] = (ours, base_ms)
        out["deep_offset"] = offset
        return out
    finally:
        if rpc is not None:
            rpc.close()
        if served is not None:
            served.stop()
        if baseline is not None:
            baseline.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def report(r: dict[str, Any]) -> None:
    mib = 1024 * 1024
    print(f"catalogue: {r['size']:,} sessions stored (seeded in {r['seed_s']:.1f} s)")
    print(
        f"ahpd start: serving after {r['serving_s']:.2f} s, "
        f"first initialize answered after {r['initialized_s']:.2f} s"
        + (f" ({r['dropped']} connections dropped before)" if r["dropped"] else "")
    )
    print(
        f"ahpd RSS: {r['rss_before'] / mib:.1f} MiB before one full listing, "
        f"{r['rss_after'] / mib:.1f} MiB after"
        + (f"; the full listing is {r['all_bytes'] / mib:.1f} MiB" if "all_bytes" in r else "")
    )
    print(f"{'':28} {'ahpd ms':>9} {'baseline ms':>12} {'ratio':>8}")
    labels = {
        "ping": "ping (round trip)",
        "all": "listSessions, all",
        "first": f"limit {PAGE}, first page",
        "deep": f"limit {PAGE}, at {r.get('deep_offset', 0):,}",
    }
    for key, label in labels.items():
        if key not in r:
            continue
        ours, base = r[key]
        ours_text = f"{ours:>9.2f}" if ours is not None else f"{'closed':>9}"
        base_text = f"{base:>12.3f}" if base is not None else f"{'':>12}"
        ratio = f"{'':>8}"
        if ours is not None and base:
            ratio = f"{ours / base:>8.2f}" if ours / base < 100 else f"{ours / base:>8,.0f}"
        print(f"{label:28} {ours_text} {base_text} {ratio}")
    if "all_failed" in r:
        print(f"listSessions, all: {r['all_failed']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--calls", type=int, default=5, help="timed calls of a full listing")
    parser.add_argument("--budget", type=float, default=300, help="seconds for seed or start")
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed is not None:
        seed(args.seed)
        return
    asyncio.run(run([int(s) for s in args.sizes.split(",") if s.strip()], args))


async def run(sizes: list[int], args: argparse.Namespace) -> None:
    for index, size in enumerate(sizes):
        if index:
            print()
        report(await measure(size, max(1, args.calls), args.budget))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
