"""Swapping two names in one step, as a person who can make symlinks races the host with."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> None:
    """Two names swapped in one step (renameat2 RENAME_EXCHANGE): at every moment each name
    is one of the two things, never neither."""
    if _libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


class Swapping:
    """A thread exchanging `a` and `b` over and over, from `start()` until `stop()`, which
    leaves them as they were."""

    def __init__(self, a: Path, b: Path) -> None:
        self.a, self.b = a, b
        self._stop = threading.Event()
        self._swaps = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            exchange(self.a, self.b)
            self._swaps += 1

    def start(self) -> Swapping:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self._swaps % 2:
            exchange(self.a, self.b)


def link_swapping(folder: Path, outside: Path) -> Swapping:
    """`folder` swapped again and again for a symlink to `outside` (beside it, `.link`)."""
    link = folder.with_name(folder.name + ".link")
    if not link.is_symlink():
        link.symlink_to(outside)
    return Swapping(folder, link)
