"""`python manage.py serve`: the AHP host on AHPD_HOST:AHPD_PORT, over daphne."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ahpsite.env import EnvError


class Command(BaseCommand):
    help = "Serve the AHP WebSocket (and the HTTP API and admin) on AHPD_HOST:AHPD_PORT."

    def handle(self, *args: Any, **options: Any) -> None:
        from hosts.backends.config import ConfigError
        from hosts.edge import door
        from hosts.edge.daphne_server import build_server
        from hosts.edge.runtime import configured_agents

        try:
            token = door.connection_token()
            configured_agents()  # refuse a bad agents file now, not at the first connection
        except (EnvError, ConfigError) as exc:
            raise CommandError(str(exc)) from None

        from ahpsite.asgi import application
        from hosts.edge.runtime import get_host, shutdown

        host, port = settings.AHPD_HOST, settings.AHPD_PORT

        def ready(server: Any) -> None:
            from twisted.internet import reactor
            from twisted.internet.defer import Deferred

            # Open the engine as the loop starts, so root config is read before anyone asks,
            # and let it write what it owes before the reactor stops.
            reactor.callWhenRunning(lambda: asyncio.ensure_future(get_host()))
            reactor.addSystemEventTrigger(
                "before", "shutdown", lambda: Deferred.fromFuture(asyncio.ensure_future(shutdown()))
            )
            if not server.listening_addresses:
                return
            bound_host, bound_port = server.listening_addresses[0][:2]
            shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
            url = f"ws://{shown}:{bound_port}/"
            if token:
                url += f"?tkn={token}"
            self.stdout.write(f"ahpd: serving AHP on {url}")
            self.stdout.write(
                f'ahpd: VS Code: "chat.remoteAgentHosts": [{{"address": "{shown}:{bound_port}", '
                f'"name": "ahpd"' + (f', "connectionToken": "{token}"' if token else "") + "}]"
            )
            self.stdout.write(f"ahpd: data in {settings.AHPD_DATA_DIR}")
            sys.stdout.flush()

        build_server(application, host, port, ready).run()
