"""What `serve` makes sure of before it serves: that it can listen, and that its database and
channel layer answer and are ready. Each refusal is one line naming the variable to blame
(EnvError, which manage.py prints as `ahpd: ...` and exits 2), never a server that starts
and fails at its first client, nor one that exits 0.
"""

from __future__ import annotations

import errno
import socket
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from ahpsite.env import EnvError


def shown_url(url: str) -> str:
    """The URL with its password (if any) left out, to be printed."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}"))


def _reason(exc: BaseException) -> str:
    """The last clause of an error's first line: 'Connection refused', not the driver's
    whole account of where it tried."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return first.rsplit(": ", 1)[-1].strip() or first


def listen_refusal(host: str, port: int, error: BaseException | None) -> str:
    """Why the server cannot listen on host:port, naming the variable to change."""
    number = getattr(error, "errno", None)
    if number == errno.EADDRINUSE:
        return f"port {port} on {host} is in use (AHPD_PORT)"
    if number == errno.EACCES:
        return f"port {port} on {host} needs privileges this process lacks (AHPD_PORT)"
    reason = getattr(error, "strerror", None) or (str(error) if error else "unknown error")
    if number == errno.EADDRNOTAVAIL or isinstance(error, socket.gaierror):
        return f"cannot listen on {host}: {reason} (AHPD_HOST)"
    return f"cannot listen on {host}:{port}: {reason} (AHPD_HOST, AHPD_PORT)"


def check_listen(host: str, port: int) -> None:
    """Bind the address as the server will (SO_REUSEADDR, as Twisted does) and let it go.

    A port taken between here and the server's own bind is caught there too (serve.py).
    """
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((address, port))
    except OSError as exc:
        raise EnvError(listen_refusal(host, port, exc)) from None


def _database_named() -> tuple[str, str]:
    """The database as printed, and the variable that chose it."""
    if settings.DATABASE_URL:
        return shown_url(str(settings.DATABASE_URL)), "DATABASE_URL"
    return str(settings.DATABASES["default"]["NAME"]), "AHPD_DATA_DIR"


def check_database() -> None:
    """The database answers, and every migration this code has is applied to it."""
    from django.db import DatabaseError, connection
    from django.db.migrations.executor import MigrationExecutor

    shown, variable = _database_named()
    try:
        connection.ensure_connection()
    except DatabaseError as exc:
        raise EnvError(f"{variable}: cannot connect to {shown}: {_reason(exc)}") from None
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        raise EnvError(f"{variable}: cannot read {shown}: {_reason(exc)}") from None
    if pending:
        raise EnvError(
            f"the database at {shown} ({variable}) is not migrated: run manage.py migrate"
        )


def check_redis() -> None:
    """The channel layer's Redis answers (when there is one)."""
    url = settings.REDIS_URL
    if not url:
        return
    import redis

    client = redis.Redis.from_url(str(url), socket_connect_timeout=5, socket_timeout=5)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        raise EnvError(f"REDIS_URL: cannot connect to {shown_url(str(url))}: {exc}") from None
    finally:
        client.close()


def preflight() -> None:
    """Everything above, cheapest first."""
    check_listen(str(settings.AHPD_HOST), int(settings.AHPD_PORT))
    check_database()
    check_redis()
