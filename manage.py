#!/usr/bin/env python
"""Django's command-line utility, which also refuses a bad environment in one line."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ahpsite.settings")
    from ahpsite.env import EnvError

    try:
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)
    except EnvError as exc:
        print(f"ahpd: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
