"""Which repository a folder is in (changesets/git.py: repository_of), where a person who may
write the folder plants a `.git` file naming another person's repository: a real worktree and a
real submodule are their repositories; a planted worktree folder naming the other repository as
the one it shares objects with, a `.git/modules` that is a link, and a `.git` that is a link are
none."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hosts.engine.changesets.git import repository_of


def git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=folder,
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
            "HOME": str(folder),
        },
    )


def repository(folder: Path) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    (folder / "f.txt").write_text("secret\n")
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "one")
    return folder


def test_a_real_worktree_and_a_real_submodule_are_their_own(tmp_path):
    main = repository(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    assert repository_of(tmp_path / "wt") == tmp_path / "wt"
    lib = repository(tmp_path / "lib")
    git(main, "submodule", "add", "-q", str(lib), "sub")
    assert repository_of(main / "sub") == main / "sub"


def test_a_planted_worktree_folder_sharing_anothers_objects_is_refused(tmp_path):
    victim = repository(tmp_path / "victim")
    mine = tmp_path / "mine"
    planted = mine / "D"
    planted.mkdir(parents=True)
    (mine / ".git").write_text(f"gitdir: {planted}\n")
    (planted / "gitdir").write_text(f"{mine / '.git'}\n")
    (planted / "commondir").write_text(f"{victim / '.git'}\n")
    assert repository_of(mine) is None
    # Even under a folder named worktrees: what it shares must be the folder above that.
    fake = mine / "x" / "worktrees" / "D"
    fake.mkdir(parents=True)
    (mine / ".git").write_text(f"gitdir: {fake}\n")
    (fake / "gitdir").write_text(f"{mine / '.git'}\n")
    (fake / "commondir").write_text(f"{victim / '.git'}\n")
    assert repository_of(mine) is None


def test_a_modules_folder_that_is_a_link_holds_no_submodule(tmp_path):
    victim = repository(tmp_path / "victim")
    above = tmp_path / "above"
    (above / ".git").mkdir(parents=True)
    (above / ".git" / "modules").symlink_to("/")
    inner = above / "inner"
    inner.mkdir()
    (inner / ".git").write_text(f"gitdir: {victim / '.git'}\n")
    assert repository_of(inner) is None


def test_a_git_link_is_no_repository(tmp_path):
    victim = repository(tmp_path / "victim")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / ".git").symlink_to(victim / ".git")
    assert repository_of(mine) is None
