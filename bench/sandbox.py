"""What the sandbox (bubblewrap) adds to starting a process and to a terminal's round trip.

Each measure runs the same thing started plainly (the baseline) and in a person's jail, in
interleaved rounds in this one process, and prints both medians and what the sandbox adds:

- start: `true` started and reaped (what every git call and every `!` command pays), and a
  Python interpreter started to its first line of output (what an agent's start pays);
- keystroke: one byte written to a terminal's pty and read back from the program behind it
  (`cat`, the pty raw), through the same Pty class the host's terminals use.

Usage: python bench/sandbox.py [--starts 40] [--keys 400]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hosts.backends.process import start_group  # noqa: E402
from hosts.backends.sandbox import Jail, Sandbox, SandboxSettings, decide  # noqa: E402
from hosts.engine.terminals.pty import Pty  # noqa: E402

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


async def started(argv: list[str], folder: Path, jail: Jail | None) -> float:
    """Seconds from asking for the process until it has exited (its output read)."""
    begin = time.perf_counter()
    process = await start_group(
        argv, cwd=folder, env=ENV, jail=jail, stdout=asyncio.subprocess.PIPE
    )
    await process.communicate()
    return time.perf_counter() - begin


async def keystrokes(folder: Path, jail: Jail | None, count: int) -> list[float]:
    """Seconds from each byte written to the pty until `cat` has written it back."""
    loop = asyncio.get_running_loop()
    arrived: asyncio.Queue[bytes] = asyncio.Queue()
    argv = ["sh", "-c", "stty raw -echo; echo ready; exec cat"]
    env = dict(ENV)
    if jail is not None:
        argv, env = jail.wrap(argv, cwd=folder, env=env)
    pty = Pty(
        argv,
        cwd=folder,
        env=env,
        cols=80,
        rows=24,
        output=arrived.put_nowait,
        done=lambda _: None,
    )
    pty.start()
    seen = b""
    while b"ready" not in seen:
        seen += await arrived.get()
    times: list[float] = []
    for index in range(count):
        key = bytes([97 + index % 26])
        begin = loop.time()
        pty.write(key)
        got = b""
        while key not in got:
            got += await arrived.get()
        times.append(loop.time() - begin)
    await pty.kill(0.5)
    return times


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.2f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=40)
    parser.add_argument("--keys", type=int, default=400)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ahpd-bench-sandbox-") as name:
        folder = Path(name)
        settings = decide("auto", SandboxSettings(homes=folder / "homes"))
        if settings.mode != "bwrap":
            print(f"the sandbox cannot start here: {settings.reason}")
            return
        jail = Sandbox(settings).jail("user:bench", [folder])
        print(f"sandbox: {settings.version}; {options.starts} starts, {options.keys} keystrokes")
        for label, argv in (
            ("start `true`", ["true"]),
            ("start python to first output", [sys.executable, "-c", "print(1)"]),
        ):
            plain: list[float] = []
            boxed: list[float] = []
            for _ in range(options.starts):  # interleaved, so drift hits both alike
                plain.append(await started(argv, folder, None))
                boxed.append(await started(argv, folder, jail))
            low, high = statistics.median(plain), statistics.median(boxed)
            print(
                f"{label:32} plain {ms(plain)}  sandboxed {ms(boxed)}  "
                f"adds {(high - low) * 1000:6.2f} ms ({high / low:.2f}x)"
            )
        plain_keys: list[float] = []
        boxed_keys: list[float] = []
        for _ in range(3):
            plain_keys += await keystrokes(folder, None, options.keys // 3)
            boxed_keys += await keystrokes(folder, jail, options.keys // 3)
        ratio = statistics.median(boxed_keys) / statistics.median(plain_keys)
        print(
            f"{'keystroke round trip':32} plain {ms(plain_keys)}  sandboxed {ms(boxed_keys)}  "
            f"ratio {ratio:.2f}x"
        )


if __name__ == "__main__":
    asyncio.run(main())
