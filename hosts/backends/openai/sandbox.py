"""What the model's tool calls do: files and commands inside the chat's working folders.

Paths go through the folder fence, once when a call is checked (before anybody is asked about
it) and again when it runs, because the file system may have changed while a person decided.
Commands run in the first folder, in a process group of their own, with a plain environment, a
time limit and a cap on the output kept.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from stat import S_IMODE, S_ISDIR, S_ISREG
from typing import Any

from hosts.backends.fence import Fence
from hosts.backends.fence_walk import (
    NotRegular,
    Outside,
    Place,
    entries,
    kind_of,
    read_regular,
    replace,
    write_all,
)
from hosts.backends.process import host_env, start_command, stop_group
from hosts.backends.sandbox import Jail

from .tools import Tool, ToolError, short, string_argument

#: A shell command is killed after this long, so a hung command cannot hold the turn forever.
COMMAND_TIMEOUT_S = 120.0
#: Characters of command output, and bytes of a file, handed back to the model: its context is
#: small and a runaway command must not fill the host's memory.
OUTPUT_CAP = 32_000
READ_CAP = 256_000
LIST_CAP = 500

#: Variables a command inherits from the host. Everything else (the host's own secrets and
#: API keys) stays out of reach of commands a model wrote.
COMMAND_ENV_KEYS = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "SHELL")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a tool did: a line for the person, its output, and what the model is told."""

    message: str
    output: str
    for_model: str
    success: bool = True
    error: str | None = None


class Sandbox:
    """The tools' actions for one chat, fenced to its working folders."""

    def __init__(self, fence: Fence, jail: Jail | None = None) -> None:
        self.fence = fence
        #: Where commands run: the session owner's sandbox (None: as the server's user).
        self._jail = jail

    def prepare(self, tool: Tool, args: Mapping[str, Any]) -> Callable[[], Awaitable[Outcome]]:
        """Check a call's arguments and return the action that runs it."""
        if tool.name == "run_command":
            command = string_argument(args, "command")
            if not command.strip():
                raise ToolError("The command is empty.")
            cwd = self._folder()
            return lambda: self._run_command(command, cwd)
        raw = string_argument(args, "path", default="." if tool.name == "list_directory" else None)
        self._resolve(raw)
        if tool.name == "read_file":
            return lambda: asyncio.to_thread(self._read_file, raw)
        if tool.name == "list_directory":
            return lambda: asyncio.to_thread(self._list_directory, raw)
        content = string_argument(args, "content")
        return lambda: asyncio.to_thread(self._write_file, raw, content)

    def _folder(self) -> Path:
        folder = self.fence.first
        if folder is None:
            raise ToolError("This chat has no working folder.")
        return folder

    def _resolve(self, raw: str) -> Path:
        """The path a call names, only if it lies inside a working folder (a check; the work
        walks it again, `_place`)."""
        base = self._folder()
        if not raw.strip() or "\0" in raw:
            raise ToolError(f"{raw!r} is not a usable path.")
        target = self.fence.admit(raw)
        if target is None:
            raise ToolError(
                f"{raw} is outside the working folder {base}; only paths inside it may be used."
            )
        return target

    @contextmanager
    def _place(self, raw: str, *, making: bool = False) -> Iterator[Place]:
        """Where a call's path leads, walked inside the folders and held while it is worked
        on, with what goes wrong on the way said to the model."""
        self._resolve(raw)
        try:
            with self.fence.place(raw, making=(lambda real: None) if making else None) as place:
                yield place
        except Outside:
            raise ToolError(
                f"{raw} is outside the working folder {self._folder()}; only paths inside it "
                "may be used."
            ) from None
        except NotRegular as error:
            raise ToolError(f"{raw} is {error.kind}; only regular files are used.") from None
        except FileNotFoundError:
            raise ToolError(f"{raw} does not exist.") from None
        except NotADirectoryError:
            raise ToolError(f"{raw} is not a folder.") from None
        except IsADirectoryError:
            raise ToolError(f"{raw} is a folder; use list_directory.") from None

    def _read_file(self, raw: str) -> Outcome:
        with self._place(raw) as place:
            data = read_regular(place, READ_CAP + 1)
        text = data[:READ_CAP].decode("utf-8", errors="replace")
        if len(data) > READ_CAP:
            text += f"\n[... cut after {READ_CAP} bytes]"
        return Outcome(f"Read {self.fence.shown(place.real)}", text, text)

    def _list_directory(self, raw: str) -> Outcome:
        with self._place(raw) as place:
            if place.found is None or not S_ISDIR(place.found.st_mode):
                raise ToolError(f"{raw} is not a folder.")
            found = entries(place, self.fence.holds)
        names = [name + ("/" if is_dir else "") for name, is_dir in found]
        listing = "\n".join(names[:LIST_CAP])
        if len(names) > LIST_CAP:
            listing += f"\n[... and {len(names) - LIST_CAP} more]"
        shown = self.fence.shown(place.real)
        return Outcome(f"Listed {shown} ({len(names)} entries)", listing, listing or "(empty)")

    def _write_file(self, raw: str, content: str) -> Outcome:
        data = content.encode("utf-8")

        def fill(descriptor: int) -> int:
            write_all(descriptor, data, 0)
            return len(data)

        with self._place(raw, making=True) as place:
            was = place.found
            if was is not None and S_ISDIR(was.st_mode):
                raise ToolError(f"{raw} is a folder; only files are written.")
            if was is not None and not S_ISREG(was.st_mode):
                raise NotRegular(kind_of(was.st_mode), place.real)
            replace(place, fill, S_IMODE(was.st_mode) if was is not None else 0o644)
        message = f"Wrote {len(data)} bytes to {self.fence.shown(place.real)}"
        return Outcome(message, "", message)

    async def _run_command(self, command: str, cwd: Path) -> Outcome:
        env = {**host_env(COMMAND_ENV_KEYS), "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}
        process = await start_command(["/bin/sh", "-c", command], cwd=cwd, env=env, jail=self._jail)
        output = bytearray()
        cut = False

        async def collect() -> None:
            nonlocal cut
            assert process.stdout is not None
            while chunk := await process.stdout.read(65536):
                room = OUTPUT_CAP - len(output)
                output.extend(chunk[: max(room, 0)])
                cut = cut or len(chunk) > room
            await process.wait()

        timed_out = False
        try:
            await asyncio.wait_for(collect(), COMMAND_TIMEOUT_S)
        except TimeoutError:
            timed_out = True
        finally:
            # A timeout or a cancel kills whatever the shell started, too.
            await stop_group(process, (signal.SIGKILL,))

        text = output.decode("utf-8", errors="replace")
        if cut:
            text += f"\n[... output cut after {OUTPUT_CAP} bytes]"
        if timed_out:
            error = f"timed out after {COMMAND_TIMEOUT_S:g} s and was killed"
        elif process.returncode:
            error = f"exited with code {process.returncode}"
        else:
            error = None
        status = error or "exited with code 0"
        return Outcome(
            message=f"Ran {short(command)}: {status}",
            output=text,
            for_model=f"The command {status}.\n{text}",
            success=error is None,
            error=error,
        )
