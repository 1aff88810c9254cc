"""The suite's settings: ahpd's own, read from the test run's environment alone, never from
the checkout's .env (which `make run` writes); each server a test starts has an env file of
its own (tests/support/server.py)."""

import os
import tempfile
from pathlib import Path

os.environ.setdefault("AHPD_ENV_FILE", os.devnull)
# In-process engines (tests/api) make sessions in pytest's temporary folders: the checkout
# and the temporary directory are served, as for every server a test starts.
os.environ.setdefault(
    "AHPD_PATHS", os.pathsep.join((str(Path(__file__).resolve().parents[1]), tempfile.gettempdir()))
)

from ahpsite.settings import *  # noqa: E402, F403
