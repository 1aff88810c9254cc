"""The env file: read under the environment (which wins), written once, 0600, with the
settings the server was given, and read back as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ahpsite import env as env_module
from tests.support.server import REPO

READ = "from django.conf import settings; print(settings.AHPD_PORT, settings.AHPD_HOST_NAME)"


def settings_read(env_file: Path, **given: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AHPD_", "DJANGO_"))}
    env.pop("DATABASE_URL", None)
    env.update(
        {
            "AHPD_ENV_FILE": str(env_file),
            "AHPD_DATA_DIR": str(env_file.parent / "data"),
            "DJANGO_SETTINGS_MODULE": "ahpsite.settings",
            **given,
        }
    )
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {READ}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_file_is_read_and_the_environment_wins_over_it(tmp_path):
    env_file = tmp_path / "ahpd.env"
    env_file.write_text("AHPD_PORT=4100\nAHPD_HOST_NAME='from the file'\n")
    assert settings_read(env_file).stdout.split() == ["4100", "from", "the", "file"]
    assert settings_read(env_file, AHPD_PORT="4200").stdout.split()[0] == "4200"
    assert settings_read(Path(os.devnull)).stdout.split()[0] == "9187"


def test_a_bad_value_in_the_file_is_named_as_one_in_the_environment(tmp_path):
    env_file = tmp_path / "ahpd.env"
    env_file.write_text("AHPD_PORT=lots\n")
    done = settings_read(env_file)
    assert "AHPD_PORT must be an integer, got 'lots'" in done.stderr
    done = settings_read(tmp_path)
    assert "AHPD_ENV_FILE must name a file" in done.stderr


def test_what_the_server_was_given_is_written_once_0600_and_read_back_as_given(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("AHPD_HOST_NAME", "it's a \\ name #1")
    monkeypatch.setenv("AHPD_DATA_DIR", "relative/data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(env_module.READ, "AHPD_HOST_NAME", None)
    monkeypatch.setitem(env_module.READ, "AHPD_DATA_DIR", None)
    path = tmp_path / "kept.env"
    assert env_module.write_env_file(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert not env_module.write_env_file(path)  # once: a later start keeps the first's
    monkeypatch.delenv("AHPD_HOST_NAME")
    monkeypatch.delenv("AHPD_DATA_DIR")
    monkeypatch.setenv("AHPD_ENV_FILE", str(path))
    try:
        env_module.load_env_file(tmp_path / "unused")
        assert env_module.env_str("AHPD_HOST_NAME") == "it's a \\ name #1"
        # A relative path is kept absolute: a command run from elsewhere reads the same one.
        assert env_module.env_str("AHPD_DATA_DIR") == str(tmp_path / "relative/data")
    finally:
        monkeypatch.setenv("AHPD_ENV_FILE", os.devnull)
        env_module.load_env_file(tmp_path / "unused")
