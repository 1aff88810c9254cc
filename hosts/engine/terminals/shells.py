"""Which shell a terminal runs, how it is started, in which folder, with which environment.

The shell is root config's `defaultShell` where that names an executable here, else the login
shell ($SHELL, else /bin/sh). bash and zsh are started with ahpd's shell integration (shell/),
which prints the OSC 133 and OSC 7 marks the terminal reads its commands and folder from; any
other shell runs as it is, and its terminal never says it detects commands.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

log = logging.getLogger("ahpd.terminals")

SHELL_DIR = Path(__file__).resolve().parent / "shell"
BASH_RC = SHELL_DIR / "bash-integration.sh"
ZSH_DIR = SHELL_DIR / "zsh"

#: What a shell is given of the server's own environment, less the server's own settings
#: (its tokens and keys among them), which are the server's and no shell's business.
_SERVER_PREFIXES = ("AHPD_", "DJANGO_")
#: All a sandboxed shell is given of the server's environment (its database and broker URLs,
#: its API keys, are not the person's).
_PLAIN = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM"})


def _given(name: str, plain: bool) -> bool:
    if plain:
        return name in _PLAIN or name.startswith("LC_")
    return not name.startswith(_SERVER_PREFIXES)


def login_shell() -> str:
    return os.environ.get("SHELL") or "/bin/sh"


def _executable(path: str) -> bool:
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def chosen_shell(configured: Any) -> str:
    """The shell to run: `configured` (root config's defaultShell) where it is one here."""
    if isinstance(configured, str) and configured:
        if _executable(configured):
            return configured
        log.warning("defaultShell %r is no executable here; the login shell runs", configured)
    return login_shell()


def shell_command(shell: str, env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The argv that starts `shell` with ahpd's integration, and what it adds to `env`."""
    name = os.path.basename(shell)
    if name == "bash":
        return [shell, "--rcfile", str(BASH_RC), "-i"], {}
    if name == "zsh":
        # zsh reads its .zshrc from ZDOTDIR: ahpd's, which reads the person's own from here.
        user = env.get("ZDOTDIR") or env.get("HOME") or ""
        return [shell, "-i"], {"ZDOTDIR": str(ZSH_DIR), "AHPD_USER_ZDOTDIR": user}
    return [shell], {}


def shell_environment(
    shell_env: Mapping[str, str | None], *, plain: bool = False
) -> dict[str, str]:
    """The server's environment less its own settings (`plain`, as in a sandbox: only what a
    shell needs to run and draw, none of the server's variables), with AHPD_SHELL_ENV laid over
    it (a name set to null is taken away); a TERM where none is set, since clients draw xterm."""
    env = {k: v for k, v in os.environ.items() if _given(k, plain)}
    env.setdefault("TERM", "xterm-256color")
    for name, value in shell_env.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def folder_of(uri: Any) -> Path | None:
    """The folder a createTerminal's `cwd` names (a file: URI), if it is one here."""
    if not isinstance(uri, str):
        return None
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    path = Path(unquote(parts.path))
    # One the server may not enter would fail in the child, after the fork.
    usable = path.is_absolute() and path.is_dir() and os.access(path, os.X_OK)
    return path if usable else None
