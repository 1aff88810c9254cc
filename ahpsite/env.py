"""Typed readers for the configuration: every knob comes from here, each bad value named.

A knob is read from the environment, else from the env file (`AHPD_ENV_FILE`, else `.env` at
the checkout's root; python-dotenv's format), so the server and every management command run
in any shell of the checkout read the same settings. The environment wins over the file.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from dotenv import dotenv_values


class EnvError(Exception):
    """A variable holds a value the server cannot start with; the message names it."""


#: What the env file says, under the environment; read once by `load_env_file`.
_FILE: dict[str, str] = {}
#: Every variable a setting was read from, in the order read: what `write_env_file` keeps.
READ: dict[str, None] = {}


def load_env_file(default: Path) -> Path:
    """Read the env file (`AHPD_ENV_FILE`, else `default`) under the environment; a file that
    does not exist says nothing (the server writes it at its first start). Its path."""
    raw = os.environ.get("AHPD_ENV_FILE")
    path = (Path(raw).expanduser() if raw else default).absolute()
    _FILE.clear()
    if path == Path(os.devnull):
        return path  # no file: the environment alone
    if path.is_file():
        try:
            values = dotenv_values(path)
        except OSError as exc:
            raise EnvError(f"AHPD_ENV_FILE: cannot read {str(path)!r}: {exc.strerror}") from None
        _FILE.update({key: value for key, value in values.items() if value is not None})
    elif path.exists():
        raise EnvError(f"AHPD_ENV_FILE must name a file, and {str(path)!r} is not one")
    return path


def _raw(name: str) -> str | None:
    READ[name] = None
    if name in os.environ:
        return os.environ[name]
    return _FILE.get(name)


def from_file() -> dict[str, str]:
    """The env file's settings that the environment does not override."""
    return {key: value for key, value in _FILE.items() if key not in os.environ}


def overridden() -> list[str]:
    """Settings the env file gives that the environment gives otherwise."""
    return [key for key, value in _FILE.items() if os.environ.get(key, value) != value]


#: Settings naming a path: written to the env file absolute, so any shell's cwd reads the same.
PATH_SETTINGS = (
    "AHPD_DATA_DIR",
    "AHPD_CONFIG",
    "AHPD_CONNECTION_TOKEN_FILE",
    "AHPD_PATHS",
    "AHPD_WIRE",
)


def write_env_file(path: Path) -> bool:
    """Write the settings this process was given in its environment to `path`, 0600 (a token
    or a database password may be among them), unless the file exists. Whether it wrote."""
    if path.exists():
        return False
    lines = [
        "# ahpd's settings, written at the server's first start with those it was given.",
        "# The server and every `manage.py` command of this checkout read them; a variable",
        "# set in the environment wins over the one here.",
    ]
    for name in READ:
        if name not in os.environ or name == "AHPD_ENV_FILE":
            continue
        value = os.environ[name]
        if name in PATH_SETTINGS and value:
            value = os.pathsep.join(
                str(Path(part).expanduser().absolute()) for part in value.split(os.pathsep)
            )
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        lines.append(f"{name}='{escaped}'")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, spare = tempfile.mkstemp(dir=path.parent, prefix=".env-")  # mkstemp's file is 0600
        with os.fdopen(fd, "w") as file:
            file.write("\n".join(lines) + "\n")
        try:
            os.link(spare, path)  # of two servers starting at once, one file wins whole
        except FileExistsError:
            return False
        finally:
            os.unlink(spare)
    except OSError as exc:
        raise EnvError(f"AHPD_ENV_FILE: cannot write {str(path)!r}: {exc.strerror}") from None
    return True


