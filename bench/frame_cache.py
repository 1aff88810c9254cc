"""The encoded-frame cache (hosts/edge/daphne_wire.py): what it holds, against the
count-bounded one it replaced (bench/frame_cache_baseline.py), in the same run.

A day of a server, as the cache sees it: envelopes fanned out to `--subscribers` watchers
each (every watcher's frame asked for in the same pass, as the engine's one-pass queue asks),
now and then one past the cache's bound (a pasted file); then windows coming back and
subscribing to big chats (`--answers` answers, each a snapshot of `--answer-mib` MiB said to
one client), and quiet. The engine lets each text go once its pass is over, as it does once the
ring and the queues have, so what tracemalloc still counts after the run is what the cache
holds. Also timed: the fan-out passes alone (every frame after the first of a pass a hit).

Usage: python bench/frame_cache.py [--answers 200] [--answer-mib 1] [--envelopes 2000]
       [--subscribers 100]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.frame_cache_baseline import CountBoundFrames  # noqa: E402
from hosts.edge.daphne_wire import FRAME_CACHE_BYTES, EncodedFrames  # noqa: E402

MIB = 1024 * 1024


def _text(size: int, tag: int) -> str:
    return f'{{"jsonrpc":"2.0","id":{tag},"result":{{"pad":"{"x" * size}"}}}}'


async def _day(cache: Any, args: argparse.Namespace) -> tuple[int, int, float]:
    """Run the workload through `cache`; (bytes held after, peak bytes, fan-out seconds)."""
    gc.collect()
    tracemalloc.start()
    fanned = 0.0
    for n in range(args.envelopes):
        size = 8 * MIB if n % 500 == 499 else 300
        text = _text(size, n)
        started = time.perf_counter()
        for _ in range(args.subscribers):
            cache.frame(text)
        fanned += time.perf_counter() - started
        del text
        await asyncio.sleep(0)  # the pass is over
    # Then windows come back after a restart, each subscribing to a big chat, and all is quiet.
    answer = int(args.answer_mib * MIB)
    for n in range(args.answers):
        cache.frame(_text(answer, n))
        await asyncio.sleep(0)
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return held, peak, fanned


async def main(args: argparse.Namespace) -> None:
    before = await _day(CountBoundFrames(), args)
    after = await _day(EncodedFrames(), args)
    print(
        f"frame cache: {args.envelopes} envelopes to {args.subscribers} subscribers each (one "
        f"of 8 MiB every 500), then {args.answers} answers of {args.answer_mib} MiB"
    )
    print(f"{'':22}{'held after MiB':>16}{'peak MiB':>10}{'fan-out s':>11}")
    for name, (held, peak, fanned) in (
        ("count-bound (before)", before),
        (f"{FRAME_CACHE_BYTES // MIB} MiB bound (after)", after),
    ):
        print(f"{name:22}{held / MIB:16.1f}{peak / MIB:10.1f}{fanned:11.3f}")
    print(
        f"ratio after/before: held {after[0] / before[0]:.3f}, peak {after[1] / before[1]:.2f}, "
        f"fan-out time {after[2] / before[2]:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--answer-mib", type=float, default=1.0)
    parser.add_argument("--envelopes", type=int, default=2000)
    parser.add_argument("--subscribers", type=int, default=100)
    asyncio.run(main(parser.parse_args()))
