"""`python manage.py serve`: the AHP host on AHPD_HOST:AHPD_PORT, over daphne."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DatabaseError

from ahpsite.env import EnvError, overridden, write_env_file


class Command(BaseCommand):
    """Each refusal to start is an EnvError: one line, `ahpd: ...`, and exit 2 (manage.py)."""

    help = "Serve the AHP WebSocket (and the HTTP API and admin) on AHPD_HOST:AHPD_PORT."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--wire",
            metavar="FILE",
            help="append every frame, both directions, to FILE as JSON lines (AHPD_WIRE)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from hosts.backends.config import ConfigError
        from hosts.backends.process import set_child_umask
        from hosts.backends.sandbox import SandboxError
        from hosts.edge import connection_token, control, wire_capture
        from hosts.edge.addresses import public_base, vscode_address, with_token
        from hosts.edge.daphne_server import build_server, reactor_loop
        from hosts.edge.preflight import listen_refusal, preflight
        from hosts.edge.runtime import configured_agents, sandbox_settings
        from hosts.management.ahpd.first_run import signing_in_lines

        # What the server writes from here on is its own alone; its agents keep the caller's.
        set_child_umask(os.umask(0o077))

        try:
            token = connection_token.connection_token()
            configured_agents()  # refuse a bad agents file now, not at the first connection
            sandbox = sandbox_settings()  # bubblewrap tried once, now
            wire = options.get("wire") or settings.AHPD_WIRE
            capture = wire_capture.start(Path(wire)) if wire else None
        except (ConfigError, SandboxError, wire_capture.WireCaptureError) as exc:
            raise EnvError(str(exc)) from None
        # The port, the database and the channel layer, before anything is started on them.
        preflight()
        self._settings_kept()
        self._usage_zone_said()

        from channels.routing import get_default_application
        from twisted.internet import reactor
        from twisted.internet.defer import Deferred

        from hosts.edge.node_lease import NodeLease
        from hosts.edge.runtime import (
            get_host,
            host_settings,
            serve_as_node,
            shared_layer,
            shutdown,
        )
        from hosts.store.nodes import NodeHeld

        # ASGI_APPLICATION (ahpsite/asgi.py): the project's, which hosts does not import.
        application = get_default_application()

        # This process as a node of its host (every serve on this database is one), its row
        # claimed before the engine reads which sessions are its own, and renewed once it
        # listens.
        node = NodeLease(host_settings().server_version, tuple(sorted(configured_agents())))
        try:
            reactor_loop().run_until_complete(node.claim())
        except NodeHeld as exc:
            raise EnvError(str(exc)) from None
        except DatabaseError as exc:
            raise EnvError(f"the store could not be read: {exc}") from None
        if not shared_layer():
            # The nodes of a host reach one another over a channel layer they share: one
            # alone in its process's memory reaches none.
            live = reactor_loop().run_until_complete(node.others())
            if live:
                reactor_loop().run_until_complete(node.stop())
                raise EnvError(
                    f"nodes {', '.join(live)} serve this database already, and this process "
                    "has no channel layer reaching them: set REDIS_URL as they have (several "
                    "nodes share sessions over it)"
                )
        serve_as_node(node.facts.node_id, node.facts.machine)
        # The engine reads the store (root config and every session it runs) on the loop
        # daphne will run, before the port opens: a client that connects once "serving" is
        # printed is let in at once, not held at its upgrade until that read is done.
        try:
            engine = reactor_loop().run_until_complete(get_host())
        except DatabaseError as exc:
            reactor_loop().run_until_complete(node.stop())
            raise EnvError(f"the store could not be read: {exc}") from None
        # Sessions another node took while this one's lease had lapsed are let go here.
        node.on_lapsed = engine.let_go_taken
        # Mirrors fed by a node gone are closed, their watchers sent to reconnect; its
        # automation runs are failed.
        node.on_renewed = engine.check_nodes
        # The sessions the other nodes run, listed here before a client can ask.
        reactor_loop().run_until_complete(engine.nodes.meet())

        async def stopped() -> None:
            await node.stop()
            await shutdown()

        # SIGTERM and SIGINT stop the engine first, while every socket and consumer is still
        # up (each client is sent its close frame and answers it), and then the reactor.
        # Twisted's own handlers would stop the reactor at once, and daphne would cancel every
        # consumer alongside the engine's stop.
        loop = reactor_loop()

        def stop_cleanly() -> None:
            async def stop() -> None:
                # A stopping server is no longer one the commands may reach.
                control.withdraw()
                try:
                    await stopped()
                finally:
                    reactor.stop()

            loop.create_task(stop())

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop_cleanly)
        # However else the reactor stops, its record goes first (a stopping server is no
        # longer one the commands may reach) and the engine writes what it owes.
        reactor.addSystemEventTrigger("before", "shutdown", control.withdraw)
        reactor.addSystemEventTrigger(
            "before", "shutdown", lambda: Deferred.fromFuture(asyncio.ensure_future(stopped()))
        )

        host, port = settings.AHPD_HOST, settings.AHPD_PORT

        def ready(server: Any) -> None:
            # Called once the port listens (daphne binds before calling it), the engine up.
            if not server.listening_addresses:
                return
            bound_host, bound_port = server.listening_addresses[0][:2]
            # Said once the reactor runs: daphne listens before it starts the reactor, which
            # only then takes SIGTERM (a stop) from the default (an exit, with no shutdown).
            reactor.callWhenRunning(announce, str(bound_host), int(bound_port))

        def announce(bound_host: str, bound_port: int) -> None:
            # On the loop once it runs (announce is called as the reactor starts it).
            asyncio.ensure_future(announced(bound_host, bound_port), loop=loop)

        async def announced(bound_host: str, bound_port: int) -> None:
            base = public_base(bound_host, bound_port)
            # Where it listens and its control token, for the commands of its deployment.
            control.publish(bound_host, bound_port, base)
            # Listed among the nodes with where it listens before it says it serves.
            await node.serve(bound_host, bound_port)
            self.stdout.write(f"ahpd: serving AHP on {with_token(base, token)}")
            for line in signing_in_lines(vscode_address(base), token):
                self.stdout.write(line)
            self.stdout.write(f"ahpd: data in {settings.AHPD_DATA_DIR}")
            if capture is not None:
                self.stdout.write(f"ahpd: every frame is written to {capture.path} (the wire)")
            if sandbox.mode == "bwrap":
                network = "network on" if sandbox.network else "no network"
                self.stdout.write(
                    f"ahpd: sandbox bwrap ({sandbox.version}, {network}): each person's "
                    "agents, commands and terminals run in a sandbox of their own"
                )
            else:
                self.stdout.write(
                    f"ahpd: sandbox off ({sandbox.reason}): agents run as the server's own "
                    "user; terminals and ! commands are a host-wide admin's alone"
                )
            sys.stdout.flush()

        server = build_server(application, host, port, ready, settings.AHPD_MAX_FRAME_BYTES)
        try:
            server.run()
        finally:
            control.withdraw()
            wire_capture.stop()
        if server.listen_failure is not None:
            # Taken since the preflight bound it: refused the same way, not exited 0.
            raise EnvError(listen_refusal(host, port, server.listen_failure))

    def _usage_zone_said(self) -> None:
        """A usage zone this host cannot read is not a refusal to start (seed 004): the
        system's own zone is used, and that is said here, once."""
        unread = settings.AHPD_USAGE_TIMEZONE_UNREAD
        if unread:
            system = datetime.now().astimezone().tzname() or "UTC"
            self.stdout.write(
                f"ahpd: AHPD_USAGE_TIMEZONE names no zone this host can read ({unread!r}): "
                f"usage days and weeks are cut in the system's zone ({system})"
            )

    def _settings_kept(self) -> None:
        """At the first start, keep the settings given in the env file, which the management
        commands of this checkout read; later, say which of its settings the environment
        overrides (a command run without them acts on the file's)."""
        path = settings.AHPD_ENV_FILE
        try:
            wrote = write_env_file(path)
        except EnvError as exc:  # a read-only checkout: serve all the same, and say so
            self.stdout.write(f"ahpd: {exc}; manage.py reads the environment alone")
            return
        if wrote:
            self.stdout.write(f"ahpd: settings kept in {path} (0600), read by manage.py here")
        elif changed := overridden():
            self.stdout.write(
                f"ahpd: the environment overrides {', '.join(changed)} of {path}: a manage.py "
                "command run without them acts on the file's settings"
            )
