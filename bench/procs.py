"""What the benchmarks read about the servers they start: CPU time and memory from /proc, and a
server process with the moments it was started and said it was serving.

CPU is the process's utime + stime (every thread), plus that of its live descendants, plus what
its reaped children left in cutime + cstime; in clock ticks, turned into seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

TICK = 1 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Cpu:
    user: float
    system: float

    @property
    def total(self) -> float:
        return self.user + self.system

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.user - other.user, self.system - other.system)


def _stat_fields(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    # The command name is in parentheses and may hold spaces: split after its closing one.
    return text[text.rindex(")") + 2 :].split()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def cpu(pid: int) -> Cpu:
    """CPU seconds used so far by `pid`, its live descendants and its reaped children."""
    user = system = 0
    pending = [pid]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            fields = _stat_fields(current)
        except OSError:
            continue  # gone between the listing and the read
        # Fields 14-17 of stat (utime, stime, cutime, cstime), counted from the pid as 1.
        user += int(fields[11]) + int(fields[13])
        system += int(fields[12]) + int(fields[14])
        try:
            pending += _children(current)
        except OSError:
            continue
    return Cpu(user * TICK, system * TICK)


def rss_bytes(pid: int) -> int:
    """The resident set of `pid` alone, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def thread_cpu(pid: int) -> dict[int, Cpu]:
    """CPU seconds per thread of `pid`, by thread id (the main thread's id is the pid)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        out[int(task.name)] = Cpu(int(fields[11]) * TICK, int(fields[12]) * TICK)
    return out


class Served:
    """A server process that prints a line matching `ready` once it listens.

    `started` is the perf_counter moment just before it was spawned, `serving` the moment its
    ready line was read, `match` that line's match. Always `stop()` it (a `finally` does)."""

    def __init__(
        self,
        argv: list[str],
        ready: str,
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.output: deque[str] = deque(maxlen=500)
        pattern = re.compile(ready)
        found = threading.Event()
        self.match: re.Match[str] | None = None
        self.serving = 0.0
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.output.append(line.rstrip("\n"))
                if self.match is None:
                    match = pattern.search(line)
                    if match:
                        self.serving = time.perf_counter()
                        self.match = match
                        found.set()
            found.set()

        threading.Thread(target=pump, daemon=True).start()
        try:
            if not found.wait(timeout) or self.match is None:
                raise RuntimeError(f"{argv[1:]} did not start:\n" + "\n".join(self.output))
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
