"""The trees this host keeps for folders outside any git tree (changesets/outside_git.py), without a
server: what a tree holds, that a folder's index is shared by whoever looks at it, and the
folders too large to keep."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hosts.engine.changesets import outside_git as outside_git
from hosts.engine.changesets.outside_git import OutsideGitCopies


def held(store: OutsideGitCopies, tree: str, path: Path) -> bytes:
    relative = OutsideGitCopies.pathspec(path)
    return subprocess.run(
        ["git", "show", f"{tree}:{relative}"], env=store.env, capture_output=True, check=True
    ).stdout


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "a.txt").write_text("one\n")
    (work / "b.txt").write_text("two\n")
    return work


async def test_a_tree_holds_the_folder_as_it_stood(tmp_path: Path, folder: Path):
    store = OutsideGitCopies(tmp_path / "state")
    before = await store.snapshot(folder)
    (folder / "b.txt").write_text("changed\n")
    after = await store.snapshot(folder)
    assert before is not None and after is not None and before != after
    assert held(store, before, folder / "b.txt") == b"two\n"
    assert held(store, after, folder / "b.txt") == b"changed\n"
    assert held(store, after, folder / "src" / "a.txt") == b"one\n"


async def test_the_host_keeps_its_own_folders_out(tmp_path: Path, folder: Path):
    private = folder / "data"
    private.mkdir()
    (private / "secret").write_text("token\n")
    store = OutsideGitCopies(tmp_path / "state", (private,))
    tree = await store.snapshot(folder)
    assert tree is not None
    with pytest.raises(subprocess.CalledProcessError):
        held(store, tree, private / "secret")


async def test_a_folder_has_one_index_whoever_looks(tmp_path: Path, folder: Path):
    store = OutsideGitCopies(tmp_path / "state")
    first = await store.snapshot(folder)
    # Another session in the same folder (by another spelling of it) starts from that index.
    again = await store.snapshot(folder / "src" / "..")
    assert first == again
    assert len(list((store.git_dir / "indexes").iterdir())) == 1


async def test_a_folder_past_the_limit_is_not_kept(tmp_path: Path, folder: Path, monkeypatch):
    monkeypatch.setattr(outside_git, "FILE_LIMIT", 1)
    store = OutsideGitCopies(tmp_path / "state")
    assert await store.snapshot(folder) is None
    assert await store.snapshot(folder) is None
    assert not list((store.git_dir / "indexes").iterdir())


async def test_a_folder_grown_past_the_limit_is_let_go(tmp_path: Path, folder: Path, monkeypatch):
    monkeypatch.setattr(outside_git, "FILE_LIMIT", 3)
    store = OutsideGitCopies(tmp_path / "state")
    assert await store.snapshot(folder) is not None
    for n in range(3):
        (folder / f"new-{n}.txt").write_text("more\n")
    assert await store.snapshot(folder) is None
    assert not list((store.git_dir / "indexes").iterdir())
    assert await store.snapshot(folder) is None  # not counted or hashed again


async def test_an_empty_folder_is_kept_as_the_empty_tree_and_what_comes_later_as_its_own(
    tmp_path: Path,
):
    """A new project's folder, empty at its first turn: git writes no index for nothing to add,
    and the before side of every file the turn makes is that nothing."""
    empty = tmp_path / "new-project"
    empty.mkdir()
    store = OutsideGitCopies(tmp_path / "state")
    before = await store.snapshot(empty)
    assert before == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree
    (empty / "made.txt").write_text("made\n")
    after = await store.snapshot(empty)
    assert after is not None and after != before
    assert held(store, after, empty / "made.txt") == b"made\n"
    # Emptied again: the empty tree once more, from no index left of what it held.
    (empty / "made.txt").unlink()
    assert await store.snapshot(empty) == before
    assert list((store.git_dir).glob("ahpd-index-*")) == []
