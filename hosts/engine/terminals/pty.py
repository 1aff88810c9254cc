"""A shell under a real pseudoterminal (ptyprocess), read on the event loop with no polling.

The master fd is read by the loop's own reader (`add_reader`): each wakeup drains what the
shell wrote, up to `READ_PER_WAKEUP`, and hands it on as one chunk, so a flood is said in a
few large pieces rather than one per byte. Exit is seen through a pidfd, also a loop reader.
`done` is told once both happened, the output drained (EOF) and the process reaped, in that
order of truth: between the two there is output written and not yet read.

The shell leads a session of its own (the pty's), and job control gives each job a process
group of its own in it: stopping the terminal signals every group of that session, so a job
that ignores SIGHUP, or one left in the background, dies with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from ptyprocess import PtyProcess

log = logging.getLogger("ahpd.terminals")

#: The most one wakeup reads before the loop goes on to other work.
READ_PER_WAKEUP = 256 * 1024
#: Input a client typed that the pty has not taken yet, at most; beyond it input is dropped.
MAX_PENDING_INPUT = 1024 * 1024
#: How long after the shell exited its output may still drain (a background job holding the
#: pty open would otherwise keep the terminal from ever being said to have exited).
DRAIN_AFTER_EXIT_S = 1.0
#: Put back to their defaults in the terminal's process before its exec.
RESET_IN_CHILD = (
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGTERM,
    signal.SIGPIPE,
    signal.SIGXFSZ,
)


def exit_code(status: int) -> int:
    """A wait status as a shell says it: the exit code, or 128 + the signal that killed it."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


