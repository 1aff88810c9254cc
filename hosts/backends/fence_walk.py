"""Walking a path inside a fence one name at a time, on descriptors the host opened itself.

A path is never handed to the kernel whole, to be resolved after the host has judged it. Each
name is opened relative to the directory opened before it, with O_NOFOLLOW, so the kernel
follows no link: a symlink met on the way is read through its own descriptor and its target
walked by the host (from "/" when absolute, else from the directory holding it), at most
`MAX_LINKS` of them. The real path the walk ends at is the host's own account of the
descriptors it holds, and is what the fence judges; the operation then works on those
descriptors (`Place`), never on the name again from the top. A served folder swapped for a
symlink mid-operation therefore leaves the operation holding the folder it checked, or is met
as the symlink it now is and walked, and refused where it leads out: never followed out by the
kernel after the check.

Only regular files and directories are opened for what they hold: a kind is read from a
descriptor opened with O_PATH (which opens nothing: a named pipe does not wait for a writer,
a device is not touched), and a file is then opened non-blocking and checked to be the one
judged (its device and inode), so nothing here waits on what another person made.

This module decides and does; each caller says a refusal in its own protocol's words.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

#: Links followed in one walk, as Linux's own bound: a loop ends as a refusal, not a hang.
MAX_LINKS = 40
#: Bytes moved per read when a file's content is copied.
CHUNK = 1024 * 1024

_PATH = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
#: How a file or folder already judged is opened for what it holds: never through a link,
#: never waiting (a pipe swapped in is not waited on), never taking a terminal.
_OPEN = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

Holds = Callable[[Path], bool]
#: Told each folder a walk is about to make (its real path), so that it may refuse first.
Making = Callable[[Path], None]


class Outside(Exception):
    """The path leads outside the fence, or round more links than a walk follows."""


class NotRegular(Exception):
    """What a path names is neither a regular file nor a directory (`kind` says what)."""

    def __init__(self, kind: str, real: Path) -> None:
        super().__init__(f"{real} is {kind}")
        self.kind = kind
        self.real = real


def kind_of(mode: int) -> str:
    """What a file's mode says it is, as a person reads it."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a special file"


def changed(real: Path) -> FileNotFoundError:
    """What a name that no longer names what was judged is: not there any more."""
    return FileNotFoundError(errno.ENOENT, "changed while it was being opened", str(real))


@dataclass
class Place:
    """Where a walk ended: the real directory holding the name (`folder`, an O_PATH descriptor
    this place owns), the name in it, the real path, and what the name was when walked
    (`found`, not following a link; None when nothing had that name)."""

    folder: int
    name: str
    real: Path
    found: os.stat_result | None

    def close(self) -> None:
        os.close(self.folder)

    def __enter__(self) -> Place:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lstat(self) -> os.stat_result | None:
        """What the name is now, not following a link; None when nothing has it."""
        try:
            return os.stat(self.name, dir_fd=self.folder, follow_symlinks=False)
        except FileNotFoundError:
            return None


def walk(
    path: Path,
    holds: Holds,
    *,
    follow: bool = True,
    making: Making | None = None,
    start: tuple[int, Path] | None = None,
) -> Place:
    """The place `path` leads to, walked name by name, when it lies inside the fence (`holds`
    of its real path); Outside otherwise.

    `follow` resolves a link at the last name too (else the place is the link itself).
    `making` makes each missing folder on the way, inside the fence, after asking it. A
    relative `path` starts at `start` (a directory's descriptor, not taken, and its real
    path). A missing folder on the way is FileNotFoundError where the path would lie inside
    the fence, Outside where it would not, so nothing outside is told apart by a refusal.
    """
    if start is None:
        if not path.is_absolute():
            raise ValueError(f"a walk starts from an absolute path, not {path}")
        chain = [(os.open("/", _PATH | os.O_DIRECTORY), Path("/"))]
        names = list(path.parts[1:])
    else:
        chain = [(os.dup(start[0]), start[1])]
        names = list(path.parts)
    pending = names[::-1]
    links = 0
    made: set[Path] = set()
    name: str | None = None
    found: os.stat_result | None = None
    try:
        while pending:
            step = pending.pop()
            if step in ("", "."):
                continue
            if step == "..":
                _up(chain)
                continue
            folder, real = chain[-1]
            last = not pending
            if last and not follow:
                name = step
                found = _lstat(folder, step)
                break
            try:
                child = os.open(step, _PATH, dir_fd=folder)
            except FileNotFoundError:
                if last:
                    name, found = step, None
                    break
                if making is None or not holds(real / step) or real / step in made:
                    # (One made here and gone again is not made again: someone is racing.)
                    raise _missing(real / step, pending, holds) from None
                making(real / step)
                with suppress(FileExistsError):
                    os.mkdir(step, 0o777, dir_fd=folder)
                made.add(real / step)
                pending.append(step)
                continue
            mode = os.fstat(child).st_mode
            if stat.S_ISLNK(mode):
                links += 1
                try:
                    target = os.readlink("", dir_fd=child)
                finally:
                    os.close(child)
                if links > MAX_LINKS:
                    raise Outside(f"{real / step}: more than {MAX_LINKS} links")
                if target.startswith("/"):
                    _to_top(chain)
                pending.extend(reversed(Path(target).parts[1 if target.startswith("/") else 0 :]))
                continue
            if last:
                name, found = step, os.fstat(child)
                os.close(child)
                break
            if not stat.S_ISDIR(mode):
                os.close(child)
                if holds(real / step):
                    raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(real / step))
                raise Outside(str(real / step))
            chain.append((child, real / step))
        if name is None:
            # The path ended at a folder (by `..`, or it is "/" or `start`): its place is in
            # its parent, by its name there.
            real = chain[-1][1]
            if len(chain) > 1:
                os.close(chain.pop()[0])
                name = real.name
            elif real != real.parent:
                _up(chain)
                name = real.name
            else:
                name = "."
            found = _lstat(chain[-1][0], name)
        folder, real = chain[-1]
        whole = real / name if name != "." else real
        if not holds(whole):
            raise Outside(str(whole))
        chain.pop()
        return Place(folder, name, whole, found)
    finally:
        for descriptor, _ in chain:
            os.close(descriptor)


