"""The `file:` store: reading, writing and arranging files inside the fence (served.py);
copying and moving are copies.py's.

Each operation is plain blocking file work, run off the event loop by the caller
(commands/resources.py) and answered in the protocol's shapes. A path is walked name by name on
descriptors (hosts/backends/fence_walk.py) and the operation works on the descriptors that walk
opened, so a symlink swapped in mid-operation is refused, never followed out; only regular
files and directories are opened, without waiting, so a named pipe freezes nobody.

A write lands whole or not at all: it is written to a temporary file beside its target and
renamed over it. The old content a write keeps (append, insert, a truncate at a position) is
copied a chunk at a time, holes skipped, never held whole. The copy is made outside the lock
every write shares; under it the target is checked again (`ifMatch`, an etag from
`resourceResolve`, against what is really there) and the rename done, and a file changed while
it was copied is copied again. An etag changes whenever a file is written: it is made of the
file's inode, size and modification time, and every write here makes a new inode.

A file vanishing or changing kind mid-operation is answered in the protocol's codes (-32008
`Resource not found: <uri>` ...), never as an internal error. Writing, copying, moving, making
or deleting inside a `.git` folder (any name of the real path, in any case) is for a host-wide
admin (issue 22: a member set core.fsmonitor through resourceWrite).
"""

from __future__ import annotations

import base64
import binascii
import errno
import logging
import mimetypes
import os
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...backends.fence_walk import (
    NotRegular,
    Outside,
    Place,
    copy_span,
    entries,
    is_empty,
    kind_of,
    opened,
    remove,
    temporary_beside,
    walk,
    write_all,
)
from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ..clock import iso
from .served import Served, permission_denied

log = logging.getLogger("ahpd.engine")

#: Held only to check a target and rename over it: the copying is done before, unheld.
write_lock = threading.Lock()
#: How many times a write copies a file that changed while it was copied, before it says so.
WRITE_TRIES = 3


def not_found(uri: str) -> ProtocolError:
    return ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {uri}")


def already_exists(uri: str) -> ProtocolError:
    return ProtocolError(ErrorCode.ALREADY_EXISTS, f"Resource already exists: {uri}")


def inside_git(uri: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.PERMISSION_DENIED,
        f"Writing inside a .git folder is for a host-wide admin: {uri}",
    )


def refuse_git(real: Path, uri: str) -> None:
    """-32009 when a real path lies inside a `.git` folder: git runs what its config and hooks
    say, so whoever writes there runs commands as whoever uses the repository next."""
    if any(part.lower() == ".git" for part in real.parts):
        raise inside_git(uri)


def etag_of(stat_: os.stat_result) -> str:
    return f"{stat_.st_ino:x}-{stat_.st_size:x}-{stat_.st_mtime_ns:x}"


def content_type(path: Path) -> str | None:
    return mimetypes.guess_type(path.name)[0]


@contextmanager
def answering(uri: str, method: str) -> Iterator[None]:
    """What the file system says, as the protocol says it: a file gone or changed since it
    was walked is not found, a path leading out is permission denied (the reference's words)."""
    try:
        yield
    except Outside:
        raise permission_denied(uri) from None
    except NotRegular as error:
        raise invalid_params(
            f"{method}: {error.real.as_uri()} is {error.kind}; only regular files and "
            "directories are read or written here"
        ) from None
    except (FileNotFoundError, NotADirectoryError):
        raise not_found(uri) from None
    except PermissionError:
        raise permission_denied(uri) from None
    except FileExistsError:
        raise already_exists(uri) from None
    except IsADirectoryError:
        raise invalid_params(f"{method}: {uri} is a directory") from None
    except RecursionError:
        raise invalid_params(f"{method}: {uri} is nested too deep") from None
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ESTALE):
            # A name made a link (or gone stale) between the walk and the open: not it.
            raise not_found(uri) from None
        if error.errno == errno.ENOTEMPTY:
            raise invalid_params(f"{method}: {uri} is a directory that is not empty") from None
        if error.errno == errno.ENAMETOOLONG:
            raise invalid_params(f"{method}: {uri} names a path too long") from None
        log.warning("%s of %s failed: %s", method, uri, error)
        raise ProtocolError(
            ErrorCode.INTERNAL_ERROR, f"{method}: {uri}: {error.strerror or error}"
        ) from None


