"""Start the real server (`manage.py serve`) on a free port, in the configuration under test.

The configuration follows the test process's environment: with DATABASE_URL and REDIS_URL set
(as `.ci/run` sets them for its second pass) each server gets a database of its own on that
PostgreSQL and a channel-layer prefix of its own on that Redis; without them, the embedded
default (SQLite in a fresh data directory, the in-memory layer).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ahpsite.settings import SQLITE_NAME
from hosts.backends.sandbox import home_name

REPO = Path(__file__).resolve().parents[2]
URL_LINE = re.compile(r"serving AHP on (ws://\S+)")
TOKEN = "test-connection-token"


def configuration() -> str:
    return "postgres+redis" if os.environ.get("DATABASE_URL") else "embedded"


def _fresh_database(base_url: str, template: str | None = None) -> tuple[str, str]:
    """Create a database beside the one DATABASE_URL names, empty or a copy of `template`;
    its URL and name."""
    import psycopg

    name = f"ahpd_e2e_{secrets.token_hex(4)}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path="/" + name)), name


#: The migrated database every server of this test process starts from (a copy is made in
#: a blink, where migrating each fresh one took seconds of every server's start): a SQLite
#: file, or a PostgreSQL template database; made at the first start, gone at exit.
_TEMPLATE: dict[str, Any] = {}


def _migrate(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)


def _template_sqlite(env: dict[str, str]) -> Path:
    if "sqlite" not in _TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="ahpd-e2e-template-"))
        _migrate({**env, "AHPD_DATA_DIR": str(folder), "AHPD_ENV_FILE": str(folder / "s.env")})
        atexit.register(shutil.rmtree, folder, True)
        _TEMPLATE["sqlite"] = folder / SQLITE_NAME
    return Path(_TEMPLATE["sqlite"])


def _template_database(base_url: str, env: dict[str, str]) -> str:
    if "postgres" not in _TEMPLATE:
        url, name = _fresh_database(base_url)
        _migrate({**env, "DATABASE_URL": url})
        atexit.register(_drop_database, base_url, name)
        _TEMPLATE["postgres"] = name
    return str(_TEMPLATE["postgres"])


def _drop_database(base_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class ServerProcess:
    """One `manage.py serve`, restartable over the same data (directory or database)."""

    env_extra: dict[str, str] = field(default_factory=dict)
    token: str | None = TOKEN
    data_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ahpd-e2e-")))
    url: str = ""
    output: deque[str] = field(default_factory=lambda: deque(maxlen=2000))
    #: Told each time a line of output arrives.
    _said: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _proc: subprocess.Popen[str] | None = None
    _database: tuple[str, str] | None = None
    _prefix: str = field(default_factory=lambda: f"ahpd-e2e-{secrets.token_hex(4)}")
    _pump: threading.Thread | None = None
    #: Whether its database starts as a copy of the migrated one (False: empty, unmigrated
    #: until its first start migrates it).
    from_template: bool = True
    #: Its database is migrated (a restart does not migrate it again).
    _migrated: bool = False

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AHPD_", "PYTEST"))}
        env.update(
            {
                "AHPD_PORT": "0",
                "AHPD_HOST": "127.0.0.1",
                "AHPD_DATA_DIR": str(self.data_dir),
                # The settings the server keeps at its first start go here, not into the
                # checkout's .env, which a test must neither write nor read.
                "AHPD_ENV_FILE": str(self.env_file),
                "PYTHONUNBUFFERED": "1",
                "AHPD_REDIS_PREFIX": self._prefix,
                # Sessions work in temporary folders: the checkout and the temporary
                # directory are served (the data directory inside it never is).
                "AHPD_PATHS": os.pathsep.join((str(REPO), tempfile.gettempdir())),
            }
        )
        env.pop("DJANGO_SETTINGS_MODULE", None)
        if self.token is not None:
            env["AHPD_CONNECTION_TOKEN"] = self.token
        base = os.environ.get("DATABASE_URL")
        if base:
            if self._database is None:
                template = _template_database(base, env) if self.from_template else None
                self._database = _fresh_database(base, template)
                self._migrated = template is not None
            env["DATABASE_URL"] = self._database[0]
        env.update(self.env_extra)
        return env

    def shell(self, script: str) -> str:
        """Run `script` in `manage.py shell` against this server's database and settings; what
        it printed."""
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", script],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return done.stdout

    def shell_json(self, script: str) -> Any:
        """`shell`, the last line it printed read as JSON."""
        return json.loads(self.shell(script).strip().splitlines()[-1])

    @property
    def root_ref(self) -> str:
        """Who the deployment's own token signs in as."""
        return "root:" + (self.env().get("AHPD_HOST_NAME") or socket.gethostname() or "ahpd")

    def home_of(self, person: str) -> Path:
        """Where the sandbox keeps `person`'s home (made now, as the server would)."""
        path = self.data_dir / "homes" / home_name(person)
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    @property
    def env_file(self) -> Path:
        return self.data_dir / "settings.env"

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 0)

    @property
    def pid(self) -> int:
        """The serving process's id: the parent of every agent it runs."""
        assert self._proc is not None, "the server is not running"
        return self._proc.pid

    @property
    def base(self) -> str:
        """The ws:// URL without the token."""
        return self.url.split("?", 1)[0]

    def start(self, timeout: float = 60.0) -> ServerProcess:
        env = self.env()
        if not self._migrated:
            database = self.data_dir / SQLITE_NAME
            if self.from_template and "DATABASE_URL" not in env and not database.exists():
                shutil.copyfile(_template_sqlite(env), database)
            else:
                _migrate(env)
            self._migrated = True
        self._proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        found = threading.Event()

        def pump() -> None:
            assert self._proc is not None and self._proc.stdout is not None
            for line in self._proc.stdout:
                with self._said:
                    self.output.append(line.rstrip("\n"))
                    self._said.notify_all()
                match = URL_LINE.search(line)
                if match and not found.is_set():
                    self.url = match.group(1)
                    found.set()
            found.set()

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.05):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("server did not start:\n" + "\n".join(self.output))
        if not self.url:
            raise RuntimeError("server exited:\n" + "\n".join(self.output))
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(5)
        self._proc = None

    def terminate(self) -> None:
        """Send SIGTERM and return at once: the caller waits for what a clean stop does."""
        assert self._proc is not None
        self._proc.terminate()

    def wait_stopped(self, timeout: float = 30.0) -> int:
        """Wait for the server to exit, and for all it printed to be read; its exit status."""
        assert self._proc is not None
        code = self._proc.wait(timeout)
        self._proc = None
        if self._pump is not None:
            self._pump.join(timeout)
        return code

    def kill(self) -> None:
        """Stop the server the way a crash does: no shutdown, nothing written on the way out."""
        if self._proc is None:
            return
        self._proc.kill()
        self._proc.wait(10)
        self._proc = None

    def restart(self) -> ServerProcess:
        self.stop()
        return self.start()

    def close(self) -> None:
        """Stop and remove everything this server kept."""
        self.stop()
        if self._database is not None:
            _drop_database(os.environ["DATABASE_URL"], self._database[1])
            self._database = None
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def wait_output(self, found: Callable[[str], bool], timeout: float = 10.0) -> bool:
        """Whether a line `found` accepts is printed, waiting up to `timeout` for it (the
        server's output reaches here a moment after what it answered)."""
        with self._said:
            return self._said.wait_for(lambda: any(found(line) for line in self.output), timeout)

    def log_text(self) -> str:
        return "\n".join(self.output)