def _lstat(folder: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _up(chain: list[tuple[int, Path]]) -> None:
    """`..`: the real parent of where the walk is (the top stays at "/")."""
    if len(chain) > 1:
        os.close(chain.pop()[0])
        return
    descriptor, real = chain[0]
    if real == real.parent:
        return
    parent = os.open("..", _PATH | os.O_DIRECTORY, dir_fd=descriptor)
    os.close(descriptor)
    chain[0] = (parent, real.parent)


def _to_top(chain: list[tuple[int, Path]]) -> None:
    """An absolute link's target is walked from "/" again."""
    top = os.open("/", _PATH | os.O_DIRECTORY)
    for descriptor, _ in chain:
        os.close(descriptor)
    chain[:] = [(top, Path("/"))]


def _missing(real: Path, rest: list[str], holds: Holds) -> OSError | Outside:
    """A folder on the way is not there: not found where the path would lie inside."""
    guess = Path(os.path.normpath(os.path.join(real, *reversed(rest))))
    if holds(guess):
        return FileNotFoundError(errno.ENOENT, "no such file or directory", str(guess))
    return Outside(str(guess))


def opened(place: Place, flags: int = os.O_RDONLY) -> int:
    """The descriptor of what the place named when walked, opened for what it holds: a
    regular file (or with O_DIRECTORY a directory), not waiting on anything; NotRegular for
    any other kind, FileNotFoundError when the name names something else now."""
    was = place.found
    if was is None:
        raise FileNotFoundError(errno.ENOENT, "no such file or directory", str(place.real))
    wanted = stat.S_ISDIR if flags & os.O_DIRECTORY else stat.S_ISREG
    if not wanted(was.st_mode):
        if stat.S_ISDIR(was.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(place.real))
        if stat.S_ISREG(was.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(place.real))
        raise NotRegular(kind_of(was.st_mode), place.real)
    try:
        descriptor = os.open(place.name, flags | _OPEN, dir_fd=place.folder)
    except OSError as error:
        # Made a link (ELOOP), or something else (ENOTDIR, ENXIO) since the walk: not it.
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.ENOENT):
            raise changed(place.real) from None
        raise
    now = os.fstat(descriptor)
    if (now.st_dev, now.st_ino) != (was.st_dev, was.st_ino):
        os.close(descriptor)
        raise changed(place.real)
    return descriptor


def read_regular(place: Place, most: int | None = None) -> bytes:
    """What the regular file at `place` holds, `most` bytes of it at most."""
    descriptor = opened(place)
    with os.fdopen(descriptor, "rb") as file:
        return file.read() if most is None else file.read(most)


