"""What a running server tells the management commands of its deployment: where it listens,
and a control token its REST API takes as root.

`serve` writes `server.json` into the data directory once its port listens (the directory is
0700 and the file 0600: only the server's own user reads it) and removes it when it stops. A
command run in any shell with the same configuration reads it to print the URL clients
really reach (AHPD_PORT=0 picks a port only at start) and to ask the server what only its
process knows (connections, running turns) over `http://<bound address>/api/...`. The token
is made afresh at every start and lives nowhere else: the server's own memory and that file.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings

RECORD_NAME = "server.json"
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})


@dataclass(frozen=True)
class Running:
    """A serving server, as it wrote itself down."""

    pid: int
    #: The machine (or container) it runs on: its pid means something only there.
    machine: str
    #: The HTTP base of its REST API from this machine: `http://127.0.0.1:<port>/`.
    local: str
    #: The WebSocket base clients are told (AHPD_PUBLIC_URL, or the bound address).
    public: str
    #: The control token: `Authorization: Bearer <it>` on the REST API is root.
    control: str

    @property
    def api_base(self) -> str:
        """Its REST API's base as this process reaches it: `local` on its own machine; where
        the record was written by a server on another machine sharing the data directory
        (another node's container, `--scale web=3`), that machine by its name."""
        if self.machine == socket.gethostname():
            return self.local
        return self.local.replace("//127.0.0.1:", f"//{self.machine}:", 1)


#: This process's record, once it serves.
_published: Running | None = None


def record_path() -> Path:
    return Path(settings.AHPD_DATA_DIR) / RECORD_NAME


def local_base(bound_host: str, bound_port: int) -> str:
    """The HTTP URL of a server bound here, as reached from this machine."""
    host = "127.0.0.1" if bound_host in WILDCARDS else bound_host.strip("[]")
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{bound_port}/"


def publish(bound_host: str, bound_port: int, public: str) -> Running:
    """Write this server's record (whole, 0600) and keep its control token."""
    global _published
    record = Running(
        pid=os.getpid(),
        machine=socket.gethostname(),
        local=local_base(bound_host, bound_port),
        public=public,
        control=secrets.token_urlsafe(32),
    )
    path = record_path()
    fd, spare = tempfile.mkstemp(dir=path.parent, prefix=".server-")  # mkstemp's file is 0600
    with os.fdopen(fd, "w") as file:
        json.dump(asdict(record), file)
    os.replace(spare, path)
    _published = record
    return record


def withdraw() -> None:
    """Remove this server's record, if it is still this server's."""
    global _published
    if _published is None:
        return
    current = read_record()
    if current is not None and current.pid == _published.pid:
        record_path().unlink(missing_ok=True)
    _published = None


def published() -> Running | None:
    """This process's own record: set only in a serving server."""
    return _published


def read_record() -> Running | None:
    """The record in the data directory, whatever state its server is in; None for none."""
    try:
        data = json.loads(record_path().read_text())
        return Running(**{key: data[key] for key in Running.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running() -> Running | None:
    """The server serving this data directory, or None when its record is missing or its
    process is gone (one that died without removing it: killed, or the machine stopped)."""
    if _published is not None:
        return _published
    record = read_record()
    if record is None or gone(record.machine, record.pid):
        return None
    return record


def pid_space() -> str:
    """Which processes this one's pid is counted among: its pid namespace (Linux), "" where
    that cannot be read."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def gone(machine: str, pid: int, space: str | None = None) -> bool:
    """Whether a process written down as `pid` on `machine` (among the pids of `space`, where
    said) is known to be gone: on this machine, among this process's pids, no process has that
    pid (elsewhere nothing can be known from here: a container sharing the machine's name
    counts pids of its own)."""
    if machine != socket.gethostname():
        return False
    if space is not None and space != pid_space():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    return False


def admits(token: str) -> bool:
    """Whether `token` is this serving process's control token."""
    return _published is not None and hmac.compare_digest(
        token.encode(), _published.control.encode()
    )
