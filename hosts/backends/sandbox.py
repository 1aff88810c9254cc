"""The sandbox every process started on a person's behalf runs in: bubblewrap (`bwrap`).

An agent, a command a model wrote, a `!` command, a person's terminal and the host's own git run
for a session are started inside one, never as the server itself. Inside:

- the system read-only (`/usr`, `/bin`, `/lib*`, the parts of `/etc` programs need);
- the working folders read-write, and nothing else of the served folders;
- a home of the person's own (kept by the host under the data directory, so an agent's
  settings and sign-ins for that person last, and no other person's process sees them);
- a private `/tmp`, a `/proc` of its own PID namespace (the server and other people's processes
  are neither seen nor signalled), no capabilities, and death with the server (`kill -9`
  included: bubblewrap's `--die-with-parent`, and the PID namespace dies with its first
  process);
- what an agent needs to start, read-only, wherever the operator installed it (its command, its
  interpreter, the paths its configuration names), and the operator's extra read-only paths.

Never inside, even where a bound folder holds them: the data directory, the env file, the token
file (each hidden under an empty mount). The server's checkout is not bound unless it is a
working folder itself; a virtualenv an agent runs from is, read-only.

Every process is also started as the leader of a session of its own (the spawner's setsid, or
the pty's): it has no controlling terminal of the host's to push input into (TIOCSTI).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

log = logging.getLogger("ahpd.sandbox")

Mode = Literal["bwrap", "off"]

#: The system, bound read-only where it exists.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: What of /etc programs read: names, addresses, certificates, the linker's cache, locales and
#: shells' own start files. Not /etc/shadow, not the host's keys, not its services' settings.
ETC_ENTRIES = (
    "passwd",
    "group",
    "hosts",
    "hostname",
    "resolv.conf",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "services",
    "protocols",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "locale.conf",
    "default",
    "mime.types",
    "profile",
    "profile.d",
    "bash.bashrc",
    "inputrc",
    "terminfo",
    "zsh",
    "zshrc",
    "zshenv",
    "zprofile",
    "zlogin",
    "shells",
    "environment",
    "os-release",
    "debian_version",
    "vim",
    "nanorc",
    "manpath.config",
    "magic",
    "mailcap",
)
#: Where a person's home is inside their sandbox.
HOMES_INSIDE = Path("/home")
#: The person's home folder names: what a person's id may be written as in a file name.
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class SandboxError(RuntimeError):
    """The sandbox was asked for and cannot start here; the message says why."""


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """How people's processes are started (AHPD_SANDBOX, AHPD_SANDBOX_NETWORK,
    AHPD_SANDBOX_PATHS). `mode` is what was decided at start (`decide`), never "auto"."""

    mode: Mode = "off"
    #: False cuts the network inside (AHPD_SANDBOX_NETWORK=none).
    network: bool = True
    #: Bound read-only in every sandbox besides the system (a toolchain under /opt, say).
    read_only: tuple[Path, ...] = ()
    #: Never inside, wherever they lie: the data directory, the env file, token files.
    hidden: tuple[Path, ...] = ()
    #: Where each person's home is kept on the host (None: no homes are kept).
    homes: Path | None = None
    #: The server's own checkout: bound only where it is a working folder itself.
    checkout: Path | None = None
    #: The bubblewrap program.
    bwrap: str = "bwrap"
    #: What bubblewrap said of itself at start (for the start line and /api/status).
    version: str = ""
    #: Why the sandbox is off, when it is (for the start line and /api/status).
    reason: str = ""


def probe(bwrap: str = "bwrap") -> tuple[bool, str]:
    """Whether bubblewrap starts a sandbox here (user namespaces allowed, /proc mountable):
    (True, its version) or (False, why not). Run once, at start."""
    program = shutil.which(bwrap)
    if program is None:
        return False, f"{bwrap} is not installed (Debian: apt-get install bubblewrap)"
    argv = [program, *_base_arguments(network=False), "--", "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{bwrap} did not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return False, f"{bwrap} cannot make a sandbox here: {said[-1] if said else done.returncode}"
    try:
        version = subprocess.run(
            [program, "--version"], capture_output=True, timeout=10, check=False, text=True
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        version = "bubblewrap"
    return True, version


def decide(requested: str, settings: SandboxSettings) -> SandboxSettings:
    """The settings with the mode decided: `off` as asked; `bwrap` as asked, or SandboxError
    if it cannot start; `auto` (unset): `bwrap` wherever it can start, else `off` with why."""
    if requested == "off":
        return replace(settings, mode="off", reason="AHPD_SANDBOX=off")
    works, said = probe(settings.bwrap)
    if works:
        return replace(settings, mode="bwrap", version=said)
    if requested == "bwrap":
        raise SandboxError(f"AHPD_SANDBOX=bwrap, but {said}")
    return replace(settings, mode="off", reason=said)


def _base_arguments(*, network: bool) -> list[str]:
    """What every sandbox is: new namespaces (user, PID, IPC, UTS, cgroup; the network too
    unless it stays on), no capabilities, a fresh /proc, /dev and /tmp, death with its parent."""
    arguments = ["--unshare-all"]
    if network:
        arguments.append("--share-net")
    arguments += [
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--dir",
        "/var/tmp",
    ]
    for path in SYSTEM_PATHS:
        arguments += ["--ro-bind-try", path, path]
    return arguments


def home_name(person: str) -> str:
    """A person's home folder's name: their id where it is a plain name, else a name made from
    it that no other person's can be (`user:alice` -> `alice`, `root:ahpd` -> `root-ahpd`)."""
    kind, _, name = person.partition(":")
    plain = name if kind == "user" else person.replace(":", "-")
    if _SAFE_NAME.fullmatch(plain) and plain not in {"root"}:
        return plain
    digest = hashlib.sha256(person.encode()).hexdigest()[:12]
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", plain)[:40].lstrip("._-") or "person"
    return f"{cleaned}-{digest}"


