"""The suite's settings: ahpd's own, read from the test run's environment alone, never from
the checkout's .env (which `make run` writes); each server a test starts has an env file of
its own (tests/support/server.py)."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("AHPD_ENV_FILE", os.devnull)
# In-process engines (tests/api) make sessions in pytest's temporary folders: the checkout
# and the temporary directory are served, as for every server a test starts.
os.environ.setdefault(
    "AHPD_PATHS", os.pathsep.join((str(Path(__file__).resolve().parents[1]), tempfile.gettempdir()))
)

from ahpsite.settings import *  # noqa: E402, F403

if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    # A file, not Django's in-memory test database: that one shares a cache between the
    # connections of an in-process engine's threads, where a reader meets "database table is
    # locked" at once instead of waiting, as the server's own WAL file never makes it.
    # Its folder goes with the run, the WAL's side files included.
    _folder = tempfile.mkdtemp(prefix="ahpd-test-db-")
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
    DATABASES["default"]["TEST"] = {"NAME": str(Path(_folder) / "test.sqlite3")}  # noqa: F405
else:
    # A test database of this run's own: two runs on one PostgreSQL (a person's beside CI's)
    # would otherwise share `test_<name>`, each dropping and making it under the other.
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"  # noqa: F405
    }
