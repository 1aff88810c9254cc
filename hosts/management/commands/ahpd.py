"""`python manage.py ahpd ...`: the operator's command line.

    ahpd user add <id> [--role R]... [--email E] [--team T] [--project P]
    ahpd user token <id> [--name N]     the secret once, and the URL the running server has
    ahpd user rm <id> | user list | user role <id> <role>...
    ahpd token list [<id>] [--revoked] | token revoke <id> <name>
    ahpd team add <slug> [--name N] | team rm <slug> [--cascade] | team list
    ahpd project add <slug> --team <slug> [--name N] | project rm <slug> | project list
    ahpd role list
    ahpd status                          the running server's own facts
    ahpd sessions [--running] [--cancel <uri>]
    ahpd usage [<pool>]                  the pools charged, or one's day, week and month
    ahpd policy list | show <id> | set <id> <json> | rm <id>
                                         (usage/cli.py's, named by AHPD_COMMAND_NOUNS)
    ahpd automation list | show <id> | run <id> | enable <id> | disable <id>
                                         (automations/cli.py's: run, enable and disable
                                         ask the running server)

`--json` anywhere on the line prints JSON a script can rely on; `-h` after any noun or verb
says what it takes. The commands read the server's own settings (the environment, else the
env file `serve` wrote), so they act on its database and print its real URL; `status`,
`sessions` and what changes an automation ask the running server itself
(hosts/management/ahpd/server.py). Every refusal is one line, `ahpd: ...`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.module_loading import import_string

from hosts.management.ahpd import people, server_status, teams, tokens
from hosts.management.ahpd.checks import database_ready, leave_nothing_behind
from hosts.management.ahpd.verbs import JSON_HELP, Shown, rows
from hosts.store import ensure_builtin_roles


class Command(BaseCommand):
    help = (
        "The operator's command line: people, tokens, teams, projects and roles in the "
        "server's database; the running server's status and sessions."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help=JSON_HELP)
        nouns = parser.add_subparsers(dest="noun", required=True, metavar="NOUN", title="nouns")
        user = people.register(nouns)
        tokens.register(nouns, user)  # `user token` mints one, among the user noun's verbs
        teams.register(nouns)
        server_status.register(nouns)
        # The other apps' nouns (usage and policy, usage/cli.py), as the composition root
        # names them: hosts imports nothing of the apps beside it.
        for register in settings.AHPD_COMMAND_NOUNS:
            import_string(register)(nouns)

    def run_from_argv(self, argv: list[str]) -> None:
        try:
            super().run_from_argv(argv)
        except BaseException:
            # Refused (a CommandError said in one line, a usage error) or asked for --help:
            # what reading the settings made for it is not left behind.
            leave_nothing_behind()
            raise

    def execute(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute(*args, **options)
        except CommandError as error:
            if not self._called_from_command_line:
                raise
            # One line, as the server's own refusals to start are: no class name, no trace.
            self.stderr.write(f"ahpd: {error}")
            sys.exit(error.returncode)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["database"]:
            database_ready()
            ensure_builtin_roles()
        answer = options["run"](options)
        shown = answer if isinstance(answer, Shown) else Shown(answer)
        if options["json"]:
            self.stdout.write(json.dumps(shown.data))
            return
        for line in shown.lines or rows(shown.data):
            self.stdout.write(line)
        for note in shown.notes:
            self.stderr.write(note)