class Sandbox:
    """The host's sandbox: one per host, handing each person a `Jail` over some folders."""

    def __init__(self, settings: SandboxSettings | None = None) -> None:
        self.settings = settings or SandboxSettings()

    @property
    def on(self) -> bool:
        return self.settings.mode == "bwrap"

    @property
    def mode(self) -> Mode:
        return self.settings.mode

    def home(self, person: str) -> Path | None:
        """Where the person's home is kept on the host (made, 0700, on first use)."""
        if self.settings.homes is None:
            return None
        path = self.settings.homes / home_name(person)
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    def jail(self, person: str, folders: Iterable[Path]) -> Jail:
        """The sandbox `person`'s processes run in, with `folders` read-write."""
        return Jail(self, person, tuple(Path(os.path.realpath(f)) for f in folders))

    def hidden(self) -> tuple[Path, ...]:
        return tuple(Path(os.path.realpath(p)) for p in self.settings.hidden)


@dataclass(frozen=True, slots=True)
class Jail:
    """One person's sandbox over some working folders: what each command started for them is
    wrapped in. With the sandbox off, commands are started as they are."""

    sandbox: Sandbox
    person: str
    folders: tuple[Path, ...]
    #: Extra read-write paths (a repository's git folder that lies outside its tree).
    writable: tuple[Path, ...] = field(default=())

    @property
    def on(self) -> bool:
        return self.sandbox.on

    @property
    def home_inside(self) -> Path:
        """The person's HOME as their processes see it."""
        return HOMES_INSIDE / home_name(self.person)

    def home_env(self) -> dict[str, str]:
        """HOME (and where caches and settings go) for a process in this jail; {} when off."""
        if not self.on:
            return {}
        home = str(self.home_inside)
        return {"HOME": home, "TMPDIR": "/tmp", "USER": home_name(self.person)}

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | str,
        env: Mapping[str, str],
        needs: Iterable[str] = (),
        home: bool = True,
    ) -> tuple[list[str], dict[str, str]]:
        """`argv` as it is started in this jail, and its environment: the bubblewrap command
        that runs it inside (in `cwd`), or `argv` itself when the sandbox is off. `needs`: what
        it needs to start beyond the system (its program, paths its configuration names),
        bound read-only. `home`: the person's home is bound (git needs none)."""
        if not self.on:
            return list(argv), dict(env)
        if not _runnable(argv[0], cwd, env.get("PATH")):
            # As exec would say it: inside, bubblewrap would start and then fail its exec.
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
        settings = self.sandbox.settings
        program = shutil.which(settings.bwrap) or settings.bwrap
        hidden = self.sandbox.hidden()
        arguments = [program, *_base_arguments(network=settings.network)]
        for entry in ETC_ENTRIES:
            arguments += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
        for folder in _outermost((*self.folders, *self.writable)):
            arguments += ["--bind", str(folder), str(folder)]
        arguments += self._masks(hidden)
        run_env = dict(env)
        for what, where in self._read_only(argv, env, needs, hidden):
            arguments += ["--ro-bind", str(what), str(where)]
        if home:
            kept = self.sandbox.home(self.person)
            inside = str(self.home_inside)
            if kept is not None:
                arguments += ["--bind", str(kept), inside]
            else:
                arguments += ["--dir", inside]
            run_env.update(self.home_env())
        arguments += ["--chdir", str(cwd), "--", *argv]
        return arguments, run_env

    def _not_given(self) -> tuple[Path, ...]:
        """What a path named as a need must not hold: the checkout, and people's homes."""
        settings = self.sandbox.settings
        return tuple(
            Path(os.path.realpath(p)) for p in (settings.checkout, settings.homes) if p is not None
        )

    def _masks(self, hidden: Sequence[Path]) -> list[str]:
        """Empty mounts over what must not be seen where a bound folder holds it: the data
        directory, the env file, token files, and the checkout unless it is a folder itself."""
        bound = (*self.folders, *self.writable)
        checkout = self.sandbox.settings.checkout
        masked = list(hidden)
        if checkout is not None:
            real = Path(os.path.realpath(checkout))
            # A folder that holds the checkout does not give it away; the checkout itself,
            # or a folder in it, was served on purpose (masking it would hide the folder).
            holds = any(real != f and real.is_relative_to(f) for f in bound)
            given = any(f == real or f.is_relative_to(real) for f in bound)
            if holds and not given:
                masked.append(real)
        arguments: list[str] = []
        for path in masked:
            if not any(path == f or path.is_relative_to(f) for f in bound):
                continue
            if path.is_dir():
                arguments += ["--tmpfs", str(path)]
            else:
                arguments += ["--ro-bind", "/dev/null", str(path)]
        return arguments

    def _read_only(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        needs: Iterable[str],
        hidden: Sequence[Path],
    ) -> list[tuple[Path, Path]]:
        """What the command needs to start, read-only, as (what, where) to bind: its program
        and interpreter (a whole virtualenv and the Python it was made from), the paths named,
        the operator's list; each at its real path, and at the path it was named by where a
        link leads there (a virtualenv reached through a link is run by that name)."""
        found: dict[Path, Path] = {}
        for path in (
            *needs_of(argv[0], env.get("PATH")),
            *(Path(p) for p in needs if os.path.isabs(p)),
            *self.sandbox.settings.read_only,
        ):
            real = Path(os.path.realpath(path))
            named = Path(os.path.abspath(path))
            if not real.exists():
                continue
            if any(p == h or p.is_relative_to(h) for h in hidden for p in (real, named)):
                continue  # never, whoever names it
            if any(h.is_relative_to(real) for h in (*hidden, *self._not_given())):
                continue  # a folder holding what must stay out ("/", a parent of the data)
            for where in (real, named):
                if _under_system(where) or any(where.is_relative_to(f) for f in self.folders):
                    continue  # there already (the system, or a working folder, writable)
                found.setdefault(where, real)
        kept = _outermost(found)
        return [(found[where], where) for where in kept]


