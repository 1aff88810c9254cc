"""The file store's fence against a person who can make symlinks while it works (issue 22).

An agent or a terminal inside a served folder can swap a folder for a symlink to somewhere
else between the host's check of a path and its use of it. These tests play that person from
a thread, against the engine's file layer directly, many times over: nothing is read from
outside, written outside or removed outside, whatever the timing.
"""

from __future__ import annotations

import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hosts.engine.resources import files
from hosts.engine.resources.served import Served
from hosts.protocol.errors import ProtocolError
from tests.support.swaps import link_swapping

#: Enough tries that the swap is met mid-operation many times: the code before the walk read
#: about 1 file in 1,000 from outside here.
ATTEMPTS = 3000


@pytest.fixture
def served(tmp_path: Path) -> Path:
    folder = tmp_path / "served"
    folder.mkdir()
    return folder.resolve()


@pytest.fixture
def outside() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-outside-", dir="/var/tmp") as path:
        folder = Path(path).resolve()
        (folder / "f.txt").write_text("outside")
        yield folder


def raced(sub: Path, outside: Path, attempt: Callable[[int], object]) -> list[object]:
    """`attempt` made ATTEMPTS times while `sub` is swapped for a link to `outside`; what each
    answered (its result, or the protocol error it was refused with)."""
    swapping = link_swapping(sub, outside).start()
    answers: list[object] = []
    try:
        for n in range(ATTEMPTS):
            try:
                answers.append(attempt(n))
            except ProtocolError as error:
                answers.append(error)
    finally:
        swapping.stop()
    return answers


def codes(answers: list[object]) -> set[int]:
    return {int(a.code) for a in answers if isinstance(a, ProtocolError)}


def met_the_link(answers: list[object]) -> bool:
    """Whether the swap was really met: some attempt walked into the link and was refused."""
    return -32009 in codes(answers)


def test_a_folder_swapped_for_a_link_out_never_gives_a_read_from_outside(served, outside):
    sub = served / "box"
    sub.mkdir()
    (sub / "f.txt").write_text("inside")
    fence = Served([served])
    path = sub / "f.txt"

    answers = raced(
        sub,
        outside,
        lambda n: files.read(fence, path, path.as_uri(), "utf-8", 0)["data"],
    )

    assert "outside" not in answers
    assert met_the_link(answers)
    assert codes(answers) <= {-32008, -32009}


def test_a_folder_swapped_for_a_link_out_never_takes_a_write_outside(served, outside):
    sub = served / "box"
    sub.mkdir()
    fence = Served([served])

    def write(n: int) -> None:
        path = sub / f"w{n}.txt"
        files.write(
            fence,
            path,
            path.as_uri(),
            b"written",
            create_only=False,
            mode="truncate",
            position=0,
            if_match=None,
            admin=True,
        )

    answers = raced(sub, outside, write)

    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]
    assert met_the_link(answers)
    assert codes(answers) <= {-32008, -32009}


def test_a_folder_swapped_for_a_link_out_never_lists_or_deletes_outside(served, outside):
    sub = served / "box"
    sub.mkdir()
    for n in range(ATTEMPTS):
        (sub / f"d{n}.txt").write_text("mine")
        (outside / f"d{n}.txt").write_text("theirs")
    fence = Served([served])

    def delete(n: int) -> None:
        path = sub / f"d{n}.txt"
        files.delete(fence, path, path.as_uri(), recursive=False, admin=True)

    def listed(n: int) -> list[str]:
        # A small folder of its own to list, so each listing is quick.
        return [
            e["name"] for e in files.listing(fence, sub / "few", (sub / "few").as_uri())["entries"]
        ]

    deleted = raced(sub, outside, delete)
    (sub / "few").mkdir()
    (sub / "few" / "mine.txt").write_text("mine")
    (outside / "few").mkdir()
    (outside / "few" / "theirs.txt").write_text("theirs")
    lists = raced(sub, outside, listed)

    assert len(list(outside.iterdir())) == ATTEMPTS + 2
    assert met_the_link(deleted) and met_the_link(lists)
    assert codes(deleted) | codes(lists) <= {-32008, -32009}
    assert ["theirs.txt"] not in lists and ["mine.txt"] in lists


def test_a_link_inside_the_fence_to_another_place_inside_keeps_working(served):
    (served / "real").mkdir()
    (served / "real" / "notes.md").write_text("kept here")
    (served / "alias").symlink_to(served / "real")
    (served / "real" / "up").symlink_to("..")
    (served / "loop").symlink_to("loop")
    fence = Served([served])

    via = served / "alias" / "up" / "alias" / "notes.md"
    assert files.read(fence, via, via.as_uri(), "utf-8", 0)["data"] == "kept here"
    files.write(
        fence,
        via,
        via.as_uri(),
        b"+",
        create_only=False,
        mode="append",
        position=0,
        if_match=None,
        admin=True,
    )
    assert (served / "real" / "notes.md").read_text() == "kept here+"
    assert not (served / "alias").resolve() == served / "alias", "the link itself is kept"
    listed = files.listing(fence, served / "alias", (served / "alias").as_uri())
    assert listed["entries"] == [
        {"name": "notes.md", "type": "file"},
        {"name": "up", "type": "directory"},
    ]
    resolved = files.resolve(fence, via, via.as_uri(), follow=True)
    assert resolved["uri"] == (served / "real" / "notes.md").as_uri()
    loop = served / "loop" / "x"
    with pytest.raises(ProtocolError) as refused:
        files.read(fence, loop, loop.as_uri(), None, 0)
    assert refused.value.code == -32009


def test_a_write_is_made_beside_its_target_and_keeps_its_mode(served):
    target = served / "script.sh"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o750)
    fence = Served([served])

    files.write(
        fence,
        target,
        target.as_uri(),
        b"echo hi\n",
        create_only=False,
        mode="append",
        position=0,
        if_match=None,
        admin=True,
    )

    assert target.read_text() == "#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert [p.name for p in served.iterdir()] == ["script.sh"]


def test_folders_made_through_a_link_out_are_refused_before_any_is_made(served, outside):
    (served / "way-out").symlink_to(outside)
    fence = Served([served])
    deep = served / "way-out" / "new" / "deeper"

    with pytest.raises(ProtocolError) as refused:
        files.mkdir(fence, deep, deep.as_uri(), admin=True)

    assert refused.value.code == -32009
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]
    made = served / "made" / "here"
    files.mkdir(fence, made, made.as_uri(), admin=True)
    assert made.is_dir()


def test_a_watch_root_is_walked_and_a_change_through_a_link_out_is_not_admitted(served, outside):
    (served / "src").mkdir()
    (served / "alias").symlink_to("src")
    (served / "way-out").symlink_to(outside)
    fence = Served([served])

    assert fence.walked((served / "alias").as_uri(), "createResourceWatch") == served / "src"
    for uri, code in (
        ((served / "way-out").as_uri(), -32009),
        ((served / "gone").as_uri(), -32008),
    ):
        with pytest.raises(ProtocolError) as refused:
            fence.walked(uri, "createResourceWatch")
        assert refused.value.code == code
    assert fence.admits(served / "src" / "new.txt")
    assert fence.admits(served / "removed-folder" / "old.txt")
    assert not fence.admits(served / "way-out" / "f.txt")
    assert not fence.admits(outside / "f.txt")
