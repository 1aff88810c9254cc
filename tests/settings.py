"""The suite's settings: ahpd's own, read from the test run's environment alone, never from
the checkout's .env (which `make run` writes); each server a test starts has an env file of
its own (tests/support/server.py)."""

import os

os.environ.setdefault("AHPD_ENV_FILE", os.devnull)

from ahpsite.settings import *  # noqa: E402, F403