def entries(place: Place, holds: Holds) -> list[tuple[str, bool]]:
    """The names in the directory at `place`, sorted, each with whether it is a directory
    (a link's by where it leads); a link leading outside the fence, or what the fence keeps
    out, is left out."""
    descriptor = opened(place, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with os.scandir(descriptor) as scan:
            found = sorted(
                (entry.name, entry.is_symlink(), entry.is_dir(follow_symlinks=False))
                for entry in scan
            )
        listed = []
        for name, link, is_dir in found:
            if link:
                try:
                    with walk(Path(name), holds, start=(descriptor, place.real)) as target:
                        is_dir = target.found is not None and stat.S_ISDIR(target.found.st_mode)
                except (Outside, OSError):
                    continue
            elif not holds(place.real / name):
                continue
            listed.append((name, is_dir))
        return listed
    finally:
        os.close(descriptor)


def spare_name(name: str) -> str:
    """A temporary name beside `name`, hidden, that no other writer picks."""
    return f".{name}.{secrets.token_hex(4)}.ahpd"


def replace(place: Place, fill: Callable[[int], int], mode: int) -> None:
    """Write a temporary file beside the place's name (`fill` writes it through the
    descriptor it is given and says its size) and rename it over the name, in the folder the
    walk holds: a reader sees the old file or the new one, never half of it."""
    spare = spare_name(place.name)
    descriptor = os.open(
        spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN, 0o600, dir_fd=place.folder
    )
    try:
        try:
            size = fill(descriptor)
            os.ftruncate(descriptor, size)
            os.fsync(descriptor)
            os.fchmod(descriptor, mode)
        finally:
            os.close(descriptor)
        os.replace(spare, place.name, src_dir_fd=place.folder, dst_dir_fd=place.folder)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(spare, dir_fd=place.folder)
        raise


def write_all(descriptor: int, data: bytes, at: int) -> None:
    """All of `data` written at offset `at`."""
    view = memoryview(data)
    while view:
        done = os.pwrite(descriptor, view, at)
        view, at = view[done:], at + done


def copy_span(source: int, target: int, start: int, end: int, to: int) -> None:
    """Bytes `start` to `end` of `source` written to `target` from offset `to`, a chunk at a
    time, holes skipped (the target is truncated to its size after, which leaves them holes):
    a sparse file of gigabytes costs what it holds, not what it says."""
    at = start
    while at < end:
        try:
            data_at = os.lseek(source, at, os.SEEK_DATA)
            hole_at = os.lseek(source, data_at, os.SEEK_HOLE)
        except OSError as error:
            if error.errno == errno.ENXIO:
                return  # only a hole is left
            if error.errno != errno.EINVAL:
                raise
            data_at, hole_at = at, end  # a file system that cannot say: all of it is data
        if data_at >= end:
            return
        stop = min(hole_at, end)
        while data_at < stop:
            chunk = os.pread(source, min(CHUNK, stop - data_at), data_at)
            if not chunk:
                return  # the file shrank under us: what is left is read as nothing
            write_all(target, chunk, to + data_at - start)
            data_at += len(chunk)
        at = stop


def copy_file(source: int, folder: int, name: str) -> None:
    """The regular file open at `source` copied to a new `name` in `folder`, with its mode
    and times."""
    was = os.fstat(source)
    target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN, 0o600, dir_fd=folder)
    try:
        copy_span(source, target, 0, was.st_size, 0)
        os.ftruncate(target, was.st_size)
        os.fchmod(target, stat.S_IMODE(was.st_mode))
        os.utime(target, ns=(was.st_atime_ns, was.st_mtime_ns))
    finally:
        os.close(target)


def copy_tree(source: int, folder: int, name: str, real: Path) -> None:
    """The directory open at `source` (whose real path is `real`) copied to a new `name` in
    `folder`: folders, regular files and links as they are (a link's text, not what it
    leads to); NotRegular for anything else in it."""
    was = os.fstat(source)
    os.mkdir(name, 0o700, dir_fd=folder)
    target = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _OPEN, dir_fd=folder)
    try:
        with os.scandir(source) as scan:
            names = sorted(entry.name for entry in scan)
        for child in names:
            place = Place(os.dup(source), child, real / child, _lstat(source, child))
            with place:
                if place.found is None:
                    continue  # gone since it was listed
                mode = place.found.st_mode
                if stat.S_ISLNK(mode):
                    os.symlink(os.readlink(child, dir_fd=source), child, dir_fd=target)
                elif stat.S_ISDIR(mode):
                    inner = opened(place, os.O_RDONLY | os.O_DIRECTORY)
                    try:
                        copy_tree(inner, target, child, place.real)
                    finally:
                        os.close(inner)
                else:
                    inner = opened(place)
                    try:
                        copy_file(inner, target, child)
                    finally:
                        os.close(inner)
        os.fchmod(target, stat.S_IMODE(was.st_mode))
        os.utime(target, ns=(was.st_atime_ns, was.st_mtime_ns))
    finally:
        os.close(target)


def remove(folder: int, name: str) -> None:
    """`name` in `folder` removed: a link or file itself, a directory with all it holds,
    each folder opened by descriptor on the way (never through a link)."""
    try:
        os.unlink(name, dir_fd=folder)
        return
    except IsADirectoryError:
        pass
    except OSError as error:
        # Linux says EISDIR; others say EPERM for unlink of a directory.
        if error.errno != errno.EPERM:
            raise
    inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _OPEN, dir_fd=folder)
    try:
        with os.scandir(inner) as scan:
            names = [entry.name for entry in scan]
        for child in names:
            with suppress(FileNotFoundError):
                remove(inner, child)
    finally:
        os.close(inner)
    os.rmdir(name, dir_fd=folder)


def is_empty(place: Place) -> bool:
    """Whether the directory at `place` holds nothing."""
    descriptor = opened(place, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with os.scandir(descriptor) as scan:
            return next(scan, None) is None
    finally:
        os.close(descriptor)


@contextmanager
def temporary_beside(place: Place) -> Iterator[str]:
    """A free hidden name beside the place's, removed (whatever it became) unless the block
    renamed it away."""
    spare = spare_name(place.name)
    try:
        yield spare
    except BaseException:
        with suppress(FileNotFoundError):
            remove(place.folder, spare)
        raise