def _runnable(command: str, cwd: Path | str, path_env: str | None) -> bool:
    if "/" in command:
        return os.access(Path(cwd) / command, os.X_OK)
    return shutil.which(command, path=path_env) is not None


def needs_of(command: str, path_env: str | None) -> list[Path]:
    """What running `command` needs beyond the system: the program, the interpreter its `#!`
    line names, and for a program in a virtualenv the virtualenv and its base Python."""
    program = shutil.which(command, path=path_env) if "/" not in command else command
    if program is None or not os.path.isabs(program):
        return []
    found = [Path(program)]
    real = Path(os.path.realpath(program))
    found.append(real)
    for candidate in (Path(program), real):
        venv = _virtualenv_of(candidate)
        if venv is not None:
            found.append(venv)
            base = _virtualenv_home(venv)
            if base is not None:
                found.append(base)
    interpreter = _shebang_of(real)
    if interpreter is not None and interpreter != real:
        found += needs_of(str(interpreter), path_env)
    return found


def _virtualenv_of(program: Path) -> Path | None:
    for parent in list(program.parents)[:3]:
        if (parent / "pyvenv.cfg").is_file():
            return parent
    return None


def _virtualenv_home(venv: Path) -> Path | None:
    """The prefix of the Python a virtualenv was made from (`home` in its pyvenv.cfg)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(os.path.realpath(value.strip())).parent
    return None


def _shebang_of(program: Path) -> Path | None:
    try:
        with program.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return Path(words[0]) if words and words[0].startswith("/") else None


def _under_system(path: Path) -> bool:
    return any(path == Path(p) or path.is_relative_to(p) for p in SYSTEM_PATHS)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths without those another of them holds, in their first order."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not any(p != q and p.is_relative_to(q) for q in unique)]
