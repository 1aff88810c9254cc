"""Copying and moving inside the fence, for resourceCopy and resourceMove.

Both ends are walked inside the fence (files.py says how) and worked on through what the walks
opened. A source is taken as it is (a link itself, not what it leads to). A copy is made beside
its target under a temporary name and renamed into place, so a copy refused halfway (a named
pipe inside a folder copied) leaves nothing; only the rename is done under the lock every
write shares. A move between two served folders on two file systems is a copy and a removal.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...backends.fence_walk import (
    Outside,
    Place,
    copy_file,
    copy_tree,
    opened,
    remove,
    temporary_beside,
    walk,
)
from ...protocol.errors import invalid_params
from .files import already_exists, answering, not_a_root, not_found, refuse_git, write_lock
from .served import Served, permission_denied


def copy_or_move(
    served: Served,
    source: Path,
    target: Path,
    uris: tuple[str, str],
    *,
    move: bool,
    fail: bool,
    admin: bool,
) -> None:
    """Copy or move `source` (a link itself, not what it leads to) to `target`; an existing
    target is replaced unless `fail`. A copy is made beside the target under a temporary name
    and renamed into place, so a copy refused halfway leaves nothing."""
    method = "resourceMove" if move else "resourceCopy"
    with answering(uris[0], method), walk(source, served.holds, follow=False) as src:
        if move:
            not_a_root(served, src, uris[0])
        if src.found is None:
            raise not_found(uris[0])
        with _target(served, target, uris[1], method) as dst:
            if not admin:
                refuse_git(src.real, uris[0])
                refuse_git(dst.real, uris[1])
            if dst.real == src.real or dst.real.is_relative_to(src.real):
                raise invalid_params(f"{uris[1]} lies inside {uris[0]}")
            if fail and dst.found is not None:
                raise already_exists(uris[1])
            if move:
                _move(src, dst, uris, fail=fail)
            else:
                _copy(src, dst, uris, fail=fail)


@contextmanager
def _target(served: Served, target: Path, uri: str, method: str) -> Iterator[Place]:
    """Where a copy or move lands, walked; -32008 naming it when its folder is not there."""
    try:
        place = walk(target, served.holds, follow=False)
    except Outside:
        raise permission_denied(uri) from None
    except (FileNotFoundError, NotADirectoryError):
        raise not_found(f"{uri} (its folder does not exist)") from None
    with place:
        not_a_root(served, place, uri)
        yield place


def _move(src: Place, dst: Place, uris: tuple[str, str], *, fail: bool) -> None:
    kind = src.found.st_mode if src.found is not None else 0
    _clear(dst, kind, uris[1], fail=fail)
    try:
        with write_lock:
            if fail and dst.lstat() is not None:
                raise already_exists(uris[1])
            os.rename(src.name, dst.name, src_dir_fd=src.folder, dst_dir_fd=dst.folder)
    except OSError as error:
        if error.errno == errno.EINVAL:
            raise invalid_params(f"{uris[1]} lies inside {uris[0]}") from None
        if error.errno != errno.EXDEV:
            raise
        # Two served folders on two file systems: copied across, then the source removed.
        _copy(src, dst, uris, fail=fail)
        remove(src.folder, src.name)


def _copy(src: Place, dst: Place, uris: tuple[str, str], *, fail: bool) -> None:
    kind = src.found.st_mode if src.found is not None else 0
    with temporary_beside(dst) as spare:
        if stat.S_ISLNK(kind):
            os.symlink(os.readlink(src.name, dir_fd=src.folder), spare, dir_fd=dst.folder)
        elif stat.S_ISDIR(kind):
            inner = opened(src, os.O_RDONLY | os.O_DIRECTORY)
            try:
                copy_tree(inner, dst.folder, spare, src.real)
            finally:
                os.close(inner)
        else:
            inner = opened(src)
            try:
                copy_file(inner, dst.folder, spare)
            finally:
                os.close(inner)
        _clear(dst, kind, uris[1], fail=fail)
        with write_lock:
            if fail and dst.lstat() is not None:
                raise already_exists(uris[1])
            os.rename(spare, dst.name, src_dir_fd=dst.folder, dst_dir_fd=dst.folder)


def _clear(dst: Place, kind: int, uri: str, *, fail: bool) -> None:
    """Make room at the target for what is coming, of mode `kind`: a rename replaces a file
    by a file at once, but no folder, and no file by a folder."""
    now = dst.lstat()
    if now is None:
        return
    if fail:
        raise already_exists(uri)
    if stat.S_ISDIR(now.st_mode) or stat.S_ISDIR(kind):
        remove(dst.folder, dst.name)
