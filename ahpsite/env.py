"""Typed readers for the environment: every knob comes from here, each bad value named."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path


class EnvError(Exception):
    """A variable holds a value the server cannot start with; the message names it."""


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    raw = os.environ.get(name)
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
    raw = os.environ.get(name)
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
    raw = os.environ.get(name)
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
    raw = os.environ.get(name)
    path = Path(raw).expanduser() if raw else default
    if path.exists() and not path.is_dir():
        raise EnvError(f"{name} must name a directory, and {str(path)!r} is not one")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvError(f"{name}: cannot create {str(path)!r}: {exc.strerror}") from None
    return path.resolve()


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


def create_private(path: Path) -> None:
    """Create `path` empty and 0600 unless it exists (a file SQLite then opens, and whose
    mode it gives the -wal and -shm it makes beside it)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError as exc:
        raise EnvError(f"cannot create {str(path)!r}: {exc.strerror}") from None
