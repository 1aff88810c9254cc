"""The secret key a data directory keeps: made once, whole, by whichever process starts
first, when web, worker and beat start together."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.server import REPO

READ_KEY = "from django.conf import settings; print(settings.SECRET_KEY)"


def test_processes_starting_together_agree_on_one_key_kept_0600():
    with tempfile.TemporaryDirectory() as data:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AHPD_", "DJANGO_"))},
            "AHPD_DATA_DIR": data,
            "DJANGO_SETTINGS_MODULE": "ahpsite.settings",
        }
        env.pop("DATABASE_URL", None)
        starts = [
            subprocess.Popen(
                [sys.executable, "-c", f"import django; django.setup(); {READ_KEY}"],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(6)
        ]
        keys = {start.communicate(timeout=60)[0].strip() for start in starts}
        assert len(keys) == 1 and len(keys.pop()) > 40
        kept = Path(data) / "secret-key"
        assert kept.stat().st_mode & 0o777 == 0o600
        assert sorted(p.name for p in Path(data).iterdir() if "secret" in p.name) == ["secret-key"]