def read(served: Served, path: Path, uri: str, encoding: str | None, limit: int) -> dict[str, Any]:
    """A file's content: as utf-8 text where asked (or where none was asked and it is text),
    else base64. A file over `limit` bytes is refused, never read whole."""
    with answering(uri, "resourceRead"), walk(path, served.holds) as place:
        if place.found is not None and stat.S_ISDIR(place.found.st_mode):
            raise invalid_params(f"resourceRead: {uri} is a directory; list it instead")
        with os.fdopen(opened(place), "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if limit and size > limit:
                raise invalid_params(
                    f"resourceRead: {uri} is {size} bytes, over this host's read limit of "
                    f"{limit} (AHPD_RESOURCE_READ_LIMIT_BYTES)"
                )
            # One byte past the limit at most: a file that grew since is refused, not held.
            data = file.read(limit + 1) if limit else file.read()
        if limit and len(data) > limit:
            raise invalid_params(f"resourceRead: {uri} grew past the read limit")
    return encoded(data, place.real, encoding)


def encoded(data: bytes, path: Path, encoding: str | None) -> dict[str, Any]:
    """A resourceRead result: utf-8 where asked (or where none was and it is text), else
    base64, with the content type the path's name suggests."""
    result: dict[str, Any]
    if encoding != "base64":
        try:
            result = {"data": data.decode("utf-8"), "encoding": "utf-8"}
        except UnicodeDecodeError:
            result = {"data": base64.b64encode(data).decode(), "encoding": "base64"}
    else:
        result = {"data": base64.b64encode(data).decode(), "encoding": "base64"}
    kind = content_type(path)
    if kind is not None:
        result["contentType"] = kind
    return result


def decoded(data: str, encoding: str) -> bytes:
    if encoding == "utf-8":
        return data.encode("utf-8", errors="surrogatepass")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise invalid_params("resourceWrite: data is not valid base64") from None


def write(
    served: Served,
    path: Path,
    uri: str,
    data: bytes,
    *,
    create_only: bool,
    mode: str,
    position: int,
    if_match: str | None,
    admin: bool,
) -> None:
    """Place `data` in the file as `mode` says, atomically, or refuse with nothing changed."""
    with answering(uri, "resourceWrite"):
        try:
            place = walk(path, served.holds)
        except (FileNotFoundError, NotADirectoryError):
            raise not_found(f"{uri} (its folder does not exist)") from None
        with place:
            if not admin:
                refuse_git(place.real, uri)
            for _ in range(WRITE_TRIES):
                if _written(place, uri, data, create_only, mode, position, if_match):
                    return
            raise ProtocolError(
                ErrorCode.CONFLICT, f"{uri} kept changing while it was being written"
            )


def _written(
    place: Place,
    uri: str,
    data: bytes,
    create_only: bool,
    mode: str,
    position: int,
    if_match: str | None,
) -> bool:
    """One try at a write: the new file made beside the target from what is there now, then
    renamed over it if the target is still what it was copied from. False to try again."""
    was = place.found = place.lstat()
    if was is not None:
        if stat.S_ISDIR(was.st_mode):
            raise already_exists(f"{uri} (a directory)")
        if stat.S_ISLNK(was.st_mode):
            raise FileNotFoundError(uri)  # made a link since the walk, which resolved links
        if not stat.S_ISREG(was.st_mode):
            raise NotRegular(kind_of(was.st_mode), place.real)
    if create_only and was is not None:
        raise already_exists(uri)
    if if_match is not None and (was is None or etag_of(was) != if_match):
        raise ProtocolError(ErrorCode.CONFLICT, f"{uri} changed since its etag {if_match} was read")
    size = was.st_size if was is not None else 0
    if position > size:
        raise invalid_params(f"resourceWrite: position {position} is past the end of {uri}")
    at = size - position if mode == "append" else position
    keeps_tail = mode in ("append", "insert")
    source = opened(place) if was is not None and (at or keeps_tail) else None

    def fill(target: int) -> int:
        if source is not None:
            copy_span(source, target, 0, at, 0)
        write_all(target, data, at)
        if source is not None and keeps_tail:
            copy_span(source, target, at, size, at + len(data))
            return size + len(data)
        return at + len(data)

    depends = source is not None or create_only or if_match is not None
    try:
        with temporary_beside(place) as spare:
            _stage(place, spare, fill, stat.S_IMODE(was.st_mode) if was is not None else 0o644)
            with write_lock:
                now = place.lstat()
                if depends and not _same(now, was):
                    raise _Changed
                os.replace(spare, place.name, src_dir_fd=place.folder, dst_dir_fd=place.folder)
    except _Changed:
        if if_match is not None:
            raise ProtocolError(
                ErrorCode.CONFLICT, f"{uri} changed since its etag {if_match} was read"
            ) from None
        if create_only:
            raise already_exists(uri) from None
        return False
    except IsADirectoryError:
        raise already_exists(f"{uri} (a directory)") from None
    finally:
        if source is not None:
            os.close(source)
    return True


class _Changed(Exception):
    """The target changed between the copy and the rename."""


def _same(now: os.stat_result | None, was: os.stat_result | None) -> bool:
    if now is None or was is None:
        return now is None and was is None
    return etag_of(now) == etag_of(was) and now.st_dev == was.st_dev


def _stage(place: Place, spare: str, fill: Callable[[int], int], mode: int) -> None:
    """The temporary file `spare` beside the target, filled, flushed to disk and given the
    target's permissions."""
    target = os.open(
        spare,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=place.folder,
    )
    try:
        os.ftruncate(target, fill(target))
        os.fsync(target)
        os.fchmod(target, mode)
    finally:
        os.close(target)


def listing(served: Served, path: Path, uri: str) -> dict[str, Any]:
    """The entries directly in a directory, by name; what the fence keeps out (a link
    leading out, the data directory) is not listed."""
    with answering(uri, "resourceList"), walk(path, served.holds) as place:
        if place.found is not None and not stat.S_ISDIR(place.found.st_mode):
            raise invalid_params(f"resourceList: {uri} is not a directory")
        found = entries(place, served.holds)
    return {
        "entries": [
            {"name": name, "type": "directory" if is_dir else "file"} for name, is_dir in found
        ]
    }


def resolve(served: Served, path: Path, uri: str, *, follow: bool) -> dict[str, Any]:
    """What a URI is: its type, size, times and etag, and its URI after links (with
    `follow`; else the URI asked, and a link is reported as one)."""
    with answering(uri, "resourceResolve"), walk(path, served.holds, follow=follow) as place:
        was = place.found
        if was is None:
            raise not_found(uri)
    if stat.S_ISLNK(was.st_mode):
        kind = "symlink"
    elif stat.S_ISDIR(was.st_mode):
        kind = "directory"
    else:
        kind = "file"
    result: dict[str, Any] = {
        "uri": place.real.as_uri() if follow else uri,
        "type": kind,
        "mtime": iso(was.st_mtime_ns // 1_000_000),
        "ctime": iso(was.st_ctime_ns // 1_000_000),
    }
    if kind != "directory":
        result["size"] = was.st_size
        result["etag"] = etag_of(was)
    if kind == "file" and (guess := content_type(place.real)) is not None:
        result["contentType"] = guess
    return result


def mkdir(served: Served, path: Path, uri: str, *, admin: bool) -> None:
    """mkdir -p: every missing folder made, inside the fence; -32010 over a file."""

    def making(real: Path) -> None:
        if not admin:
            refuse_git(real, uri)

    with answering(uri, "resourceMkdir"):
        try:
            place = walk(path, served.holds, making=making)
        except NotADirectoryError:
            raise already_exists(f"{uri} (not a directory)") from None
        with place:
            making(place.real)
            was = place.found
            if was is None:
                try:
                    os.mkdir(place.name, 0o777, dir_fd=place.folder)
                    return
                except FileExistsError:
                    was = place.lstat()
            if was is None or not stat.S_ISDIR(was.st_mode):
                raise already_exists(f"{uri} (not a directory)")


def delete(served: Served, path: Path, uri: str, *, recursive: bool, admin: bool) -> None:
    """A file, a link itself, or a folder (with what it holds when `recursive`)."""
    with answering(uri, "resourceDelete"), walk(path, served.holds, follow=False) as place:
        not_a_root(served, place, uri)
        if not admin:
            refuse_git(place.real, uri)
        was = place.found
        if was is None:
            raise not_found(uri)
        if stat.S_ISDIR(was.st_mode) and not recursive:
            if not is_empty(place):
                raise invalid_params(f"resourceDelete: {uri} is a directory that is not empty")
            os.rmdir(place.name, dir_fd=place.folder)
            return
        remove(place.folder, place.name)


def not_a_root(served: Served, place: Place, uri: str) -> None:
    """-32009 for a served folder itself (which nothing deletes, moves or overwrites), or a
    link that leads to one."""
    if served.is_root(place.real):
        raise permission_denied(uri)
    if place.found is not None and stat.S_ISLNK(place.found.st_mode):
        try:
            with walk(place.real, served.holds) as target:
                if served.is_root(target.real):
                    raise permission_denied(uri)
        except (Outside, OSError):
            return
