"""The git command line, asked what a working tree holds and told what to do with it.

Every call is a subprocess (`git -C <top> ...`) awaited off the event loop's back: a slow
repository keeps its own caller waiting and nobody else. Output is read with `-z`, so a path
with spaces, quotes or newlines is one path. Reads take no locks (GIT_OPTIONAL_LOCKS=0), so a
re-read never fights the person's own `git add` in a terminal for the index.

A repository's own configuration is anybody's to write who can write its folder (an agent, a
terminal), so the host's git runs nothing it asks: no fsmonitor, no hooks, no external diff or
textconv driver, no system or global configuration, and on a session's own repository it runs
in the sandbox (sandbox.py), seeing that repository alone: a filter or an include it was
planted still runs only as far as the person's own processes reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...backends.sandbox import Jail, Sandbox
from ...protocol.shapes import SessionGit

#: The environment every git call runs with: no prompt, no pager, plain messages.
_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
}


#: What no git of the host's runs, whatever a repository's configuration says.
_NOTHING_RUN = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "core.sshCommand=false",
    "-c",
    "credential.helper=",
)
#: All git is given of the server's environment.
_PLAIN_ENV = ("PATH", "LANG", "TZ", "TMPDIR")
#: No configuration but the repository's own (the server's user's is nobody's business here).
_NO_HOST_CONFIG = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
#: Diff options that keep a repository's drivers from running.
NO_DRIVERS = ("--no-ext-diff", "--no-textconv")

#: Where a repository's git runs: in this sandbox (None, or off: as the server's user).
_sandbox: Sandbox | None = None


def run_in(sandbox: Sandbox | None) -> None:
    """Run the git of every repository in `sandbox` from now on (the host sets its own)."""
    global _sandbox
    _sandbox = sandbox


#: What a call adds to git's environment: None for the folder's own repository, or where this
#: host keeps a folder outside any git tree (outside_git.py: GIT_DIR and GIT_WORK_TREE).
Env = Mapping[str, str] | None


class GitError(Exception):
    """A git command that failed, with what git said."""


@dataclass(frozen=True, slots=True)
class Row:
    """One line of `git status --porcelain=v1`: a path (relative to the top), the path it came
    from for a rename or copy, and the two status letters (index, working tree)."""

    path: str
    index: str
    tree: str
    origin: str | None = None
    #: Between two trees: the blob the path holds after (None when deleted), what a review
    #: tick is kept against.
    blob: str | None = None

    @property
    def untracked(self) -> bool:
        return self.index == "?"

    @property
    def staged(self) -> bool:
        return self.index not in (" ", "?", "!")

    @property
    def unstaged(self) -> bool:
        return self.tree != " "

    @property
    def deleted(self) -> bool:
        return "D" in (self.index, self.tree)

    @property
    def renamed(self) -> bool:
        return self.index == "R"


async def run(
    top: Path, *args: str, env: Mapping[str, str] | None = None, ok: tuple[int, ...] = (0,)
) -> tuple[int, bytes]:
    """Run `git -C top args`; its exit status and output. Any status outside `ok` raises."""
    process = await _start(
        top,
        args,
        env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    status = process.returncode or 0
    if status not in ok:
        said = err.decode(errors="replace").strip() or out.decode(errors="replace").strip()
        raise GitError(said or f"git {args[0]} exited {status}")
    return status, out


async def count_files(top: Path, paths: list[str], env: Env, cap: int) -> int:
    """How many files `git add` would take under `paths` (what git ignores not), counted
    up to `cap`: git is stopped there, so a huge folder costs no more than `cap` names."""
    process = await _start(
        top,
        ("ls-files", "--others", "--exclude-standard", "-z", "--", *paths),
        env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    found = 0
    while found < cap and (chunk := await process.stdout.read(65536)):
        found += chunk.count(b"\0")
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await process.wait()
    return found


async def _start(
    top: Path, args: Sequence[str], env: Env, **pipes: Any
) -> asyncio.subprocess.Process:
    """Start one git: hardened, and on a folder's own repository (not one this host keeps,
    which names its GIT_DIR) in the sandbox, with that repository bound and nothing else."""
    argv = ["git", *_NOTHING_RUN, "-C", str(top), *args]
    # Not the server's environment: a filter a repository names runs with what git is given,
    # and the server's database URL and keys are nobody's there.
    plain = {key: os.environ[key] for key in _PLAIN_ENV if key in os.environ}
    full_env = {**plain, **_ENV, **_NO_HOST_CONFIG, **(env or {})}
    kept = env is not None and "GIT_DIR" in env
    if _sandbox is not None and _sandbox.on and not kept:
        root = repository_of(top) or top
        jail = Jail(_sandbox, "", (root,), writable=_git_folders(root))
        argv, full_env = jail.wrap(argv, cwd=root, env=full_env, home=False)
    return await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, env=full_env, start_new_session=True, **pipes
    )


def _git_folders(top: Path) -> tuple[Path, ...]:
    """Where a working tree's repository lies when its `.git` is a file (a worktree's, a
    submodule's): that folder and the one it shares objects with. A `.git` file naming a
    folder that is not its own (`_planted`) gets nothing bound."""
    gitdir = _named_gitdir(top / ".git")
    if gitdir is None or _planted(top / ".git", gitdir):
        return ()
    found = [gitdir]
    common = gitdir / "commondir"
    if common.is_file():
        with contextlib.suppress(OSError):
            found.append((gitdir / common.read_text().strip()).resolve())
    return tuple(p for p in found if p.exists())


def _named_gitdir(marker: Path) -> Path | None:
    """The folder a `.git` file names (`gitdir: <path>`), or None where it is no such file."""
    if not marker.is_file():
        return None
    try:
        line = marker.read_text(errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return (marker.parent / line.removeprefix("gitdir:").strip()).resolve()


def _planted(marker: Path, gitdir: Path) -> bool:
    """Whether a `.git` file names a repository that is not this working tree's: anybody who
    can write a folder can write a `.git` file naming another person's repository in it, and
    the folder it names with any files beside it. Git makes two kinds, each checked by where
    the folder it names really is, which a writer of this folder alone cannot make:

    - a linked worktree's: its folder is `<common>/worktrees/<name>`, names the file back (its
      `gitdir`) and shares the objects of `<common>` (its `commondir`), the folder above
      `worktrees`: a folder of its own, anywhere else, naming another repository as its common
      one, is refused;
    - a submodule's: under `.git/modules/` of a working tree above it, that `.git` and its
      `modules` real folders (a link there would let a `.git/modules` leading to `/` hold
      every repository)."""
    if gitdir.parent.name == "worktrees":
        common = gitdir.parent.parent
        back, shares = gitdir / "gitdir", gitdir / "commondir"
        with contextlib.suppress(OSError):
            # Each absolute, or relative to that folder (worktree.useRelativePaths).
            named = (gitdir / back.read_text().strip()).resolve() if back.is_file() else None
            shared = (gitdir / shares.read_text().strip()).resolve() if shares.is_file() else None
            if named == marker.resolve() and shared == common:
                return False
    for above in marker.parent.resolve().parents:
        dot_git, modules = above / ".git", above / ".git" / "modules"
        if dot_git.is_symlink() or modules.is_symlink() or not modules.is_dir():
            continue
        if gitdir.is_relative_to(modules):
            return False
    return True


def repository_of(folder: Path) -> Path | None:
    """The top of the working tree `folder` lies in, by looking for `.git` upwards (no
    subprocess: the session catalogue asks this as a session opens), or None: none found, or
    the `.git` found is a symbolic link (to anywhere: git makes none) or a file naming a
    repository that is not this working tree's (`_planted`). git is never run on a repository
    a writer of the folder pointed it at, in the sandbox or out of it."""
    for candidate in (folder, *folder.parents):
        marker = candidate / ".git"
        if marker.is_symlink():
            return None
        if marker.exists():
            gitdir = _named_gitdir(marker)
            return None if gitdir is not None and _planted(marker, gitdir) else candidate
    return None


async def branches(top: Path) -> list[str]:
    """The repository's local branches, the most recently committed first."""
    _, out = await run(
        top, "for-each-ref", "--sort=-committerdate", "--format=%(refname:short)", "refs/heads/"
    )
    return [name for name in out.decode(errors="replace").splitlines() if name]