class Pty:
    """One process under a pseudoterminal, started by `start`, stopped by `kill`."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        cols: int,
        rows: int,
        output: Callable[[bytes], None],
        done: Callable[[int | None], None],
        umask: int = -1,
    ) -> None:
        self._argv = list(argv)
        #: The umask the process starts with; -1: the server's own.
        self._umask = umask
        self._cwd = cwd
        self._env = dict(env)
        self._size = (rows, cols)
        self._output = output
        self._done = done
        self._proc: PtyProcess | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pidfd = -1
        self._input = bytearray()
        self._eof = False
        self._status: int | None = None
        self._told = False
        self._drain_timer: asyncio.TimerHandle | None = None
        self._exited = asyncio.Event()

    @property
    def pid(self) -> int:
        assert self._proc is not None, "the pty is not started"
        return int(self._proc.pid)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._status is None

    @property
    def killed_by(self) -> int | None:
        """The signal the process died of, once it was reaped; None if it exited."""
        status = self._status
        return os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None

    def start(self) -> None:
        """Start the process; OSError (FileNotFoundError for a missing shell) if it cannot."""
        self._loop = asyncio.get_running_loop()
        # ptyprocess forks, makes the child a session leader with the pty as its controlling
        # terminal, sets the size, and waits for the exec (an exec that fails raises here).
        mask = self._umask

        def in_child() -> None:
            # An ignored signal stays ignored across exec: a server started under nohup (or by
            # a supervisor that ignores SIGHUP), and Python's own SIGPIPE, would leave a shell
            # that a hang-up never reaches and pipes that never break.
            for sig in RESET_IN_CHILD:
                signal.signal(sig, signal.SIG_DFL)
            if mask >= 0:
                os.umask(mask)

        self._proc = proc = PtyProcess.spawn(
            self._argv,
            cwd=str(self._cwd),
            env=self._env,
            dimensions=self._size,
            preexec_fn=in_child,
        )
        fd = proc.fd
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._readable)
        self._pidfd = os.pidfd_open(proc.pid)
        self._loop.add_reader(self._pidfd, self._reap)

    # -- output and exit ------------------------------------------------------------------

    def _readable(self) -> None:
        assert self._proc is not None
        chunks: list[bytes] = []
        total = 0
        eof = False
        while total < READ_PER_WAKEUP:
            try:
                chunk = os.read(self._proc.fd, 65536)
            except BlockingIOError:
                break
            except OSError as exc:
                # Linux answers EIO once no process holds the pty's other end.
                if exc.errno != errno.EIO:
                    log.warning("reading terminal %s failed: %s", self.pid, exc)
                eof = True
                break
            if not chunk:
                eof = True
                break
            chunks.append(chunk)
            total += len(chunk)
        if chunks:
            self._output(b"".join(chunks))
        if eof:
            self._drained()

    def _drained(self) -> None:
        if self._eof:
            return
        self._eof = True
        assert self._loop is not None and self._proc is not None
        self._loop.remove_reader(self._proc.fd)
        self._maybe_done()

    def _reap(self) -> None:
        assert self._loop is not None
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = -1
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            status = 0
        self._status = status
        self._exited.set()
        if not self._eof:
            self._drain_timer = self._loop.call_later(DRAIN_AFTER_EXIT_S, self._give_up_draining)
        self._maybe_done()

    def _give_up_draining(self) -> None:
        self._drain_timer = None
        if not self._eof:
            self._readable()
            self._drained()

    def _maybe_done(self) -> None:
        if self._told or not self._eof or self._status is None:
            return
        self._told = True
        if self._drain_timer is not None:
            self._drain_timer.cancel()
        self._close_fd()
        self._done(exit_code(self._status))

    def _close_fd(self) -> None:
        proc = self._proc
        if proc is None or proc.closed:
            return
        assert self._loop is not None
        self._loop.remove_reader(proc.fd)
        self._loop.remove_writer(proc.fd)
        with contextlib.suppress(OSError):
            proc.fileobj.close()
        # Marked closed so that ptyprocess's own close (run by its __del__) neither sleeps on
        # the loop nor waits for a child this module reaped already.
        proc.closed = True
        proc.terminated = True

    # -- input and size -------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Write input through to the pty (a ^C reaches the foreground job via its line
        discipline); what it cannot take yet is written when it can."""
        proc = self._proc
        if proc is None or proc.closed or not data:
            return
        if len(self._input) + len(data) > MAX_PENDING_INPUT:
            log.warning("terminal %s: input dropped, %d bytes not taken", self.pid, len(data))
            return
        queued = bool(self._input)
        self._input += data
        if not queued:
            self._writable()

    def _writable(self) -> None:
        proc = self._proc
        assert self._loop is not None and proc is not None
        try:
            written = os.write(proc.fd, self._input) if not proc.closed else len(self._input)
        except BlockingIOError:
            written = 0
        except OSError:
            written = len(self._input)  # the other end is gone: nothing will take it
        del self._input[:written]
        if self._input:
            self._loop.add_writer(proc.fd, self._writable)
        elif not proc.closed:
            self._loop.remove_writer(proc.fd)

    def resize(self, cols: int, rows: int) -> None:
        """Set the pty's size; the kernel sends the foreground job SIGWINCH."""
        self._size = (rows, cols)
        proc = self._proc
        if proc is not None and not proc.closed:
            with contextlib.suppress(OSError):
                proc.setwinsize(rows, cols)

    # -- stopping -------------------------------------------------------------------------

    async def kill(self, grace: float, *, quiet: bool = True) -> None:
        """SIGHUP every process group of the terminal's session, then SIGKILL whatever is left
        after `grace` seconds. `quiet`: `done` is never told after this (the terminal is
        gone); otherwise it is, once the output drained. Safe to call more than once."""
        if quiet:
            self._told = True
        proc = self._proc
        if proc is None:
            return
        if self._status is not None and self._eof:
            # Reaped, and nothing holds the pty: its session is gone, and its number may be
            # another process's by now.
            self._close_fd()
            return
        sid = int(proc.pid)
        deadline = time.monotonic() + grace
        signal_session(sid, signal.SIGHUP)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._exited.wait(), grace)
        if session_groups(sid):
            await asyncio.sleep(max(0.0, deadline - time.monotonic()))
            signal_session(sid, signal.SIGKILL)
            # Killed is not yet gone: each is waited for on its own pidfd, so whoever stops a
            # terminal finds none of its processes left.
            await all_exited(session_members(sid), grace)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._exited.wait(), grace)
        if quiet:
            self._close_fd()


def session_members(sid: int) -> dict[int, int]:
    """The live (not zombie) processes of session `sid`: pid -> process group."""
    members: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...: comm may hold anything but its last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == sid:
            members[int(entry.name)] = int(fields[2])
    return members


def session_groups(sid: int) -> set[int]:
    """The process groups of the live (not zombie) processes of session `sid`."""
    return set(session_members(sid).values())


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def all_exited(pids: Iterable[int], timeout: float) -> None:
    """Wait until each of `pids` has exited (its pidfd readable), `timeout` seconds at most."""
    loop = asyncio.get_running_loop()
    waiting: list[tuple[int, asyncio.Future[None]]] = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue  # gone already
        exited: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, _settle, exited)
        waiting.append((fd, exited))
    try:
        if waiting:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(f for _, f in waiting)), timeout)
    finally:
        for fd, _ in waiting:
            loop.remove_reader(fd)
            os.close(fd)


def signal_session(sid: int, sig: int) -> None:
    """Send `sig` to every process group of session `sid` (the leader's own included)."""
    for group in session_groups(sid) | {sid}:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)