def env_str(name: str, default: str | None = None) -> str | None:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    raw = _raw(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise EnvError(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum or maximum is not None and value > maximum:
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
        raise EnvError(f"{name} must be {bounds}, got {value}")
    return value


def env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    """A number, fractions allowed (a test's sleep of a few seconds, in minutes)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise EnvError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or value < minimum:
        raise EnvError(f"{name} must be a finite number of at least {minimum:g}, got {raw!r}")
    return value


def env_choice(name: str, default: str, choices: Iterable[str]) -> str:
    """One of `choices`, given in any case."""
    raw = _raw(name)
    if raw is None or raw.strip() == "":
        return default
    allowed = tuple(choices)
    value = raw.strip().upper()
    if value not in allowed:
        raise EnvError(f"{name} must be one of {', '.join(allowed)}; got {raw!r}")
    return value


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_bool(name: str, default: bool = False) -> bool:
    raw = _raw(name)
    if raw is None or raw.strip() == "":
        return default
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise EnvError(f"{name} must be one of 1/0, true/false, yes/no, on/off; got {raw!r}")


def env_dir(name: str, default: Path) -> Path:
    """A directory, created if missing; refused if it exists and is not a directory."""
    return env_dir_made(name, default)[0]


def env_dir_made(name: str, default: Path) -> tuple[Path, bool]:
    """env_dir's directory, and whether it was made here (it was not there before)."""
    raw = _raw(name)
    path = Path(raw).expanduser() if raw else default
    if path.exists() and not path.is_dir():
        raise EnvError(f"{name} must name a directory, and {str(path)!r} is not one")
    made = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvError(f"{name}: cannot create {str(path)!r}: {exc.strerror}") from None
    return path.resolve(), made


def env_dirs(name: str, default: Path) -> list[Path]:
    """Directories that must exist, separated by the platform's path separator (`:`), each
    once, in the order given; refused naming the first that is not a directory."""
    raw = _raw(name)
    if not raw:
        return [default.resolve()]
    paths: list[Path] = []
    for part in raw.split(os.pathsep):
        if not part.strip():
            continue
        path = Path(part.strip()).expanduser().resolve()
        if not path.is_dir():
            raise EnvError(f"{name}: {part.strip()!r} is not a directory")
        if path not in paths:
            paths.append(path)
    if not paths:
        raise EnvError(f"{name} names no directory")
    return paths


def env_existing_paths(name: str) -> list[Path]:
    """Paths (files or directories) that must exist, `:`-separated; none when unset."""
    raw = _raw(name)
    paths: list[Path] = []
    for part in (raw or "").split(os.pathsep):
        if not part.strip():
            continue
        path = Path(part.strip()).expanduser()
        if not path.is_absolute() or not path.exists():
            raise EnvError(f"{name}: {part.strip()!r} is not an absolute path that exists")
        if path not in paths:
            paths.append(path)
    return paths


_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_shell_env(name: str) -> dict[str, str | None]:
    """A JSON object of shell variable names to text, or to null (take the name away)."""
    raw = _raw(name)
    if raw is None or raw.strip() == "":
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise EnvError(f"{name} must be a JSON object, got {raw!r}") from None
    if not isinstance(value, dict):
        raise EnvError(f"{name} must be a JSON object of variable names, got {raw!r}")
    for key, item in value.items():
        if not _SHELL_NAME.fullmatch(key):
            raise EnvError(f"{name}: {key} is not a shell variable name")
        if item is not None and not isinstance(item, str):
            raise EnvError(f"{name}: {key} must be text or null")
    return value


def env_url(name: str, schemes: tuple[str, ...]) -> str | None:
    raw = env_str(name)
    if raw is None:
        return None
    scheme = raw.partition("://")[0].lower()
    if "://" not in raw or scheme not in schemes:
        raise EnvError(
            f"{name} must be a URL starting with one of {', '.join(schemes)}; got {raw!r}"
        )
    return raw


def make_private(name: str, directory: Path, files: Iterable[str]) -> None:
    """`directory` 0700 and those of `files` in it that exist 0600: what the server keeps
    (database, tokens, keys) is read by no other user of the machine, whoever made it first."""
    try:
        directory.chmod(0o700)
        for file in files:
            path = directory / file
            if path.is_file():
                path.chmod(0o600)
    except OSError as exc:
        raise EnvError(f"{name}: cannot make {str(directory)!r} private: {exc.strerror}") from None


def create_private(path: Path) -> bool:
    """Create `path` empty and 0600 unless it exists (a file SQLite then opens, and whose
    mode it gives the -wal and -shm it makes beside it). Whether it was made here."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    except OSError as exc:
        raise EnvError(f"cannot create {str(path)!r}: {exc.strerror}") from None
    return True
