"""The `file:` store: reading, writing and arranging files inside the fence (served.py).

Each operation is plain blocking file work, run off the event loop by the caller
(commands/resources.py) and answered in the protocol's shapes. A write lands whole or not at
all: it is written to a temporary file beside its target and renamed over it, under one lock,
so `ifMatch` (an etag from `resourceResolve`) is checked against what is really there when the
rename happens. An etag changes whenever a file is written: it is made of the file's inode,
size and modification time, and every write here makes a new inode.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ..clock import iso

_write_lock = threading.Lock()


def not_found(uri: str) -> ProtocolError:
    return ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {uri}")


def already_exists(uri: str) -> ProtocolError:
    return ProtocolError(ErrorCode.ALREADY_EXISTS, f"Resource already exists: {uri}")


def etag_of(stat: os.stat_result) -> str:
    return f"{stat.st_ino:x}-{stat.st_size:x}-{stat.st_mtime_ns:x}"


def content_type(path: Path) -> str | None:
    return mimetypes.guess_type(path.name)[0]


def read(path: Path, uri: str, encoding: str | None, limit: int) -> dict[str, Any]:
    """A file's content: as utf-8 text where asked (or where none was asked and it is text),
    else base64. A file over `limit` bytes is refused, never read whole."""
    try:
        if path.is_dir():
            raise invalid_params(f"resourceRead: {uri} is a directory; list it instead")
        with path.open("rb") as file:
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
    except FileNotFoundError:
        raise not_found(uri) from None
    except PermissionError:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, f"Permission denied: {uri}") from None
    return encoded(data, path, encoding)


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
    path: Path,
    uri: str,
    data: bytes,
    *,
    create_only: bool,
    mode: str,
    position: int,
    if_match: str | None,
) -> None:
    """Place `data` in the file as `mode` says, atomically, or refuse with nothing changed."""
    if not path.parent.is_dir():
        raise not_found(f"{uri} (its folder does not exist)")
    with _write_lock:
        try:
            stat: os.stat_result | None = path.stat()
        except FileNotFoundError:
            stat = None
        if stat is not None and path.is_dir():
            raise already_exists(f"{uri} (a directory)")
        if create_only and stat is not None:
            raise already_exists(uri)
        if if_match is not None and (stat is None or etag_of(stat) != if_match):
            raise ProtocolError(
                ErrorCode.CONFLICT, f"{uri} changed since its etag {if_match} was read"
            )
        old = path.read_bytes() if stat is not None and (mode != "truncate" or position) else b""
        if position > len(old):
            raise invalid_params(f"resourceWrite: position {position} is past the end of {uri}")
        if mode == "append":
            content = old[: len(old) - position] + data + old[len(old) - position :]
        elif mode == "insert":
            content = old[:position] + data + old[position:]
        else:
            content = old[:position] + data
        _replace(path, content, stat)


def _replace(path: Path, content: bytes, stat: os.stat_result | None) -> None:
    fd, spare = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".ahpd")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(spare, stat.st_mode & 0o7777 if stat is not None else 0o644)
        os.replace(spare, path)
    except BaseException:
        Path(spare).unlink(missing_ok=True)
        raise


def listing(path: Path, uri: str, shown: Any) -> dict[str, Any]:
    """The entries directly in a directory (those `shown` admits), by name."""
    try:
        names = sorted(os.listdir(path))
    except FileNotFoundError:
        raise not_found(uri) from None
    except NotADirectoryError:
        raise invalid_params(f"resourceList: {uri} is not a directory") from None
    entries = []
    for name in names:
        child = path / name
        if not shown(child):
            continue
        entries.append({"name": name, "type": "directory" if child.is_dir() else "file"})
    return {"entries": entries}


def resolve(path: Path, uri: str, canonical: str) -> dict[str, Any]:
    """What a URI is: its type, size, times and etag; `canonical` its URI after links."""
    try:
        stat = path.lstat()
    except FileNotFoundError:
        raise not_found(uri) from None
    if path.is_symlink():
        kind = "symlink"
    elif path.is_dir():
        kind = "directory"
    else:
        kind = "file"
    result: dict[str, Any] = {
        "uri": canonical,
        "type": kind,
        "mtime": iso(stat.st_mtime_ns // 1_000_000),
        "ctime": iso(stat.st_ctime_ns // 1_000_000),
    }
    if kind != "directory":
        result["size"] = stat.st_size
        result["etag"] = etag_of(stat)
    if kind == "file" and (guess := content_type(path)) is not None:
        result["contentType"] = guess
    return result


def mkdir(path: Path, uri: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise already_exists(f"{uri} (not a directory)") from None


def copy_or_move(
    source: Path, target: Path, uris: tuple[str, str], *, move: bool, fail: bool
) -> None:
    """Copy or move `source` to `target`; an existing target is replaced unless `fail`."""
    if not source.exists() and not source.is_symlink():
        raise not_found(uris[0])
    if not target.parent.is_dir():
        raise not_found(f"{uris[1]} (its folder does not exist)")
    if target == source or target.is_relative_to(source):
        raise invalid_params(f"{uris[1]} lies inside {uris[0]}")
    with _write_lock:
        if target.exists():
            if fail:
                raise already_exists(uris[1])
            _remove(target)
        if move:
            os.replace(source, target)
        elif source.is_dir() and not source.is_symlink():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)


def delete(path: Path, uri: str, *, recursive: bool) -> None:
    if not path.exists() and not path.is_symlink():
        raise not_found(uri)
    if path.is_dir() and not path.is_symlink() and not recursive and any(path.iterdir()):
        raise invalid_params(f"resourceDelete: {uri} is a directory that is not empty")
    with _write_lock:
        _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