async def top_of(folder: Path) -> Path:
    _, out = await run(folder, "rev-parse", "--show-toplevel")
    return Path(out.decode().strip())


async def git_dir(top: Path) -> Path:
    _, out = await run(top, "rev-parse", "--absolute-git-dir")
    return Path(out.decode().strip())


async def head(top: Path) -> str | None:
    """The commit HEAD names, or None in a repository with no commit yet."""
    status, out = await run(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", ok=(0, 1))
    return out.decode().strip() if status == 0 else None


async def status(top: Path, pathspec: str) -> list[Row]:
    """What differs from HEAD under `pathspec`, untracked files one by one."""
    _, out = await run(
        top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", pathspec
    )
    rows: list[Row] = []
    fields = out.decode(errors="surrogateescape").split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        index, tree, path = entry[0], entry[1], entry[3:]
        origin = None
        if index in "RC":
            origin = fields[i]
            i += 1
        rows.append(Row(path, index, tree, origin))
    return rows


async def numstat(
    top: Path, base: str, pathspec: str, then: str | None = None, env: Env = None
) -> dict[str, tuple[int, int]]:
    """Lines added and removed per path between `base` and `then` (another tree), or the
    working tree's tracked and staged files; a binary file has none."""
    ends = (base, then) if then is not None else (base,)
    _, out = await run(
        top,
        "diff",
        *NO_DRIVERS,
        "--numstat",
        "-z",
        "--find-renames",
        *ends,
        "--",
        pathspec,
        env=env,
    )
    stats: dict[str, tuple[int, int]] = {}
    fields = out.decode(errors="surrogateescape").split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        parts = entry.split("\t")
        if len(parts) != 3:
            continue
        added, removed, path = parts
        if not path:  # a rename: the two paths follow, the new one second
            path = fields[i + 1] if i + 1 < len(fields) else ""
            i += 2
        if added.isdigit() and removed.isdigit():
            stats[path] = (int(added), int(removed))
    return stats


async def changed(top: Path, base: str, then: str, pathspec: str, env: Env = None) -> list[Row]:
    """What differs between two trees under `pathspec`, as rows whose index letter is the
    change (A, M, D, R with the path it came from), each with the blob it holds after."""
    _, out = await run(
        top,
        "diff",
        *NO_DRIVERS,
        "--raw",
        "--no-abbrev",
        "-z",
        "--find-renames",
        base,
        then,
        "--",
        pathspec,
        env=env,
    )
    # Each entry: ":<mode> <mode> <blob before> <blob after> <letter><score>", then its path
    # (two for a rename or copy, the one it came from first).
    fields = out.decode(errors="surrogateescape").split("\0")
    rows: list[Row] = []
    i = 0
    while i < len(fields):
        head = fields[i].split()
        i += 1
        if len(head) != 5 or not head[0].startswith(":"):
            continue
        letter, after = head[4][:1], head[3]
        blob = None if letter == "D" or not after.strip("0") else after
        if letter in "RC":
            rows.append(Row(fields[i + 1], letter, " ", fields[i], blob))
            i += 2
        else:
            rows.append(Row(fields[i], letter, " ", None, blob))
            i += 1
    return rows


async def snapshot(top: Path) -> str:
    """The whole working tree as it stands, untracked files too (ignored ones not), as a git
    tree id: added through an index of its own, so the person's index is never touched."""
    gitdir = await git_dir(top)
    handle, name = tempfile.mkstemp(prefix="ahpd-index-", dir=gitdir)
    os.close(handle)
    index = Path(name)
    try:
        if (gitdir / "index").exists():
            # From the real index: what is unchanged is not hashed again.
            await asyncio.to_thread(shutil.copyfile, gitdir / "index", index)
        else:
            index.unlink()
        env = {"GIT_INDEX_FILE": str(index)}
        await run(top, "add", "-A", "--", ".", env=env)
        _, out = await run(top, "write-tree", env=env)
        return out.decode().strip()
    finally:
        index.unlink(missing_ok=True)


async def show(top: Path, commit: str, path: str, env: Env = None) -> bytes | None:
    """A file as `commit` has it, or None where it has no such file."""
    status, out = await run(top, "show", f"{commit}:{path}", ok=(0, 128), env=env)
    return out if status == 0 else None


async def size(top: Path, commit: str, path: str, env: Env = None) -> int | None:
    """How many bytes a file is as `commit` has it, or None where it has no such file (read
    from the object's header: nothing of the file itself is read)."""
    status, out = await run(top, "cat-file", "-s", f"{commit}:{path}", ok=(0, 1, 128), env=env)
    return int(out) if status == 0 and out.strip().isdigit() else None


async def holds(top: Path, commit: str, path: str, env: Env = None) -> bool:
    """Whether `commit` has a file (or folder) at `path`."""
    status, _ = await run(top, "cat-file", "-e", f"{commit}:{path}", ok=(0, 1, 128), env=env)
    return status == 0


async def has_staged(top: Path) -> bool:
    status, _ = await run(top, "diff", *NO_DRIVERS, "--cached", "--quiet", ok=(0, 1))
    return status == 1


async def identity_env(top: Path, name: str, email: str) -> dict[str, str]:
    """Who a commit is by: git's own configuration where it has one, else the person."""
    status, _ = await run(top, "config", "user.email", ok=(0, 1))
    if status == 0:
        return {}
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


async def branch_facts(top: Path) -> SessionGit:
    """Where a working tree stands, in the keys VS Code's host writes under a session's
    `_meta.git`: branchName (none when HEAD is detached), upstreamBranchName, the commits it
    is ahead of its upstream (outgoingChanges) and behind it (incomingChanges), how many
    paths differ from HEAD, untracked ones too (uncommittedChanges), and for a linked
    worktree the branch it was made beside (baseBranchName)."""
    _, out = await run(top, "status", "--porcelain=v2", "-z", "--branch")
    facts: SessionGit = {}
    changes = 0
    fields = out.decode(errors="surrogateescape").split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if entry.startswith("# branch.head "):
            name = entry.removeprefix("# branch.head ")
            if name != "(detached)":
                facts["branchName"] = name
        elif entry.startswith("# branch.upstream "):
            facts["upstreamBranchName"] = entry.removeprefix("# branch.upstream ")
        elif entry.startswith("# branch.ab "):
            ahead, _, behind = entry.removeprefix("# branch.ab ").partition(" ")
            if ahead.lstrip("+").isdigit() and behind.lstrip("-").isdigit():
                facts["outgoingChanges"] = int(ahead.lstrip("+"))
                facts["incomingChanges"] = int(behind.lstrip("-"))
        elif entry[:2] in ("1 ", "2 ", "u ", "? "):
            changes += 1
            if entry.startswith("2 "):
                i += 1  # a rename's or copy's path before it
    facts["uncommittedChanges"] = changes
    if (base := await _worktree_base(top)) is not None:
        facts["baseBranchName"] = base
    return facts


async def _worktree_base(top: Path) -> str | None:
    """For a linked worktree, the branch it was made beside: the remote's default branch
    where origin names one, else the branch its main working tree has out. None for a
    repository's main working tree."""
    _, out = await run(top, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
    own, _, common = out.decode(errors="replace").strip().partition("\n")
    if Path(own).resolve() == Path(common).resolve():
        return None
    status, out = await run(
        top, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", ok=(0, 1, 128)
    )
    if status == 0 and (named := out.decode(errors="replace").strip()):
        return named.removeprefix("origin/")
    _, out = await run(top, "worktree", "list", "--porcelain", "-z")
    for field in out.decode(errors="replace").split("\0"):
        if field.startswith("branch "):
            return field.removeprefix("branch ").removeprefix("refs/heads/")
        if not field:
            break  # the main working tree's record ends at its first empty field
    return None
