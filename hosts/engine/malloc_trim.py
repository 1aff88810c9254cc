"""Giving memory back to the system after clients go: glibc's malloc_trim(0).

A client that stopped reading leaves what it was owed in its socket's buffer, up to
clientQueueBytes; freed as it closes, glibc keeps most of it for the process (a freed large
block raises the threshold under which later blocks come from the heap, and a heap shrinks
only from its top), so 200 slow readers gone still held 1.27 GiB. malloc_trim(0) hands every
free page back. It walks every arena, so it runs on a thread, a few seconds apart at most, never
on the fan-out's path; off glibc (musl, macOS) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
from collections.abc import Callable

log = logging.getLogger("ahpd.engine")

#: The least time between two trims, in seconds.
EVERY_S = 5.0
_MIB = 1024 * 1024


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the C library has none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    result: Callable[[int], int] = trim
    return result


#: The C library's malloc_trim, found once.
MALLOC_TRIM = _malloc_trim()


def resident_bytes() -> int:
    """This process's resident memory (VmRSS), in bytes; 0 where /proc cannot say."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class MemoryReturn:
    """Trims the heap soon after it is asked to, at most once every `every_s` seconds."""

    def __init__(
        self, every_s: float = EVERY_S, trim: Callable[[int], int] | None = MALLOC_TRIM
    ) -> None:
        self.every_s = every_s
        self._trim = trim
        self._due: asyncio.TimerHandle | None = None
        self._last = float("-inf")
        self._running: asyncio.Task[None] | None = None

    def soon(self) -> None:
        """Ask for a trim: now if none ran within `every_s`, else that long after the last."""
        if self._trim is None or self._due is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # nothing runs it; the next close on the loop asks again
        delay = max(0.0, self._last + self.every_s - loop.time())
        self._due = loop.call_later(delay, self._start)

    def _start(self) -> None:
        self._due = None
        if self._running is not None and not self._running.done():
            self.soon()  # the last is still walking the arenas: after it
            return
        self._last = asyncio.get_running_loop().time()
        self._running = asyncio.get_running_loop().create_task(self._run(), name="malloc_trim")

    async def _run(self) -> None:
        trim = self._trim
        assert trim is not None
        before = resident_bytes()
        with contextlib.suppress(OSError):
            await asyncio.to_thread(trim, 0)
        given = before - resident_bytes()
        if given >= _MIB:
            log.info("gave %d MiB back to the system after clients left", given // _MIB)

    def stop(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None
